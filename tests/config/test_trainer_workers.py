"""``trainer.workers``: the reference backend's data-parallel processes, validated when the config is built."""

from __future__ import annotations

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.jobs import entrypoint_gpus

DATA = {"train_path": "/d/train.parquet", "heldout_path": "/d/heldout.parquet"}


def _build(trainer: dict, prompts_per_step: int = 8, **top) -> RunConfig:
    return RunConfig.build({"run_id": "dp-run", "data": {**DATA, "prompts_per_step": prompts_per_step}, "trainer": trainer, **top})


@pytest.mark.parametrize(
    ("trainer", "mazes", "message"),
    [
        (
            {"workers": 3},
            8,
            r"data.prompts_per_step=8 does not split into whole groups over trainer.workers=3 .*set data.prompts_per_step to a "
            r"multiple of 3 \(e.g. 9\) or trainer.workers to a divisor of 8 \(e.g. 2\)",
        ),
        (
            {"workers": 4},
            2,
            r"data.prompts_per_step=2 does not split into whole groups over trainer.workers=4 .*multiple of 4 \(e.g. 4\) or "
            r"trainer.workers to a divisor of 2 \(e.g. 2\)",
        ),
        ({"workers": 0}, 8, r"trainer.workers: must be >= 1 \(got 0\)"),
    ],
    ids=["not-a-multiple", "more-workers-than-mazes", "zero"],
)
def test_bad_worker_counts_say_what_to_set(trainer, mazes, message):
    with pytest.raises(ConfigError, match=message):
        _build(trainer, mazes)


def test_skyrl_runs_refuse_workers():
    with pytest.raises(ConfigError, match=r"trainer.workers=2 sets the reference backend's .* set trainer.workers=1"):
        RunConfig.from_preset("single-gpu", run_id="skyrl-dp", trainer={"workers": 2})


def test_workers_split_evenly_and_take_the_gpus_themselves():
    one, two = _build({"device": "cuda"}), _build({"device": "cuda", "workers": 2})
    assert two.trainer.workers == 2 and one.trainer.workers == 1
    assert (entrypoint_gpus(one), entrypoint_gpus(two)) == (1, 0)  # the TorchTrainer workers reserve the GPUs
    assert one.config_hash() != two.config_hash()  # a checkpoint of one cannot resume the other
