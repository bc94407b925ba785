"""``hyperpod-rl plan`` on the run presets, recorded as docs/planner.md quotes it.

Usage (repository root): python -m benchmarks.plan_cli

Runs the real command (``python -m hyperpod_rl.cli plan ...`` in a subprocess, 100 columns, no
colour) for each case in :data:`CASES`, records the command line, exit code and output in
``benchmarks/results/plan_cli.json`` (:mod:`benchmarks._record`) and rewrites the
``planner-cli-*`` passages of docs/planner.md (:mod:`benchmarks.figures`). The figures are the
planner's predictions, not measurements (nothing runs on a GPU here); docs/planner.md gives the H200
measurements the planner is fitted on and judged against. ``tests/test_cli_plan.py`` checks that
the recorded output is still what the command prints, so a change of the planner's constants
asks for this script to be run again.
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks._record import REPO, Recording

__all__ = ["CASES", "run_case"]

#: case name -> arguments of ``hyperpod-rl plan``.
CASES: dict[str, list[str]] = {
    "fits": ["--preset", "single-node-8gpu"],
    "blocked": ["--preset", "single-gpu", "--micro-batch", "64", "--gpu", "H100"],
    "own-gpu": ["--preset", "hyperpod-6gpu"],
    "a10g": ["--preset", "hyperpod-6gpu", "--gpu", "A10G"],
}


def run_case(args: list[str]) -> dict[str, object]:
    """Run ``hyperpod-rl plan ARGS``; return ``{"command", "exit_code", "output"}`` (stdout and stderr together)."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-m", "hyperpod_rl.cli", "plan", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return {"command": " ".join(["hyperpod-rl", "plan", *args]), "exit_code": proc.returncode, "output": proc.stdout + proc.stderr}


def main() -> int:
    from benchmarks.figures import update

    with Recording("plan_cli", params={"cases": CASES}, notes="planner predictions printed by hyperpod-rl plan; no measurement") as rec:
        rec.results = {name: run_case(args) for name, args in CASES.items()}
    for doc in update([f"planner-cli-{name}" for name in CASES]):
        print(f"updated {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
