"""The planner applied to run configs: presets fit, an oversized micro batch is flagged."""

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.run_plan import fit_warnings, plan_run

DATA = {"train_path": "t.parquet", "heldout_path": "h.parquet"}


@pytest.mark.parametrize("name", RunConfig.presets())
def test_presets_fit_an_h200(name):
    config = RunConfig.from_preset(name, run_id="plan-check", data=DATA)
    result = plan_run(config, gpu="H200")
    assert result.fits, result.verdicts
    assert fit_warnings(config) == []


def test_oversized_micro_batch_gets_a_planner_warning():
    data = {**DATA, "mazes_per_step": 64}
    config = RunConfig.from_preset(
        "single-gpu", run_id="plan-check", data=data, **{"trainer.micro_batch_size": 512, "trainer.mini_batch_size": 64}
    )
    warnings = fit_warnings(config)
    assert warnings and any("micro_train_batch_size_per_gpu=512" in w for w in warnings), warnings


def test_reference_runs_are_not_planned():
    config = RunConfig.build({"run_id": "plan-check", "data": DATA})
    assert fit_warnings(config) == []
