"""The old import path ``hyperpod_rl.maze`` is a warning alias of ``hyperpod_rl.tasks.maze`` for one release."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_PROBE = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import hyperpod_rl.maze as old
    import hyperpod_rl.maze.task as old_task
    from hyperpod_rl.maze import Maze, render
    from hyperpod_rl.maze.dataset import DatasetSpec
    from hyperpod_rl.maze.generate import generate_maze
import hyperpod_rl.tasks.maze as new
import hyperpod_rl.tasks.maze.task as new_task
from hyperpod_rl.tasks.maze.dataset import DatasetSpec as NewSpec
from hyperpod_rl.tasks.maze.generate import generate_maze as new_generate
print(json.dumps({
    "warnings": [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)],
    "same": [old_task is new_task, Maze is new.Maze, render is new.render, DatasetSpec is NewSpec,
             generate_maze is new_generate, old.read_rows is new.read_rows, old.task is new_task],
    "spec": new_task.__spec__.name,
    "all": old.__all__ == new.__all__,
}))
"""


def test_old_path_warns_and_gives_the_same_objects() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""}
    ).stdout
    got = json.loads(out)
    assert got["same"] == [True] * 7
    assert got["all"] is True
    assert got["spec"] == "hyperpod_rl.tasks.maze.task"  # the real module keeps its own spec
    assert got["warnings"], "importing hyperpod_rl.maze must warn"
    assert all("hyperpod_rl.tasks.maze" in w for w in got["warnings"]), got["warnings"]
    assert any("hyperpod_rl.maze.task moved to hyperpod_rl.tasks.maze.task" in w for w in got["warnings"])


def test_unknown_old_submodule_is_not_found() -> None:
    code = "import warnings; warnings.simplefilter('ignore')\ntry:\n import hyperpod_rl.maze.nope\nexcept ModuleNotFoundError as e:\n print('missing', e.name)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""}
    ).stdout
    assert out.strip() == "missing hyperpod_rl.maze.nope"


def test_entry_point_name_is_unchanged_and_targets_the_new_path() -> None:
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["hyperpod_rl.tasks"]
    assert eps["maze"] == "hyperpod_rl.tasks.maze.task:TASK"
    from hyperpod_rl.tasks import get_task, task_sources

    assert task_sources()["maze"] == "hyperpod_rl.tasks.maze.task:TASK"  # not stale installed metadata
    assert get_task("maze").env_class == "hyperpod_rl.maze"  # the skyrl-gym env id is data: unchanged
