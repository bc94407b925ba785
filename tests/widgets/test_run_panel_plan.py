"""RunPanel's Plan section: the planner's prediction for the form's values, blockers shown before Submit."""

from __future__ import annotations

import html

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan.report import plan_html
from hyperpod_rl.run_plan import plan_run
from hyperpod_rl.widgets import RunPanel


def test_plan_button_shows_the_plan_of_the_form_values() -> None:
    config = RunConfig.from_preset("single-node-8gpu")
    panel = RunPanel(config)
    result = panel.plan()
    assert result == plan_run(config, gpu="H200") and panel.last_plan == result
    assert panel.plan_view.value == plan_html(result)
    # edit the form and the GPU: the plan follows the form, not the initial config
    panel.form.widget("trainer.micro_batch_size").value = 4
    panel.plan_gpu.value = "H100"
    panel.plan_button.click()
    edited = RunConfig.from_preset("single-node-8gpu", **{"trainer.micro_batch_size": 4})
    assert panel.errors == []
    assert panel.last_plan == plan_run(edited, gpu="H100")
    assert panel.last_plan.input.micro_train_batch_size_per_gpu == 4
    assert f">{panel.last_plan.memory.peak_gib:.2f}<" in panel.plan_view.value


def test_blockers_show_in_the_panel_before_submit(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))  # no local cluster: submit stops at the client
    panel = RunPanel(RunConfig.from_preset("single-gpu", **{"trainer.micro_batch_size": 64}))
    panel.plan_gpu.value = "H100"
    panel.submit_button.click()
    assert panel.handle is None and "no cluster" in panel.errors[-1]
    plan = panel.last_plan
    assert plan is not None and not plan.fits
    assert "hprl-blocker" in panel.plan_view.value and html.escape(plan.blockers[0]) in panel.plan_view.value


def test_invalid_form_is_reported_and_not_planned() -> None:
    panel = RunPanel(RunConfig.from_preset("single-gpu"))
    panel.form.widget("lora.rank").value = 0
    with pytest.raises(ConfigError, match="lora.rank"):
        panel.plan()
    panel.plan_button.click()
    assert panel.last_plan is None and panel.plan_view.value == ""
    assert "lora.rank" in panel.errors[-1] and "lora.rank" in panel.validation.value


def test_a_preset_picks_its_own_gpu_for_the_plan() -> None:
    """The CLI's reported defect, in the panel: hyperpod-6gpu (RTX PRO 6000 nodes, ml.g7e.12xlarge) must not be planned
    on an H200 by default."""
    panel = RunPanel(RunConfig.from_preset("single-node-8gpu"))
    panel.preset.value = "hyperpod-6gpu"
    assert panel.plan_gpu.value == "RTXPRO6000" and "RTXPRO6000" in panel.plan_gpu.options
    result = panel.plan()
    assert result.input.gpu_spec().name == "NVIDIA RTX PRO 6000 Blackwell Server Edition" and result.fits
    panel.plan_gpu.value = "A10G"  # the picker still overrides the preset's GPU: the same run does not fit an A10G
    assert panel.plan().input.gpu == "A10G" and not panel.last_plan.fits


def test_an_sft_stage_is_not_planned_and_says_why() -> None:
    panel = RunPanel(RunConfig.from_preset("single-node-8gpu"))
    panel.preset.value = "hyperpod-6gpu-sft"
    with pytest.raises(ConfigError, match="stage='sft': the planner sizes GRPO runs"):
        panel.plan()
