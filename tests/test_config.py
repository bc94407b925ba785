"""RunConfig validation: every bad field in one error, each naming the field and the fix."""

from __future__ import annotations

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError

BASE = {"run_id": "ok-run", "data": {"train_path": "t.parquet", "heldout_path": "h.parquet"}}


def _with(**sections):
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()}
    for key, value in sections.items():
        data[key] = value
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_with(grpo={"group_size": 1}), r"grpo.group_size: group_size must be >= 2"),
        (_with(grpo={"group_size": 0}), r"group_size must be >= 2"),
        (_with(grpo={"lr": -1}), r"grpo.lr"),
        (_with(run_id="Bad ID"), r"run_id"),
        (_with(model={"path": "/does/not/exist"}), r"model.path='/does/not/exist' is not a directory"),
        (_with(model={"tiny_hidden_size": 100}), r"multiple of 32"),
        (_with(lora={"rank": 0}), r"lora.rank"),
        (_with(rollout={"max_turns": 0}), r"rollout.max_turns"),
        (_with(rollout={"action_constraint": "words"}), r"rollout.action_constraint"),
        (_with(trainer={"steps": 0}), r"trainer.steps"),
        (_with(extra_field=1), r"extra_field"),
    ],
)
def test_bad_configs_name_the_field(data, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig.build(data)


def test_all_errors_are_reported_at_once():
    with pytest.raises(ConfigError) as info:
        RunConfig.build(_with(grpo={"group_size": 1}, lora={"rank": 0}, trainer={"steps": 0}))
    text = str(info.value)
    assert "grpo.group_size" in text and "lora.rank" in text and "trainer.steps" in text


def test_config_hash_ignores_run_id_and_round_trips():
    a = RunConfig.build(BASE)
    b = RunConfig.build({**BASE, "run_id": "other-run"})
    assert a.config_hash() == b.config_hash()
    assert RunConfig.model_validate_json(a.model_dump_json()) == a
    assert RunConfig.build(_with(grpo={"lr": 1e-4})).config_hash() != a.config_hash()
