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

Selection on validation, held-out once (issue 29): every learning rate is scored on a validation
split (``--validation`` mazes, disjoint from train and held-out by layout hash), the one with the best
validation optimal-move rate is chosen, and only that adapter is evaluated on the held-out split.

Figures (greedy, one move per maze): per learning rate, on validation, the adapter's optimal-move
rate, its paired difference from the base model's (measured in the same run) with the 95% bootstrap
interval, the policy entropy over training (a collapse to one answer shows as entropy falling
towards 0) and the share of mazes answered with the most common move; then, for the chosen rate
only, the same on the held-out split.

Writes ``benchmarks/results/lr_sweep.json`` (or ``lr_sweep_quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks._record import Recording

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


def _iv(d: Any) -> dict[str, float]:
    return {"value": round(d.value, 4), "low": round(d.low, 4), "high": round(d.high, 4)}


def _figures(base: Any, tuned: Any) -> dict[str, Any]:
    """The adapter's optimal-move rate, its paired difference from the base's, and its most common answer's share."""
    from hyperpod_rl.eval import compare

    diff = compare(base, tuned).deltas["optimal_move_rate"]
    return {"optimal_move_rate": _iv(diff.candidate), "diff_vs_base": _iv(diff.diff), "top_answer_share": _top_answer_share(tuned.per_maze)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-4, 5e-4, 1e-3, 3e-3], help="learning rates to try")
    parser.add_argument("--steps", type=int, default=300, help="GRPO steps per learning rate")
    parser.add_argument("--mazes-per-step", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--train-mazes", type=int, default=2000)
    parser.add_argument("--heldout", type=int, default=200, help="held-out mazes, evaluated once, for the chosen learning rate (greedy)")
    parser.add_argument("--validation", type=int, default=200, help="validation mazes the learning rate is chosen on (greedy)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK}")
    args = parser.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)

    home = Path(tempfile.mkdtemp(prefix="hprl-bench-lr-"))
    os.environ["HYPERPOD_RL_HOME"] = str(home)  # nothing lands in the user's data dir or ledger
    os.environ["HYPERPOD_RL_LEDGER"] = "off"

    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.eval import compare, evaluate
    from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows
    from hyperpod_rl.train.reference import ReferenceTrainer

    name = "lr_sweep_quick" if args.quick else "lr_sweep"
    with Recording(name, params=vars(args)) as rec:
        opts = QuickstartOptions.build(
            seed=args.seed,
            max_turns=1,
            prompts_per_step=args.mazes_per_step,
            group_size=args.group_size,
            train_rows=args.train_mazes,
            heldout_rows=args.heldout,
            validation_rows=args.validation,
            steps=args.steps,
            serve=False,
        )
        storage = home / "storage"
        data = prepare_dataset(opts, storage)
        model_dir, revision = prepare_base_model(opts, storage, read_rows(data.train))
        assert data.validation is not None  # validation_rows > 0
        validation = read_rows(data.validation)
        base = evaluate(model_dir, validation, label="base")
        print(f"base model: validation optimal-move rate {base.metrics['optimal_move_rate']:.3f} ({len(validation)} mazes, first move)")
        runs, adapters = [], {}
        for lr in args.lrs:
            cfg = make_run_config(
                opts.model_copy(update={"lr": lr}),
                run_id="lr-" + format(lr, ".1e").replace(".", "p").replace("+", ""),
                model_path=model_dir,
                revision=revision,
                data=data,
            )
            raw = cfg.model_dump(mode="json")
            raw["trainer"]["eval_rows"] = 1  # the base model is evaluated once, above, on every held-out maze
            raw["checkpoint"]["interval"] = args.steps  # no checkpoint before the end
            cfg = RunConfig.build(raw)
            run_dir = storage / "runs" / cfg.run_id
            adapters[lr] = adapter = ReferenceTrainer(cfg, run_dir).train()
            tuned = evaluate(model_dir, validation, adapter_path=adapter, label=f"lr {lr:g}")
            entropy = _entropy_curve(run_dir / "metrics.jsonl", every=max(args.steps // 10, 1))
            runs.append({"lr": lr, **_figures(base, tuned), "entropy_curve": entropy, "final_entropy": entropy[-1][1]})
            r = runs[-1]
            print(
                f"lr {lr:g}: validation optimal-move rate {r['optimal_move_rate']['value']:.3f} "
                f"(Δ {r['diff_vs_base']['value']:+.3f} [{r['diff_vs_base']['low']:+.3f}, {r['diff_vs_base']['high']:+.3f}]); "
                f"entropy {entropy[0][1]:.2f} -> {r['final_entropy']:.2f}; most common answer on {r['top_answer_share']:.0%} of mazes",
                flush=True,
            )
        chosen = max(runs, key=lambda run: run["optimal_move_rate"]["value"])["lr"]
        heldout = read_rows(data.heldout)  # read once, for the chosen learning rate only
        base_heldout = evaluate(model_dir, heldout, label="base")
        final = evaluate(model_dir, heldout, adapter_path=adapters[chosen], label=f"lr {chosen:g}")
        report = {"lr": chosen, **_figures(base_heldout, final)}
        print(
            f"chosen on validation: lr {chosen:g}; held-out optimal-move rate {report['optimal_move_rate']['value']:.3f} "
            f"(Δ {report['diff_vs_base']['value']:+.3f} [{report['diff_vs_base']['low']:+.3f}, {report['diff_vs_base']['high']:+.3f}])",
            flush=True,
        )
        rec.results = {
            "task": "first move (max_turns=1)",
            "selection": "validation",
            "validation_mazes": len(validation),
            "base_optimal_move_rate": _iv(compare(base, base).deltas["optimal_move_rate"].base),
            "base_top_answer_share": _top_answer_share(base.per_maze),
            "runs": runs,
            "chosen_lr": chosen,
            "heldout_mazes": len(heldout),
            "heldout_base_optimal_move_rate": _iv(compare(base_heldout, base_heldout).deltas["optimal_move_rate"].base),
            "heldout": report,
        }
    print(json.dumps(rec.results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
