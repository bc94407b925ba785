"""Commands that need no model import neither torch nor transformers (issue 30 item 5d).

Each command runs in a fresh interpreter (a subprocess, as a user's shell runs it); at exit the
interpreter writes the names in ``sys.modules``, and the test checks the modules, not the time
(``benchmarks/cli_startup.py`` measures the start-up).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Modules a command that builds no model must not import.
HEAVY = ("torch", "transformers", "peft", "vllm")

#: The program each case runs: the CLI with ``argv``, writing ``sorted(sys.modules)`` at exit.
RUNNER = """
import atexit, json, sys
out, argv = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["hyperpod-rl", *argv]
from hyperpod_rl.cli import app
app()
"""


def imported_by(args: list[str], tmp_path: Path, *, program: str = RUNNER) -> tuple[int, set[str], str]:
    """``(exit code, top-level modules imported, output)`` of ``hyperpod-rl ARGS`` in a fresh interpreter."""
    out = tmp_path / f"modules-{len(list(tmp_path.iterdir()))}.json"
    env = {**os.environ, "HYPERPOD_RL_HOME": str(tmp_path / "home"), "COLUMNS": "120"}
    env.pop("HYPERPOD_RL_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-c", program, str(out), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    modules = {m.split(".")[0] for m in json.loads(out.read_text())}
    return proc.returncode, modules, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["runs", "list"],
        ["job", "status", "no-such-run"],
        ["doctor", "--no-aws"],
        ["cluster", "--help"],
        ["tasks", "list"],
        ["plan", "--preset", "single-gpu"],
    ],
    ids=lambda a: " ".join(a),
)
def test_command_imports_no_torch(args: list[str], tmp_path: Path) -> None:
    code, modules, output = imported_by(args, tmp_path)
    assert code in (0, 1, 2), output  # ran to its end (job status of an unknown run: exit 2)
    assert "hyperpod_rl" in modules and "typer" in modules  # the command really ran through the CLI
    assert not modules & set(HEAVY), f"hyperpod-rl {' '.join(args)} imported {sorted(modules & set(HEAVY))}"


def test_the_check_sees_torch_where_a_model_is_built(tmp_path: Path) -> None:
    """The same check run on the module that builds the tiny model does find torch (so the test above can fail)."""
    code, modules, output = imported_by(
        [], tmp_path, program=RUNNER.replace("from hyperpod_rl.cli import app\napp()", "import hyperpod_rl.model.tiny")
    )
    assert code == 0, output
    assert {"torch", "transformers"} <= modules
