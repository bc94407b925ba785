"""The quickstart's SFT warm start configs and ``job submit --from-run`` (issue 29 items 2-3), without a cluster."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, sft_run_id


def test_sft_and_grpo_configs_of_the_quickstart(tiny_setup, tmp_path):
    opts = QuickstartOptions.build(**{**tiny_setup["opts"].model_dump(), "sft_steps": 7, "sft_lr": 1e-3, "sft_rows_per_step": 5})
    args = {"model_path": tiny_setup["model_dir"], "revision": tiny_setup["revision"], "data": tiny_setup["data"]}
    sft = make_run_config(opts, run_id=sft_run_id("qsx"), stage="sft", **args)
    assert (sft.run_id, sft.stage, sft.trainer.steps, sft.sft.lr, sft.sft.rows_per_step) == ("qsx-sft", "sft", 7, 1e-3, 5)
    grpo = make_run_config(opts, run_id="qsx", **args)
    assert grpo.stage == "grpo" and grpo.model.init_adapter is None and grpo.trainer.steps == opts.steps
    # a GRPO config without the SFT fields hashes as before they existed
    legacy = grpo.model_dump(mode="json", exclude={"stage": True, "sft": True, "model": {"init_adapter"}})
    assert "stage" not in legacy and grpo.config_hash() == type(grpo).build(legacy).config_hash()
    assert sft.config_hash() != make_run_config(opts, run_id="qsx-sft", **args).config_hash()


def test_sft_run_ids_fit_the_run_id_rule():
    from hyperpod_rl.runs import check_run_id

    check_run_id(sft_run_id("a" * 63))
    assert sft_run_id("quickstart-20261201-101010") == "quickstart-20261201-101010-sft"


def test_from_run_needs_a_finished_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERPOD_RL_STORAGE", str(tmp_path))
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps({"run_id": "grpo-x", "data": {"train_path": "a", "heldout_path": "b"}}))
    result = CliRunner().invoke(app, ["job", "submit", str(cfg), "--from-run", "sft-x"])
    assert result.exit_code == 2
    assert "--from-run sft-x" in result.output and "holds no finished adapter" in result.output and "job status sft-x" in result.output


def test_the_tiny_models_size_is_an_option_and_a_bad_size_says_what_to_fix(tiny_setup, tmp_path):
    import pytest

    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.quickstart import prepare_base_model
    from hyperpod_rl.tasks.maze import read_rows

    with pytest.raises(ConfigError, match=r"tiny_hidden_size(.|\n)*multiple of 32"):
        QuickstartOptions.build(tiny_hidden_size=100)
    opts = QuickstartOptions.build(**{**tiny_setup["opts"].model_dump(), "tiny_hidden_size": 64, "tiny_layers": 1})
    model_dir, revision = prepare_base_model(opts, tmp_path, read_rows(tiny_setup["data"].train))
    text = json.loads((model_dir / "config.json").read_text())["text_config"]
    assert (text["hidden_size"], text["num_hidden_layers"]) == (64, 1)
    assert revision != tiny_setup["revision"]  # the default sizes (128, 2) are another base model
    assert "--tiny-hidden-size" in CliRunner().invoke(app, ["quickstart", "--help"], terminal_width=200).output
