"""RunConfig.task: the task is named, its options validated against the task's model, the maze hash kept."""

from __future__ import annotations

import pytest

from hyperpod_rl.config.run import ADDED_FIELDS, RunConfig
from hyperpod_rl.config.skyrl import to_skyrl_overrides
from hyperpod_rl.errors import ConfigError

BASE = {"run_id": "task-cfg", "data": {"train_path": "/d/train.parquet", "heldout_path": "/d/heldout.parquet"}}


def test_default_task_is_the_maze_and_is_left_out_of_the_hash() -> None:
    cfg = RunConfig.build(BASE)
    assert (cfg.task.name, cfg.task.options, cfg.task.is_default) == ("maze", {}, True)
    # the fields of the SFT stage (issue 29) at their defaults are left out too: a GRPO config hashes as before they existed
    # (and so are the other fields added since, ADDED_FIELDS: model.init_adapter, rollout.engine, grpo.is_*)
    payload = cfg.model_dump(mode="json", exclude={"run_id": True, "task": True, "stage": True, "sft": True})
    for section, name in ADDED_FIELDS:
        if section in payload:  # sft: the whole section is left out of a GRPO config's payload above
            del payload[section][name]
    # renamed fields are hashed under their first names (config_hash), so hashes survive the rename
    payload["data"]["mazes_per_step"] = payload["data"].pop("prompts_per_step")
    payload["trainer"]["eval_mazes"] = payload["trainer"].pop("eval_rows")
    import hashlib
    import json

    assert cfg.config_hash() == hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    other = RunConfig.build({**BASE, "task": {"name": "maze", "options": {"braid": 0.1}}})
    shapes = RunConfig.build({**BASE, "task": {"name": "shapes"}})
    assert len({cfg.config_hash(), other.config_hash(), shapes.config_hash()}) == 3


def test_unknown_task_and_bad_options_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"task\.name: unknown task 'nope'; registered tasks: doc_read, maze"):
        RunConfig.build({**BASE, "task": {"name": "nope"}})
    with pytest.raises(ConfigError, match=r"(?s)task\.options\.counts: unknown split.*task\.options\.braid: must be <"):
        RunConfig.build({**BASE, "task": {"name": "maze", "options": {"counts": {"x": 1}, "braid": 3}}})
    with pytest.raises(ConfigError, match=r"task\.options\.fill: must be > 0"):
        RunConfig.build({**BASE, "task": {"name": "shapes", "options": {"fill": 0}}})


def test_options_resolve_to_the_task_model() -> None:
    cfg = RunConfig.build({**BASE, "task": {"name": "shapes", "options": {"grid_sizes": [5]}}})
    opts = cfg.task.resolved_options()
    assert type(opts).__name__ == "ShapesOptions" and opts.grid_sizes == (5,) and opts.fill == 0.6


def test_skyrl_env_class_is_the_tasks() -> None:
    data = {**BASE, "backend": "skyrl", "model": {"path": "Qwen/Qwen3-VL-8B-Instruct"}, "rollout": {"action_constraint": "none"}}
    maze = to_skyrl_overrides(RunConfig.build(data))
    shapes = to_skyrl_overrides(RunConfig.build({**data, "task": {"name": "shapes"}}))
    assert (maze["environment.env_class"], shapes["environment.env_class"]) == ("hyperpod_rl.maze", "hprl_shapes.shapes")


def test_a_task_name_alone_is_the_task_with_its_default_options() -> None:
    """``task: maze`` in a run YAML was refused ("give a mapping of TaskConfig fields"): a name alone is the task."""
    for name in ("maze", "shapes"):
        short, full = RunConfig.build({**BASE, "task": name}), RunConfig.build({**BASE, "task": {"name": name}})
        assert short == full and short.config_hash() == full.config_hash() and short.task.options == {}
    assert RunConfig.build({**BASE, "task": "maze"}).config_hash() == RunConfig.build(BASE).config_hash()
    with pytest.raises(ConfigError, match=r"task\.name: unknown task 'mazes'"):
        RunConfig.build({**BASE, "task": "mazes"})
