"""Interface-navigation env steps per second on one CPU core, against a naive baseline in the same run.

Workload (GRPO-like): ``--apps`` apps of the default dataset (small 320x224-px windows, 70 vision
tokens, four themes, menu depth 1..2, toggle and form goals), each played by a group of
``--group`` rollouts of a random policy for the default turn limit. The policy's completions
(seeded) mix label clicks on visible elements (60 %), coordinate clicks (20 %, some outside the
image), ``back`` (10 %), typing (5 %) and malformed text (5 %). Every step parses the completion,
applies it, scores it (breadth-first-search distance) and builds the next observation message
with a base64 PNG image part.

Figures:

* ``rendered_steps_per_s``: ``UINavEnv.step`` as shipped (distance map per app, layout and static
  screen layer per (app, screen, style), PNG bytes per shown state: all cached).
* ``rendered_cold_png_steps_per_s``: the same with the PNG cache cleared before every step (every
  step draws the values and encodes a PNG).
* ``unrendered_steps_per_s``: parse + apply + reward (``score_step``), no observation.
* ``naive_rendered_steps_per_s``: the same env step with *every* cache cleared before every step:
  a fresh breadth-first search of the state graph, a fresh layout, a full redraw and a PNG encode.

Writes ``benchmarks/results/ui_nav_env_throughput.json`` (see :mod:`benchmarks._record`) and prints
one JSON object with every figure as its last line. Run from the repository root:
``python -m benchmarks.ui_nav_env_throughput``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Callable
from typing import Any

from benchmarks._record import Recording


def _policy(seed: int) -> Callable[[Any], str]:
    from hyperpod_rl.tasks.ui_nav import visible_elements

    rng = random.Random(seed)

    def act(env: Any) -> str:
        u = rng.random()
        if u < 0.6:
            el = rng.choice(visible_elements(env.app, env.state))
            return f'I will click it.\n<answer>click "{el.label}"</answer>'
        if u < 0.8:
            x = rng.randint(-20, env.style.width_px + 20)
            y = rng.randint(-20, env.style.height_px + 20)
            return f"<answer>click ({x}, {y})</answer>"
        if u < 0.9:
            return "<answer>back</answer>"
        if u < 0.95:
            return f'<answer>type "{rng.choice(("Ada", "Oslo", "x"))}"</answer>'
        return rng.choice(("", "click Save", "<answer>tap OK</answer>", "<answer>click</answer>"))

    return act


def _clear(*, all_caches: bool) -> None:
    from hyperpod_rl.tasks.ui_nav import app as app_mod
    from hyperpod_rl.tasks.ui_nav import render as render_mod

    render_mod._png.cache_clear()
    if all_caches:
        render_mod._layout.cache_clear()
        render_mod._static.cache_clear()
        app_mod._distance_map.cache_clear()


def bench_env(rows: list[dict[str, Any]], group: int, seed: int, clear: str | None) -> tuple[int, float]:
    """Play every app ``group`` times through UINavEnv.step; returns (steps, seconds)."""
    from hyperpod_rl.tasks.ui_nav.env import UINavEnv

    act = _policy(seed)
    steps = 0
    start = time.perf_counter()
    for row in rows:
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        for _ in range(group):
            env = UINavEnv(env_config=None, extras=extras)
            done = False
            while not done:
                text = act(env)
                if clear is not None:
                    _clear(all_caches=clear == "all")
                done = env.step(text)["done"]
                steps += 1
    return steps, time.perf_counter() - start


def bench_core(rows: list[dict[str, Any]], group: int, seed: int) -> tuple[int, float]:
    """Parse + apply + reward only (no observation)."""
    from hyperpod_rl.tasks.ui_nav import initial_state, score_step
    from hyperpod_rl.tasks.ui_nav.env import UINavEnv

    act = _policy(seed)
    envs = [UINavEnv(env_config=None, extras={k: v for k, v in r.items() if k not in ("prompt", "env_class")}) for r in rows]
    steps = 0
    start = time.perf_counter()
    for env in envs:
        for _ in range(group):
            env.state, turn = initial_state(env.app), 0
            while True:
                out = score_step(env.app, env.state, act(env), env.style)
                env.state, turn, steps = out.state_after, turn + 1, steps + 1
                if out.solved or turn >= env.max_turns:
                    break
    return steps, time.perf_counter() - start


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of the module docstring, on the workload ``args`` describes."""
    from hyperpod_rl.tasks.ui_nav import DatasetSpec, build_dataset

    rows = build_dataset(DatasetSpec(seed=args.seed, counts={"train": args.apps}))["train"]
    bench_env(rows[:2], 1, args.seed, None)  # warm imports and code paths
    _clear(all_caches=True)
    results: dict[str, Any] = {}
    steps, secs = bench_env(rows, args.group, args.seed, None)
    results["rendered_steps_per_s"] = round(steps / secs, 1)
    results["steps_per_run"] = steps
    steps, secs = bench_env(rows, args.group, args.seed, "png")
    results["rendered_cold_png_steps_per_s"] = round(steps / secs, 1)
    steps, secs = bench_core(rows, args.group, args.seed)
    results["unrendered_steps_per_s"] = round(steps / secs, 1)
    steps, secs = bench_env(rows, args.group, args.seed, "all")
    results["naive_rendered_steps_per_s"] = round(steps / secs, 1)
    results["speedup_vs_naive"] = round(results["rendered_steps_per_s"] / results["naive_rendered_steps_per_s"], 2)
    results["cold_png_speedup_vs_naive"] = round(results["rendered_cold_png_steps_per_s"] / results["naive_rendered_steps_per_s"], 2)
    results.update(image_px="320x224", image_tokens=70, apps=args.apps, group=args.group)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=64, help="distinct apps")
    parser.add_argument("--group", type=int, default=8, help="rollouts per app (GRPO group size)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    with Recording("ui_nav_env_throughput", params={**vars(args), "pinned_to_one_core": hasattr(os, "sched_setaffinity")}) as rec:
        rec.results = measure(args)
        for key in ("rendered_steps_per_s", "rendered_cold_png_steps_per_s", "unrendered_steps_per_s", "naive_rendered_steps_per_s"):
            print(f"{key:32s} {rec.results[key]:>12,.1f}")
        print(
            f"speed-up over the naive pipeline: {rec.results['speedup_vs_naive']}x (cold PNG: {rec.results['cold_png_speedup_vs_naive']}x)"
        )
    print(json.dumps(rec.results, sort_keys=True))


if __name__ == "__main__":
    main()
