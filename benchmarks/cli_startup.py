"""Start-up time of the ``hyperpod-rl`` commands that build no model, before and after the lazy imports.

Usage (repository root): python -m benchmarks.cli_startup [--before REV] [--repeat N]

Each case of :data:`CASES` runs as a user's shell runs it: a fresh interpreter,
``python -m hyperpod_rl.cli ARGS``, its wall time measured from process start to exit, and the
top-level modules it imported recorded (``torch``, ``transformers``: issue 30 item 5d). The
``before`` figures come from a temporary ``git worktree`` of ``--before`` (default: the commit
before the lazy imports, :data:`BEFORE`), the ``after`` figures from this checkout; the two are
run interleaved, case by case, so machine load hits both alike. Written to
``benchmarks/results/cli_startup.json`` (:mod:`benchmarks._record`). The figures are wall times on
a shared machine (the load average is recorded with them): compare before with after, not with
another machine. ``tests/cli/test_startup_imports.py`` checks the imports, never the time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._record import REPO, Recording, exit_on_sigterm

__all__ = ["BEFORE", "CASES", "run_case"]

#: case name -> arguments of ``hyperpod-rl``.
CASES: dict[str, list[str]] = {
    "--help": ["--help"],
    "runs list": ["runs", "list"],
    "job status": ["job", "status", "bench-no-such-run"],
    "doctor": ["doctor", "--no-aws"],
}

#: main before issue 30 item 5d (every command imported torch and transformers).
BEFORE = "ca7b2a0"

_RUNNER = """
import atexit, json, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted({m.split(".")[0] for m in sys.modules}))))
sys.argv[0] = "hyperpod-rl"
runpy.run_module("hyperpod_rl.cli", run_name="__main__", alter_sys=True)
"""

#: Top-level modules whose import is recorded per case.
WATCHED = ("torch", "transformers", "ray", "kubernetes", "jsonschema", "pyarrow", "numpy")


def run_case(tree: Path, args: list[str], home: Path) -> dict[str, object]:
    """Run ``hyperpod-rl ARGS`` from ``tree`` once; return ``{"wall_s", "exit_code", "imports"}``."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        modules_file = Path(fh.name)
    env = {**os.environ, "HYPERPOD_RL_HOME": str(home), "COLUMNS": "100", "NO_COLOR": "1"}
    env.pop("HYPERPOD_RL_ADDRESS", None)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(modules_file), *args], cwd=tree, env=env, capture_output=True, text=True, timeout=600
    )
    wall = time.perf_counter() - start
    try:
        modules = set(json.loads(modules_file.read_text() or "[]"))
    finally:
        modules_file.unlink(missing_ok=True)
    return {"wall_s": round(wall, 3), "exit_code": proc.returncode, "imports": {m: m in modules for m in WATCHED}}


def _summary(runs: list[dict[str, object]]) -> dict[str, object]:
    walls = [float(r["wall_s"]) for r in runs]  # type: ignore[arg-type]
    return {
        "runs_s": walls,
        "median_s": round(statistics.median(walls), 2),
        "min_s": round(min(walls), 2),
        "exit_codes": sorted({int(r["exit_code"]) for r in runs}),  # type: ignore[call-overload]
        "imports": runs[-1]["imports"],
    }


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help="git revision measured as 'before'")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case and tree")
    args = parser.parse_args()
    before_commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", args.before], capture_output=True, text=True, check=True
    ).stdout.strip()
    scratch = Path(tempfile.mkdtemp(prefix="hprl-cli-startup-"))
    old_tree = scratch / "before"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(old_tree), before_commit], check=True, capture_output=True)
    try:
        trees = {"before": old_tree, "after": REPO}
        raw: dict[str, dict[str, list[dict[str, object]]]] = {t: {c: [] for c in CASES} for t in trees}
        with Recording("cli_startup", params={"cases": CASES, "repeat": args.repeat, "before": before_commit}) as rec:
            run_case(REPO, ["--help"], scratch / "home")  # warm the file cache once
            run_case(old_tree, ["--help"], scratch / "home")
            for _ in range(args.repeat):
                for case, case_args in CASES.items():
                    for tree_name, tree in trees.items():
                        raw[tree_name][case].append(run_case(tree, case_args, scratch / f"home-{tree_name}"))
            rec.results = {
                "before": {"commit": before_commit, "commands": {c: _summary(r) for c, r in raw["before"].items()}},
                "after": {"commands": {c: _summary(r) for c, r in raw["after"].items()}},
                "speedup": {
                    c: round(
                        statistics.median(float(x["wall_s"]) for x in raw["before"][c])  # type: ignore[arg-type]
                        / statistics.median(float(x["wall_s"]) for x in raw["after"][c]),  # type: ignore[arg-type]
                        2,
                    )
                    for c in CASES
                },
            }
            rec.notes = "wall seconds from process start to exit, fresh interpreter per run; before/after interleaved case by case"
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old_tree)], check=False, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    for case in CASES:
        b, a = rec.results["before"]["commands"][case], rec.results["after"]["commands"][case]
        print(
            f"{case:12s} before {b['median_s']:6.2f} s (torch {b['imports']['torch']})  after {a['median_s']:6.2f} s (torch {a['imports']['torch']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
