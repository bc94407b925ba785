"""The SFT warm start's settings, chosen on the validation split (issue 29, scope 4).

Usage (repository root)::

    python -m benchmarks.sft_sweep                 # the grid below, seeds 0 1 2
    python -m benchmarks.sft_sweep --lrs 5e-4 1e-3 --steps 300 450 --seeds 0 1 2 --grpo-steps 200 --jobs 12

Workload: the quickstart's own data and tiny random-init Qwen3-VL (3x3..5x5 mazes, turn limit 6,
its default options), an SFT warm start per (learning rate, steps) cell of the grid and seed,
trained by :class:`hyperpod_rl.train.sft.SFTTrainer` (the trainer a ``stage: sft`` Ray Job runs;
no cluster: the sweep measures learning, not the job system). Every cell of a seed starts from the
same base model and data (rebuilt from the seed, byte for byte, in each cell's own directory).
``--jobs N`` trains N cells at once, each in its own process with ``cores / N`` torch threads (the cores it may use: its CPU affinity).

Selection on validation only: each adapter is evaluated greedily on the validation split
(``--validation`` mazes, disjoint from train and held-out by layout hash); the cell with the best
mean validation solve rate over the seeds (ties: optimal-move rate, then fewer steps) is chosen.
The held-out split is not read here: the quickstart benchmark (:mod:`benchmarks.quickstart`)
reports it once, with the chosen settings as the quickstart's defaults.

Figures per cell and seed: validation solve rate and optimal-move rate with 95% bootstrap
intervals and the paired difference from the base model's (measured in the same run), the SFT
loss at the last step, and the training seconds. With ``--grpo-steps N``, GRPO then trains from each
seed's chosen SFT adapter with the quickstart's GRPO settings (the quickstart's second stage) and
is scored on validation too, paired against its SFT start, in each GRPO cell: a ``--grpo-lrs``
learning rate or a ``--grpo-cell`` set of run-config fields (the quickstart's settings by default);
the result gives each cell's mean over the seeds (``grpo_cells``), and each GRPO run's training
signal (the share of tied groups, the sampled reward over its first and last tenth of steps).

What limits the tiny model: ``--tiny HIDDENxLAYERS`` sizes the tiny model's text decoder
(capacity), ``--options SETTINGS`` sets other quickstart options of the data and base model (its
vision tower, the maze's cell size in pixels),
``--train-eval N`` scores each SFT adapter on N of its own train mazes too (fit against
generalisation), ``--set SETTINGS`` sets run-config fields on every SFT and GRPO run. Writes
``benchmarks/results/NAME.json`` (``--name``, default ``sft_sweep``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from benchmarks._record import Recording, usable_cores
from benchmarks._sweep import Seeded, cell_config, iv, parse_settings, seeded


def _tiny(spec: str) -> dict[str, int]:
    """``"256x4"`` as the quickstart's tiny-model options (text hidden size x decoder layers)."""
    hidden, sep, layers = spec.partition("x")
    if not sep or not hidden.isdigit() or not layers.isdigit():
        raise argparse.ArgumentTypeError(f"--tiny {spec!r} is not HIDDENxLAYERS (e.g. 256x4)")
    return {"tiny_hidden_size": int(hidden), "tiny_layers": int(layers)}


def task_label(tiny: dict[str, int], options: dict[str, Any]) -> str:
    """The workload a result describes: ``maze (quickstart defaults)``, or the quickstart options
    ``--tiny`` and ``--options`` changed from them, e.g. ``maze (quickstart defaults but cell_px=48)``."""
    from hyperpod_rl.quickstart import QuickstartOptions

    defaults = QuickstartOptions()
    changed = {k: v for k, v in {**tiny, **options}.items() if getattr(defaults, k) != v}
    if not changed:
        return "maze (quickstart defaults)"
    return "maze (quickstart defaults but " + ", ".join(f"{k}={v}" for k, v in sorted(changed.items())) + ")"


def _seeded(seed: int, args: argparse.Namespace, home: str, threads: int, where: str) -> Seeded:
    from hyperpod_rl.quickstart import QuickstartOptions

    opts = QuickstartOptions.build(seed=seed, validation_rows=args.validation, serve=False, **args.tiny, **args.options)
    return seeded(opts, home, where, threads)


def _step_values(run_dir: Path) -> list[dict[str, Any]]:
    """Each step's metric values of a run (its ``metrics.jsonl``), in step order."""
    from hyperpod_rl.metrics import read_metrics

    return [dict(record.values) for record in read_metrics(run_dir / "metrics.jsonl")]


def _sft_cell(seed: int, lr: float, steps: int, args: argparse.Namespace, home: str, threads: int) -> dict[str, Any]:
    from hyperpod_rl.eval import compare, evaluate
    from hyperpod_rl.train.sft import SFTTrainer

    run_id = f"sft-s{seed}-{steps}-" + format(lr, ".0e").replace("-", "m").replace("+", "")
    s = _seeded(seed, args, home, threads, run_id)
    opts = s.opts.model_copy(update={"sft_lr": lr, "sft_steps": steps, "sft_rows_per_step": args.rows_per_step})
    cfg = cell_config(s, opts, run_id=run_id, steps=steps, stage="sft", settings=args.set)
    run_dir = s.storage / "runs" / run_id
    t0 = time.perf_counter()
    adapter = SFTTrainer(cfg, run_dir).train()
    seconds = round(time.perf_counter() - t0, 1)
    base = s.base
    deltas = compare(base, evaluate(s.model_dir, s.validation, adapter_path=adapter, label=run_id)).deltas
    last = _step_values(run_dir)[-1]
    fit = {}
    if args.train_eval:  # the fit on mazes it was trained on, beside validation: capacity or generalisation
        from hyperpod_rl.tasks.maze import read_rows

        train = evaluate(s.model_dir, read_rows(s.data.train)[: args.train_eval], adapter_path=adapter, label="train")
        fit = {
            "train_solve_rate": round(train.metrics["solve_rate"], 4),
            "train_optimal_move_rate": round(train.metrics["optimal_move_rate"], 4),
        }
    return {
        "seed": seed,
        "lr": lr,
        "steps": steps,
        "base_solve_rate": round(base.metrics["solve_rate"], 4),
        "solve_rate": iv(deltas["solve_rate"].candidate),
        "solve_rate_diff_vs_base": iv(deltas["solve_rate"].diff),
        "optimal_move_rate": iv(deltas["optimal_move_rate"].candidate),
        "final_loss": round(last["sft/loss"], 4),
        **fit,
        "train_s": seconds,
        "adapter": str(adapter),
    }


def _grpo_cell(
    seed: int, start: str, index: int, settings: dict[str, Any], grpo_steps: int, args: argparse.Namespace, home: str, threads: int
) -> dict[str, Any]:
    from hyperpod_rl.eval import compare, evaluate
    from hyperpod_rl.train.reference import ReferenceTrainer

    run_id = f"grpo-s{seed}-c{index}"
    s = _seeded(seed, args, home, threads, run_id)
    opts = s.opts.model_copy(update={"steps": grpo_steps})
    cfg = cell_config(s, opts, run_id=run_id, steps=grpo_steps, settings={**args.set, **settings}, init_adapter=Path(start))
    run_dir = s.storage / "runs" / run_id
    t0 = time.perf_counter()
    adapter = ReferenceTrainer(cfg, run_dir).train()
    seconds = round(time.perf_counter() - t0, 1)
    steps = [v for v in _step_values(run_dir) if "reward/avg_raw_reward" in v]
    tenth = max(1, len(steps) // 10)
    sft = evaluate(s.model_dir, s.validation, adapter_path=start, label="sft")
    deltas = compare(sft, evaluate(s.model_dir, s.validation, adapter_path=adapter, label="grpo")).deltas
    return {
        "seed": seed,
        "cell": index,
        "settings": settings,
        "lr": cfg.grpo.lr,
        "solve_rate": iv(deltas["solve_rate"].candidate),
        "solve_rate_diff_vs_sft": iv(deltas["solve_rate"].diff),
        "optimal_move_rate": iv(deltas["optimal_move_rate"].candidate),
        # the training signal: the share of groups whose rewards all tie (no advantage), and the
        # sampled reward over the first and the last tenth of the steps
        "tied_group_share": round(statistics.mean(v.get("reward/tied_group_share", 0.0) for v in steps), 4),
        "sampled_reward_first": round(statistics.mean(v["reward/avg_raw_reward"] for v in steps[:tenth]), 4),
        "sampled_reward_last": round(statistics.mean(v["reward/avg_raw_reward"] for v in steps[-tenth:]), 4),
        "train_s": seconds,
    }


def _grpo_settings(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The GRPO cells: one per ``--grpo-lrs`` value, then one per ``--grpo-cell``; the quickstart's own
    settings (``{}``) when neither is given."""
    cells = [{"grpo.lr": lr} for lr in args.grpo_lrs or []] + [parse_settings(spec) for spec in args.grpo_cell or []]
    return cells or [{}]


def _grpo_summary(runs: list[dict[str, Any]], settings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per GRPO cell: its settings, the mean validation solve rate and the mean paired Δ against the
    SFT start over the seeds that finished, and each seed's run."""
    out = []
    for index, cell in enumerate(settings):
        mine = sorted((r for r in runs if r["cell"] == index), key=lambda r: r["seed"])
        if mine:
            out.append(
                {
                    "cell": index,
                    "settings": cell,
                    "mean_solve_rate": round(statistics.mean(r["solve_rate"]["value"] for r in mine), 4),
                    "mean_diff_vs_sft": round(statistics.mean(r["solve_rate_diff_vs_sft"]["value"] for r in mine), 4),
                    "seeds": [r["seed"] for r in mine],
                }
            )
    return out


def _grpo_runs(
    starts: list[tuple[dict[str, Any], int]],
    settings: list[dict[str, Any]],
    args: argparse.Namespace,
    home: str,
    threads: int,
    jobs: int,
    grpo: list[dict[str, Any]],
) -> None:
    """Run the GRPO cells ``jobs`` at a time, appending each run to ``grpo`` as it finishes."""
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(_grpo_cell, c["seed"], c["adapter"], i, settings[i], args.grpo_steps, args, home, threads) for c, i in starts
        ]
        # each run is kept as it finishes: an interrupted sweep records the finished ones
        for future in as_completed(futures):
            g = future.result()
            grpo.append(g)
            d = g["solve_rate_diff_vs_sft"]
            print(
                f"seed {g['seed']}: GRPO {args.grpo_steps} steps {g['settings'] or 'quickstart settings'} from the SFT adapter: "
                f"validation solve {g['solve_rate']['value']:.3f} (Δ vs SFT {d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]), "
                f"{g['train_s']:.0f} s",
                flush=True,
            )


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Refuse bad options, settings and cells before anything trains (a typo in a GRPO cell would
    otherwise fail only after the whole SFT grid): each through the config that will take it."""
    from hyperpod_rl.config.presets import with_overrides
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.errors import HyperpodRLError
    from hyperpod_rl.quickstart import QuickstartOptions

    if args.validation < 1:
        parser.error("--validation must be >= 1: the settings are chosen on validation mazes")
    try:
        QuickstartOptions.build(validation_rows=args.validation, serve=False, **args.tiny, **args.options)
        data = {"train_path": "train.parquet", "heldout_path": "heldout.parquet"}  # checked here, not read
        raw = RunConfig.build({"run_id": "sweep-check", "backend": "reference", "data": data}).model_dump(mode="json")
        for lr in args.lrs:
            for steps in args.steps:
                RunConfig.build(with_overrides(raw, {**args.set, "stage": "sft", "sft.lr": lr, "trainer.steps": steps}))
        for cell in _grpo_settings(args) if args.grpo_steps else []:
            RunConfig.build(with_overrides(raw, {**args.set, "trainer.steps": args.grpo_steps, **cell}))
    except HyperpodRLError as err:
        parser.error(str(err))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lrs", type=float, nargs="+", default=[5e-4, 1e-3, 3e-3], help="SFT learning rates to try")
    parser.add_argument("--steps", type=int, nargs="+", default=[150, 300, 450], help="SFT step counts to try")
    parser.add_argument("--rows-per-step", type=int, default=8, help="mazes per SFT step (sft.rows_per_step)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds (data, model and training)")
    parser.add_argument("--validation", type=int, default=200, help="validation mazes the settings are chosen on (greedy)")
    parser.add_argument(
        "--grpo-steps",
        type=int,
        default=0,
        help="then GRPO from each seed's chosen SFT adapter for this many steps (quickstart settings); 0: none",
    )
    parser.add_argument("--grpo-lrs", type=float, nargs="+", help="GRPO learning rates from the chosen start, one cell each")
    parser.add_argument(
        "--grpo-cell",
        action="append",
        metavar="SETTINGS",
        help="a GRPO cell from the chosen start: run-config fields by dotted path, e.g. "
        "'grpo.lr=1e-4,grpo.entropy_coef=0,grpo.advantage=outcome' (repeatable; neither this nor --grpo-lrs: the quickstart's settings)",
    )
    parser.add_argument(
        "--tiny", type=_tiny, default=_tiny("128x2"), metavar="HIDDENxLAYERS", help="the tiny model's text hidden size and layers"
    )
    parser.add_argument(
        "--options",
        type=parse_settings,
        default={},
        metavar="SETTINGS",
        help="quickstart options of the data and base model, e.g. 'tiny_vision_hidden_size=128,tiny_vision_depth=4,cell_px=60'",
    )
    parser.add_argument(
        "--set",
        type=parse_settings,
        default={},
        metavar="SETTINGS",
        help="run-config fields by dotted path for every SFT and GRPO run, e.g. 'trainer.dtype=float32'",
    )
    parser.add_argument("--train-eval", type=int, default=0, help="also score each SFT adapter on this many of its train mazes")
    parser.add_argument("--name", default="sft_sweep", help="result name: benchmarks/results/NAME.json")
    parser.add_argument("--jobs", type=int, default=1, help="cells trained at once, each in its own process")
    args = parser.parse_args()
    _check(args, parser)
    with tempfile.TemporaryDirectory(prefix="hprl-bench-sft-") as home:  # the cells' data, models and runs
        return _sweep(args, home)


def _sweep(args: argparse.Namespace, home: str) -> int:
    """Train and score the grid (and the GRPO cells) under ``home``; record the result."""
    os.environ["HYPERPOD_RL_HOME"] = home
    os.environ["HYPERPOD_RL_LEDGER"] = "off"
    jobs = max(args.jobs, 1)
    with Recording(args.name, params=vars(args)) as rec:
        # longest cells first, so the last wave of workers is not one long cell alone
        grid = sorted(((seed, lr, steps) for seed in args.seeds for lr in args.lrs for steps in args.steps), key=lambda c: -c[2])
        threads = max(1, usable_cores() // min(jobs, len(grid)))
        done: list[dict[str, Any]] = []
        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(_sft_cell, seed, lr, steps, args, home, threads) for seed, lr, steps in grid]
                for future in as_completed(futures):
                    done.append(future.result())
        except KeyboardInterrupt:  # timeout -s INT: the SFT runs that finished are recorded, no GRPO stage
            rec.notes = f"interrupted (SIGINT) after {len(done)} of {len(grid)} SFT runs; the finished ones are recorded"
            print(rec.notes, flush=True)
        for c in sorted(done, key=lambda c: (c["seed"], c["lr"], c["steps"])):
            print(
                f"seed {c['seed']}, lr {c['lr']:g}, {c['steps']} steps: validation solve {c['solve_rate']['value']:.3f} "
                f"[{c['solve_rate']['low']:.3f}, {c['solve_rate']['high']:.3f}], optimal move {c['optimal_move_rate']['value']:.3f}, "
                f"loss {c['final_loss']:.3f}, {c['train_s']:.0f} s",
                flush=True,
            )
        cells = {(lr, steps): [c for c in done if (c["lr"], c["steps"]) == (lr, steps)] for lr in args.lrs for steps in args.steps}
        cells = {key: runs for key, runs in cells.items() if runs}  # an interrupted grid: the cells with a finished run
        if not cells:
            return 1

        def score(key: tuple[float, int]) -> tuple[float, float, int]:
            runs = cells[key]
            return (
                statistics.mean(r["solve_rate"]["value"] for r in runs),
                statistics.mean(r["optimal_move_rate"]["value"] for r in runs),
                -key[1],
            )

        chosen = max(cells, key=score)
        print(
            f"chosen on validation: sft_lr {chosen[0]:g}, sft_steps {chosen[1]} (mean validation solve rate {score(chosen)[0]:.3f})",
            flush=True,
        )
        # recorded before the GRPO stage: an interrupted run (timeout -s INT) still writes the SFT grid
        rec.results = {
            "task": task_label(args.tiny, args.options),
            "selection": "validation (mean solve rate over seeds)",
            "validation_mazes": args.validation,
            "base": [{"seed": c["seed"], "solve_rate": c["base_solve_rate"]} for c in cells[chosen]],
            "cells": [
                {
                    "lr": lr,
                    "steps": steps,
                    "mean_solve_rate": round(score((lr, steps))[0], 4),
                    "mean_optimal_move_rate": round(score((lr, steps))[1], 4),
                    "seeds": [{k: v for k, v in r.items() if k != "adapter"} for r in runs],
                }
                for (lr, steps), runs in cells.items()
            ],
            "chosen": {"sft_lr": chosen[0], "sft_steps": chosen[1]},
        }
        grpo: list[dict[str, Any]] = []
        rec.results["grpo_from_chosen"] = grpo
        if args.grpo_steps and len(done) == len(grid):
            settings = _grpo_settings(args)
            starts = [(c, i) for i in range(len(settings)) for c in cells[chosen]]
            threads = max(1, usable_cores() // min(jobs, len(starts)))
            try:
                _grpo_runs(starts, settings, args, home, threads, jobs, grpo)
            except KeyboardInterrupt:  # timeout -s INT: the runs that finished are recorded
                rec.notes = f"interrupted (SIGINT) after {len(grpo)} of {len(starts)} GRPO runs; the finished ones are recorded"
                print(rec.notes, flush=True)
            grpo.sort(key=lambda g: (g["cell"], g["seed"]))
            rec.results["grpo_cells"] = _grpo_summary(grpo, settings)
            for cell in rec.results["grpo_cells"]:
                print(
                    f"GRPO cell {cell['settings'] or 'quickstart settings'}: mean validation solve {cell['mean_solve_rate']:.3f}, "
                    f"mean Δ vs SFT {cell['mean_diff_vs_sft']:+.3f} (seeds {cell['seeds']})",
                    flush=True,
                )
    print(json.dumps(rec.results["chosen"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
