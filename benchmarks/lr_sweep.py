"""Learning-rate sweep of the reference GRPO backend on the first-move task.

Usage (repository root)::

    python -m benchmarks.lr_sweep            # the full sweep (see the defaults below)
    python -m benchmarks.lr_sweep --quick    # a smoke run: 2 learning rates, 20 steps, 50 held-out mazes

Workload: the quickstart's tiny random-init Qwen3-VL and maze data (3x3..5x5, terse prompts), one
turn per episode (``max_turns=1``: the task is the first move), ``--mazes-per-step`` mazes x
``--group-size`` samples per step, ``--steps`` steps, the quickstart's LoRA and advantage settings,
one learning rate at a time. Training runs in this process (``ReferenceTrainer``, no Ray cluster:
the sweep measures learning, not the job system). Each learning rate starts from the same base
model, data and seed.

Selection on validation, held-out once (issue 29): every learning rate is trained from each of
``--seeds`` (data, model and training; default 0, 1, 2) and scored on a validation split
(``--validation`` mazes, disjoint from train and held-out by layout hash); the one with the best mean
validation optimal-move rate over the seeds is chosen, and only its adapters are evaluated on the
held-out split, once per seed. ``--jobs N`` trains N (seed, lr) cells at once, each in its own
process with ``cores / N`` torch threads (the cores it may use: its CPU affinity).

Figures (greedy, one move per maze): per learning rate and seed, on validation, the adapter's optimal-move
rate, its paired difference from the base model's (measured in the same run) with the 95% bootstrap
interval, the policy entropy over training (a collapse to one answer shows as entropy falling
towards 0) and the share of mazes answered with the most common move; then, for the chosen rate
only, the same on the held-out split, per seed.

Writes ``benchmarks/results/lr_sweep.json`` (or ``lr_sweep_quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks._record import Recording, scratch_dir, usable_cores
from benchmarks._sweep import cell_config, iv, seeded

QUICK = {"lrs": [5e-4, 3e-3], "steps": 20, "heldout": 50, "validation": 50}


def _entropy_curve(metrics_path: Path, every: int) -> list[tuple[int, float]]:
    out = []
    for line in metrics_path.read_text().splitlines():
        rec = json.loads(line)
        if rec["step"] == 1 or rec["step"] % every == 0:
            out.append((rec["step"], round(rec["values"]["policy/policy_entropy"], 4)))
    return out


def _top_answer_share(per_maze: list[dict[str, Any]]) -> float:
    first = Counter(m["moves"][0] for m in per_maze if m.get("moves"))
    return round(first.most_common(1)[0][1] / sum(first.values()), 4) if first else 0.0


def _figures(base: Any, tuned: Any) -> dict[str, Any]:
    """The adapter's optimal-move rate, its paired difference from the base's, and its most common answer's share."""
    from hyperpod_rl.eval import compare

    diff = compare(base, tuned).deltas["optimal_move_rate"]
    return {"optimal_move_rate": iv(diff.candidate), "diff_vs_base": iv(diff.diff), "top_answer_share": _top_answer_share(tuned.per_maze)}


def _cell(seed: int, lr: float, args: argparse.Namespace, home: str, threads: int) -> dict[str, Any]:
    """Train one learning rate from one seed's base model and data; score it on validation.

    Runs in a worker process (``--jobs``): its own storage under ``home`` (the data and base model
    are rebuilt from the seed, byte for byte the same in every cell of that seed)."""
    from hyperpod_rl.eval import evaluate
    from hyperpod_rl.train.reference import ReferenceTrainer

    run_id = "lr-" + format(lr, ".1e").replace(".", "p").replace("+", "")
    s = seeded(_options(args, seed), home, f"seed{seed}-lr{lr:g}", threads)
    base, model_dir, validation = s.base, s.model_dir, s.validation
    cfg = cell_config(s, s.opts.model_copy(update={"lr": lr}), run_id=run_id, steps=args.steps)
    run_dir = s.storage / "runs" / cfg.run_id
    adapter = ReferenceTrainer(cfg, run_dir).train()
    tuned = evaluate(model_dir, validation, adapter_path=adapter, label=f"lr {lr:g}")
    entropy = _entropy_curve(run_dir / "metrics.jsonl", every=max(args.steps // 10, 1))
    return {
        "seed": seed,
        "lr": lr,
        **_figures(base, tuned),
        "base_optimal_move_rate": round(base.metrics["optimal_move_rate"], 4),
        "entropy_curve": entropy,
        "final_entropy": entropy[-1][1],
        "adapter": str(adapter),
        "model_dir": str(model_dir),
        "heldout_path": str(s.data.heldout),
    }


def _options(args: argparse.Namespace, seed: int) -> Any:
    from hyperpod_rl.quickstart import QuickstartOptions

    return QuickstartOptions.build(
        seed=seed,
        max_turns=1,
        prompts_per_step=args.mazes_per_step,
        group_size=args.group_size,
        train_rows=args.train_mazes,
        heldout_rows=args.heldout,
        validation_rows=args.validation,
        steps=args.steps,
        serve=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-4, 5e-4, 1e-3, 3e-3], help="learning rates to try")
    parser.add_argument("--steps", type=int, default=300, help="GRPO steps per learning rate")
    parser.add_argument("--mazes-per-step", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--train-mazes", type=int, default=2000)
    parser.add_argument("--heldout", type=int, default=200, help="held-out mazes, evaluated once, for the chosen learning rate (greedy)")
    parser.add_argument("--validation", type=int, default=200, help="validation mazes the learning rate is chosen on (greedy)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (data, model and training)")
    parser.add_argument("--jobs", type=int, default=1, help="(seed, lr) cells trained at once, each in its own process")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK}")
    args = parser.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)

    home = str(scratch_dir("hprl-bench-lr-"))
    os.environ["HYPERPOD_RL_HOME"] = home
    os.environ["HYPERPOD_RL_LEDGER"] = "off"
    threads = max(1, usable_cores() // max(args.jobs, 1))
    name = "lr_sweep_quick" if args.quick else "lr_sweep"
    with Recording(name, params=vars(args)) as rec:
        from concurrent.futures import ProcessPoolExecutor

        from hyperpod_rl.eval import evaluate
        from hyperpod_rl.tasks.maze import read_rows

        cells = [(seed, lr) for seed in args.seeds for lr in args.lrs]
        with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
            done = list(pool.map(_cell, *zip(*cells, strict=True), *([x] * len(cells) for x in (args, home, threads))))
        runs = []
        for lr in args.lrs:
            mine = [c for c in done if c["lr"] == lr]
            mean = statistics.mean(c["optimal_move_rate"]["value"] for c in mine)
            runs.append({"lr": lr, "mean_optimal_move_rate": round(mean, 4), "seeds": [_public(c) for c in mine]})
            print(f"lr {lr:g}: mean validation optimal-move rate {mean:.3f} over seeds {args.seeds}", flush=True)
        chosen = max(runs, key=lambda run: run["mean_optimal_move_rate"])["lr"]
        heldout = []
        for cell in (c for c in done if c["lr"] == chosen):  # read once, for the chosen learning rate only
            rows = read_rows(Path(cell["heldout_path"]))
            base = evaluate(cell["model_dir"], rows, label="base")
            final = evaluate(cell["model_dir"], rows, adapter_path=cell["adapter"], label=f"lr {chosen:g}")
            heldout.append(
                {"seed": cell["seed"], **_figures(base, final), "base_optimal_move_rate": round(base.metrics["optimal_move_rate"], 4)}
            )
            h = heldout[-1]
            print(
                f"seed {cell['seed']}: held-out optimal-move rate {h['optimal_move_rate']['value']:.3f} "
                f"(Δ {h['diff_vs_base']['value']:+.3f} [{h['diff_vs_base']['low']:+.3f}, {h['diff_vs_base']['high']:+.3f}])",
                flush=True,
            )
        print(f"chosen on validation: lr {chosen:g}")
        rec.results = {
            "task": "first move (max_turns=1)",
            "selection": "validation (mean over seeds)",
            "validation_mazes": args.validation,
            "heldout_mazes": args.heldout,
            "runs": runs,
            "chosen_lr": chosen,
            "heldout": heldout,
        }
    print(json.dumps({k: rec.results[k] for k in ("chosen_lr", "heldout")}))
    return 0


def _public(cell: dict[str, Any]) -> dict[str, Any]:
    """A cell's figures without the worker's temporary paths."""
    return {k: v for k, v in cell.items() if k not in ("adapter", "model_dir", "heldout_path")}


if __name__ == "__main__":
    raise SystemExit(main())
