"""The reference backend's GRPO step on the CPU, before and after a change: the quickstart's step, timed.

Usage (repository root): ``python -m benchmarks.cpu_step [--before REV] [--reps 3] [--warmup 3] [--steps 5]``

The workload is the reduced quickstart's GRPO run (``tests/test_quickstart_e2e.py``: the maze, 400
train and 8 held-out mazes, 8 mazes x 8 episodes a step, up to 6 turns, lr 5e-4, the embedded tiny
Qwen3-VL), started from the base model (the test starts from a 4-step SFT adapter: other weights,
the same work). The data and the model are built once. Each side runs the whole trainer
(``ReferenceTrainer.train``: base-model benchmark, steps, checkpoints every ``steps // 4``, adapter
export) for ``warmup + steps`` steps in a fresh interpreter: ``before`` from a temporary ``git
worktree`` of ``--before`` (default ``main``), ``after`` from this checkout, each importing its own
tree's ``hyperpod_rl``. Repetitions alternate the order (before/after, after/before, ...), so load on
the shared machine falls on both sides alike.

Per run, the first ``warmup`` steps are dropped; of the rest it keeps the trainer's own
``timing/step`` (rollout, advantages and the update), the time between consecutive metric
records (also the metric write and any checkpoint save), and the process's CPU seconds in each
step (``step_cpu_s``, all threads; less moved by other programs on the machine than wall time). A side's figure is the median over
repetitions of each run's median step, with the range of those medians. Both sides train with the
same seeds, so the script also reports whether they rewarded the same episodes (the per-step mean
rewards) and the largest difference of any other logged number. Written to
``benchmarks/results/cpu_step.json`` (:mod:`benchmarks._record`); wall times on a shared machine
(the load average is recorded with them): compare before with after, not across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._record import REPO, Recording, exit_on_sigterm, scratch_dir

__all__ = ["run_side", "summarize"]

#: The reduced quickstart's options (tests/test_quickstart_e2e.py), GRPO from the base model.
OPTIONS: dict[str, Any] = {"train_rows": 400, "heldout_rows": 8, "lr": 5e-4, "sft": False, "serve": False}

_RUNNER = """
import json, sys, time, torch
from pathlib import Path
config, run_dir, out = sys.argv[1:4]
import hyperpod_rl
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.train.reference import ReferenceTrainer
cpu = []
step = ReferenceTrainer._step
def timed(self):
    begin = time.process_time()
    try:
        return step(self)
    finally:
        cpu.append(time.process_time() - begin)
ReferenceTrainer._step = timed
start = time.perf_counter()
ReferenceTrainer(RunConfig.model_validate_json(Path(config).read_text()), run_dir, fresh=True).train()
records = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
Path(out).write_text(json.dumps({
    "code": hyperpod_rl.__file__, "threads": [torch.get_num_threads(), torch.get_num_interop_threads()],
    "train_s": time.perf_counter() - start, "step_cpu_s": cpu, "records": records}))
"""


def run_side(tree: Path, config: Path, run_dir: Path, home: Path) -> dict[str, Any]:
    """Train once with ``tree``'s code in a fresh interpreter; return its metric records and where its code came from.

    Raises:
        RuntimeError: the trainer failed (its last output is in the message), or imported another tree's code.
    """
    out = run_dir.with_suffix(".json")
    env = {**os.environ, "PYTHONPATH": str(tree), "HYPERPOD_RL_HOME": str(home)}
    load = [round(x, 2) for x in os.getloadavg()]
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(config), str(run_dir), str(out)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the trainer from {tree} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    data = json.loads(out.read_text())
    if not Path(data["code"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"the run meant for {tree} imported {data['code']}")
    data["load_avg_start"] = load
    return data


def _step_figures(run: dict[str, Any], warmup: int) -> dict[str, list[float]]:
    records = run["records"]
    values = [r["values"] for r in records]
    gaps = [records[i]["time_s"] - records[i - 1]["time_s"] for i in range(warmup, len(records))]
    return {
        "step_s": [round(v["timing/step"], 3) for v in values[warmup:]],
        "loop_s": [round(g, 3) for g in gaps],
        "generate_s": [round(v["timing/generate"], 3) for v in values[warmup:]],
        "policy_train_s": [round(v["timing/policy_train"], 3) for v in values[warmup:]],
        "step_cpu_s": [round(c, 3) for c in run["step_cpu_s"][warmup:]],
    }


def _spread(per_run: list[list[float]]) -> dict[str, Any]:
    medians = [statistics.median(xs) for xs in per_run]
    return {
        "median_s": round(statistics.median(medians), 3),
        "range_s": [round(min(medians), 3), round(max(medians), 3)],
        "run_medians_s": [round(m, 3) for m in medians],
    }


def _learned(run: dict[str, Any]) -> list[dict[str, float]]:
    """Every logged number but timings and rates."""
    return [
        {k: v for k, v in r["values"].items() if not k.startswith("timing/") and not k.endswith("tokens_per_second")}
        for r in run["records"]
    ]


def summarize(runs: dict[str, list[dict[str, Any]]], warmup: int) -> dict[str, Any]:
    """Per side: the median and range over runs of each run's median step, for each figure; the speed-up;
    and whether the runs computed the same (the per-step mean rewards of every run, the largest difference of any other number)."""
    out: dict[str, Any] = {}
    for side, side_runs in runs.items():
        figures = [_step_figures(r, warmup) for r in side_runs]
        out[side] = {
            **{name: _spread([f[name] for f in figures]) for name in ("step_s", "loop_s", "generate_s", "policy_train_s", "step_cpu_s")},
            "runs": [
                {**f, "load_avg_start": r["load_avg_start"], "threads": r["threads"]} for f, r in zip(figures, side_runs, strict=True)
            ],
        }
    out["speedup"] = {
        name: round(out["before"][name]["median_s"] / out["after"][name]["median_s"], 2)
        for name in ("step_s", "loop_s", "generate_s", "step_cpu_s")
    }
    learned = [_learned(r) for side in runs.values() for r in side]
    rewards = {json.dumps([v["reward/avg_raw_reward"] for v in run]) for run in learned}
    diff = max(abs(a[k] - b[k]) for run in learned[1:] for a, b in zip(learned[0], run, strict=True) for k in a)
    out["same_computation"] = {
        "same_rewards_every_run": len(rewards) == 1,
        "max_abs_diff_other_numbers": diff,
        "mean_reward_per_step": json.loads(next(iter(rewards))) if len(rewards) == 1 else None,
    }
    return out


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git revision measured as 'before' (default main)")
    parser.add_argument("--reps", type=int, default=3, help="runs per side, the order alternating")
    parser.add_argument("--warmup", type=int, default=3, help="steps dropped at the start of each run")
    parser.add_argument("--steps", type=int, default=5, help="steps measured in each run")
    args = parser.parse_args()
    from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    before_commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", args.before], capture_output=True, text=True, check=True
    ).stdout.strip()
    scratch = scratch_dir("hprl-cpu-step-")
    old_tree = scratch / "before"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(old_tree), before_commit], check=True, capture_output=True)
    try:
        opts = QuickstartOptions.build(**OPTIONS, steps=args.warmup + args.steps)
        data = prepare_dataset(opts, scratch / "storage")
        model_dir, revision = prepare_base_model(opts, scratch / "storage", read_rows(data.train))
        config = scratch / "config.json"
        config.write_text(make_run_config(opts, run_id="cpu-step", model_path=model_dir, revision=revision, data=data).model_dump_json())
        trees = {"before": old_tree, "after": REPO}
        params = {**OPTIONS, "before": before_commit, "reps": args.reps, "warmup": args.warmup, "steps": args.steps}
        with Recording("cpu_step", params=params) as rec:
            runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            for rep in range(args.reps):
                for side in ("before", "after") if rep % 2 == 0 else ("after", "before"):
                    t0 = time.monotonic()
                    runs[side].append(run_side(trees[side], config, scratch / f"run-{side}-{rep}", scratch / "home"))
                    print(f"rep {rep} {side}: {time.monotonic() - t0:.0f} s", flush=True)
            rec.results = {"before_commit": before_commit, **summarize(runs, args.warmup)}
            rec.notes = (
                "the reduced quickstart's GRPO step on the CPU (from the base model), each run a fresh interpreter training "
                f"{args.warmup}+{args.steps} steps, sides alternating; step_s: the trainer's timing/step; loop_s: between metric "
                "records (also metric writes and checkpoint saves); step_cpu_s: the process's CPU seconds in a step; medians over runs of "
                "each run's median, with their range"
            )
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old_tree)], check=False, capture_output=True)
    res = rec.results
    for side in ("before", "after"):
        s = res[side]["step_s"]
        c = res[side]["step_cpu_s"]
        print(f"{side:6s} step {s['median_s']:.2f} s (range {s['range_s'][0]:.2f}-{s['range_s'][1]:.2f}), CPU {c['median_s']:.2f} s")
    print(
        json.dumps(
            {
                "speedup": res["speedup"],
                "same_computation": {k: v for k, v in res["same_computation"].items() if k != "mean_reward_per_step"},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
