"""Same seed, same metrics: a few quickstart GRPO steps with this checkout's code and with an earlier commit's.

    python -m benchmarks.same_seed_parity --against 3c222b2 [--steps 4]

Issue 26 moved the maze into ``hyperpod_rl/tasks/maze/``, wrote the shared task machinery once and
renamed the generic config fields; its "done when" asks that the quickstart's figures be unchanged
(same seed, same metrics). This script checks that directly. It adds a detached git worktree of
``--against`` in a temporary folder and, once there and once in this checkout, runs the same
worker in a fresh process (the working directory first on ``sys.path``, so each imports its own
``hyperpod_rl``). The worker builds a small quickstart dataset and the tiny base model, writes the
quickstart's run config (the maze words in the old code, the generic names in the new) and trains
``--steps`` steps in-process with the reference trainer. The result holds both sides' dataset hashes,
base model revisions and per-step metrics (timings and rates left out, since they depend on the
machine), and each metric that differs. Metrics only one side records (those added since) are listed
apart, not counted as differences.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._record import REPO, Recording

#: metric name prefixes/suffixes that measure the machine, not the training
MACHINE_METRICS = ("timing/", "perf/", "throughput/")

WORKER = r"""
import json, sys, tempfile, warnings
from pathlib import Path
sys.path.insert(0, ".")
warnings.simplefilter("ignore")
import hyperpod_rl.quickstart as qs
fields = qs.QuickstartOptions.model_fields
def name(new, old):
    return new if new in fields else old
opts = qs.QuickstartOptions.build({name("train_rows", "train_mazes"): 64, name("heldout_rows", "heldout_mazes"): 8,
    name("prompts_per_step", "mazes_per_step"): 2, "group_size": 2, "max_turns": 3, "steps": int(sys.argv[2]), "seed": 0})
storage = Path(tempfile.mkdtemp(prefix="hprl-parity-"))
data = qs.prepare_dataset(opts, storage)
try:
    from hyperpod_rl.tasks.maze import read_rows
except ImportError:  # before issue 26
    from hyperpod_rl.maze.dataset import read_rows
model_dir, revision = qs.prepare_base_model(opts, storage, read_rows(data.train))
cfg = qs.make_run_config(opts, run_id="parity", model_path=model_dir, revision=revision, data=data)
run_dir = storage / "runs" / "parity"
run_dir.mkdir(parents=True)
(run_dir / "config.json").write_text(cfg.model_dump_json(indent=1))
try:
    from hyperpod_rl.train.workers import main
except ImportError:  # before the data-parallel workers
    from hyperpod_rl.train.reference import main
main(str(run_dir / "config.json"))
records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
Path(sys.argv[1]).write_text(json.dumps({"data_hashes": data.hashes, "revision": revision,
    "metrics": [{"step": r["step"], "values": r["values"]} for r in records]}))
"""


def run_side(cwd: Path, steps: int, out: Path, timeout_s: float) -> dict[str, Any]:
    """Run :data:`WORKER` in ``cwd`` (its own ``hyperpod_rl``) in a fresh process; its JSON result.

    Its data dir and its temporary files (the worker's storage) go beside ``out``, in the caller's
    temporary directory, which removes them."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{out.stem}-", dir=out.parent))
    env = {**os.environ, "HYPERPOD_RL_HOME": str(scratch / "home"), "TMPDIR": str(scratch)}
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(out), str(steps)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the worker in {cwd} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def _training(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if not k.startswith(MACHINE_METRICS) and not k.endswith("per_second")}


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Per step, the metrics both sides record that differ, and the names only one side records."""
    differ, only_old, only_new = [], set(), set()
    for a, b in zip(old["metrics"], new["metrics"], strict=True):
        va, vb = _training(a["values"]), _training(b["values"])
        only_old |= set(va) - set(vb)
        only_new |= set(vb) - set(va)
        differ += [{"step": a["step"], "metric": k, "old": va[k], "new": vb[k]} for k in sorted(set(va) & set(vb)) if va[k] != vb[k]]
    return {
        "steps": len(new["metrics"]),
        "data_hashes_equal": old["data_hashes"] == new["data_hashes"],
        "revision_equal": old["revision"] == new["revision"],
        "metrics_compared": len(set(_training(new["metrics"][0]["values"])) - only_new) if new["metrics"] else 0,
        "differences": differ,
        "only_old": sorted(only_old),
        "only_new": sorted(only_new),
        "identical": old["data_hashes"] == new["data_hashes"] and old["revision"] == new["revision"] and not differ,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--against", required=True, help="the earlier commit (any git revision)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds each side may take")
    p.add_argument("--out", type=Path, default=None, help="result file (default benchmarks/results/same_seed_parity.json)")
    args = p.parse_args(argv)
    against = subprocess.run(["git", "-C", str(REPO), "rev-parse", args.against], capture_output=True, text=True, check=True).stdout.strip()
    with (
        Recording("same_seed_parity", params={"against": against, "steps": args.steps}, path=args.out) as rec,
        tempfile.TemporaryDirectory() as tmp,
    ):
        worktree = Path(tmp) / "against"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), against], capture_output=True, check=True)
        try:
            old = run_side(worktree, args.steps, Path(tmp) / "old.json", args.timeout)
            new = run_side(REPO, args.steps, Path(tmp) / "new.json", args.timeout)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)], capture_output=True, check=False)
        rec.results = {"against": against, **compare(old, new), "old": old, "new": new}
        r = rec.results
        print(
            f"{r['steps']} steps against {against[:10]}: data {'equal' if r['data_hashes_equal'] else 'DIFFERENT'}, "
            f"base revision {'equal' if r['revision_equal'] else 'DIFFERENT'}, {r['metrics_compared']} metrics compared, "
            f"{len(r['differences'])} differences; recorded only by the new code: {', '.join(r['only_new']) or 'none'}"
        )
    return rec.results


if __name__ == "__main__":
    main()
