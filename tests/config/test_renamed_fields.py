"""Generic names (``data.prompts_per_step``, ``trainer.eval_rows``, ``train_rows`` ...) with the maze words as deprecated aliases.

``data/run_config_before_rename.yaml`` is a full run config written by the code before the rename
(maze words); its config hash, recorded then, is ``eded7f508bb4d0e4``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.quickstart import QuickstartOptions

BEFORE = Path(__file__).parent / "data" / "run_config_before_rename.yaml"
DATA = {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet"}


def test_a_config_written_before_the_rename_loads_with_a_warning_and_keeps_its_hash() -> None:
    with pytest.warns(FutureWarning) as caught:
        old = RunConfig.from_file(BEFORE)
    messages = {str(w.message) for w in caught}
    assert "data.mazes_per_step is deprecated: call it data.prompts_per_step" in messages
    assert "trainer.eval_mazes is deprecated: call it trainer.eval_rows" in messages
    assert (old.data.prompts_per_step, old.trainer.eval_rows) == (4, 50)
    assert old.config_hash() == "eded7f508bb4d0e4"  # the hash the pre-rename code computed for this file
    new = RunConfig.build(old.model_dump(mode="json"))  # the same config under the new names: no warning
    assert new == old and new.config_hash() == old.config_hash()
    assert "mazes_per_step" not in new.model_dump()["data"]


def test_a_non_default_task_config_keeps_its_hash() -> None:
    cfg = RunConfig.build(
        {"run_id": "ui-run", "task": {"name": "ui_nav"}, "rollout": {"action_constraint": "none"}, "data": {**DATA, "prompts_per_step": 4}}
    )
    assert cfg.config_hash() == "f5bb4c7699e7b3f4"  # recorded before the rename (data.mazes_per_step=4)


def test_old_and_new_name_together_is_one_clear_error() -> None:
    with pytest.raises(
        ConfigError, match=r"data.mazes_per_step is the deprecated name of data.prompts_per_step: give only data.prompts_per_step"
    ):
        RunConfig.build({"run_id": "both-names", "data": {**DATA, "mazes_per_step": 4, "prompts_per_step": 4}})


def test_overrides_take_the_old_name_too() -> None:
    with pytest.warns(FutureWarning) as caught:
        cfg = RunConfig.from_file(BEFORE, **{"data.mazes_per_step": 8})
    assert cfg.data.prompts_per_step == 8
    assert any("call it data.prompts_per_step" in str(w.message) for w in caught)


def test_quickstart_options_accept_the_maze_words() -> None:
    with pytest.warns(FutureWarning) as caught:
        old = QuickstartOptions.build(train_mazes=64, heldout_mazes=16, mazes_per_step=2)
    assert {str(w.message) for w in caught} == {
        "train_mazes is deprecated: call it train_rows",
        "heldout_mazes is deprecated: call it heldout_rows",
        "mazes_per_step is deprecated: call it prompts_per_step",
    }
    assert old == QuickstartOptions.build(train_rows=64, heldout_rows=16, prompts_per_step=2)


def test_the_cli_takes_the_old_flags_and_marks_them_deprecated() -> None:
    from hyperpod_rl.cli import app

    command = typer.main.get_command(app).commands["quickstart"]  # type: ignore[attr-defined]
    by_name = {p.name: p for p in command.params}
    for new, old in (("train_rows", "--train-mazes"), ("heldout_rows", "--heldout-mazes"), ("prompts_per_step", "--mazes-per-step")):
        assert old in by_name[new].opts, by_name[new].opts
        assert f"{old}: deprecated name" in by_name[new].help
