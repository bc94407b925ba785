"""Run ids are never wrapped: at an 80-column terminal (``COLUMNS=80``) every table that lists
runs keeps each run id on one line, whole, and folds its other columns instead.

New-user report: ``hyperpod-rl runs list`` at an 80-column terminal split run ids over several
lines, so they could not be copied into the commands that take them. The same column setting was
in ``job list`` (both with and without a cluster), ``runs search`` and ``runs compare``'s headers.
Each command runs in a fresh interpreter with ``COLUMNS=80``, as in a terminal of that width.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hyperpod_rl.ledger import Ledger
from hyperpod_rl.runs import add_submission, run_paths, update_provenance

REPO = Path(__file__).resolve().parents[2]

#: Run ids as the quickstart names them, and a longer one as a sweep might.
RUN_IDS = ("quickstart-20261207-141208", "quickstart-20261207-141208-sft", "grpo-sweep-lr-0005-rank-16-seed-2-of-3")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir whose ledger and run directories hold :data:`RUN_IDS` (no cluster)."""
    home = tmp_path / "home"
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(home))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    with Ledger() as led:
        for i, run_id in enumerate(RUN_IDS):
            paths = run_paths(run_id)
            add_submission(paths, f"hprl-{run_id}-1")
            config = {"run_id": run_id, "task": {"name": "maze"}, "grpo": {"lr": 0.0005 * (i + 1)}, "trainer": {"steps": 200}}
            update_provenance(paths.root, lambda _, rid=run_id, c=config: {"run_id": rid, "status": "succeeded", "config": c})
            led.record_run(run_id, status="succeeded", config=config, config_hash="ab3a3b1472f41d95", run_dir=paths.root)
            led.add_eval(run_id, "adapter", {"solve_rate": 0.42}, ci={"solve_rate": [0.355, 0.485]}, num_mazes=200)
            led.add_note(f"lr {config['grpo']['lr']} collapses the policy to one direction within forty steps of training", run_id=run_id)
    return home


def _cli(*args: str, home: Path) -> str:
    """``hyperpod-rl ARGS``'s standard output in a fresh interpreter at an 80-column terminal."""
    env = {**os.environ, "HYPERPOD_RL_HOME": str(home), "COLUMNS": "80"}
    for name in ("HYPERPOD_RL_ADDRESS", "HYPERPOD_RL_LEDGER", "HYPERPOD_RL_STORAGE", "LINES"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "hyperpod_rl.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _assert_ids_whole(out: str, run_ids: tuple[str, ...] = RUN_IDS) -> None:
    assert all(len(line) <= 80 for line in out.splitlines()), out
    for run_id in run_ids:
        assert run_id in out, f"{run_id} is wrapped or cut:\n{out}"


@pytest.mark.parametrize(
    "args",
    [["runs", "list"], ["job", "list"], ["runs", "search", "collapses"], ["runs", "compare", *RUN_IDS[:2]]],
    ids=" ".join,
)
def test_run_ids_stay_whole_at_80_columns(args: list[str], home: Path) -> None:
    out = _cli(*args, home=home)
    _assert_ids_whole(out, RUN_IDS[:2] if args[1] == "compare" else RUN_IDS)
