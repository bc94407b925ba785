"""hyperpod_rl.tasks.maze sits on the task API: only hyperpod_rl.tasks, .errors and .base from the package; no Ray, torch or skyrl-gym at import time."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import hyperpod_rl.tasks.maze

ROOT = Path(__file__).resolve().parents[3]
MAZE = ROOT / "hyperpod_rl" / "tasks" / "maze"
FORBIDDEN_ROOTS = {"torch", "ray", "transformers", "peft", "vllm", "typer", "ipywidgets", "kubernetes"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_maze_modules_import_only_the_task_api_and_errors_from_the_package() -> None:
    files = sorted(MAZE.glob("*.py"))
    assert len(files) >= 8
    for path in files:
        for name in _imports(path):
            if name.startswith("hyperpod_rl"):
                allowed = (
                    name in ("hyperpod_rl.errors", "hyperpod_rl.base")
                    or name == "hyperpod_rl.tasks"
                    or name.startswith(("hyperpod_rl.tasks.maze", "hyperpod_rl.tasks."))
                )
                assert allowed, (path.name, name)
            assert name.split(".")[0] not in FORBIDDEN_ROOTS, (path.name, name)


def test_import_does_not_load_heavy_frameworks() -> None:
    """The task and the planner import without torch, Ray, transformers or skyrl-gym (the GPU
    harness runs the planner on a machine that has none of Ray or skyrl-gym)."""
    code = (
        "import sys, hyperpod_rl.tasks.maze, hyperpod_rl.plan, hyperpod_rl.tasks; hyperpod_rl.tasks.maze.build_dataset; "
        "hyperpod_rl.tasks.get_task('maze').build_dataset; "
        "print(sorted(m for m in ('torch', 'ray', 'transformers', 'skyrl_gym') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    ).stdout.strip()
    assert out == "[]"


def test_public_names_are_exported() -> None:
    assert hyperpod_rl.tasks.maze.__all__ == sorted(hyperpod_rl.tasks.maze.__all__, key=lambda n: (not n.isupper(), n))
    for name in hyperpod_rl.tasks.maze.__all__:
        assert hasattr(hyperpod_rl.tasks.maze, name), name
