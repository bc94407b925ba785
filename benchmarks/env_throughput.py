"""Maze env steps per second on one CPU core.

Workload (GRPO-like): ``--mazes`` mazes of the default dataset size (5x5 cells, 160x160 px,
25 vision tokens), each played by a group of ``--group`` rollouts of a random policy with the
default turn limit; every step parses a completion, moves, scores and (when rendering) builds the
next observation message with a base64 PNG image part.

Figures:

* ``rendered_steps_per_s``: ``MazeEnv.step`` as shipped (incremental renderer: walls drawn once
  per maze, PNG bytes cached per (maze, agent cell, style)).
* ``rendered_cold_png_steps_per_s``: the same with the PNG cache cleared before every step, so
  every step draws the agent and encodes a PNG (the incremental renderer alone).
* ``unrendered_steps_per_s``: parse + move + reward (``score_step``), no observation.
* ``naive_rendered_steps_per_s``: parse + move + reward, then redraw the whole image from scratch,
  encode it as an RGB PNG and base64 on every step (no caches, no palette).

It prints each figure, writes ``benchmarks/results/env_throughput.json`` (figures plus git commit,
packages, machine, date and load average, see :mod:`benchmarks._record`), and prints one JSON
object with every figure as its last line. Run from the repository root:
``python -m benchmarks.env_throughput``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import time
from collections.abc import Callable

from PIL import ImageDraw

from benchmarks._record import Recording
from hyperpod_rl.tasks.maze import DIRECTIONS, DatasetSpec, Maze, MazeEnv, build_dataset, score_step
from hyperpod_rl.tasks.maze import render as render_mod
from hyperpod_rl.tasks.maze.render import RenderStyle, encode_png

TARGET_RENDERED = 1_000
TARGET_UNRENDERED = 20_000


def _completions(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        move = rng.choice(DIRECTIONS)
        texts.append(f"The agent should go {move} next.\n<answer>{move}</answer>")
    return texts


def _episodes(mazes: list[Maze], group: int) -> list[Maze]:
    return [m for m in mazes for _ in range(group)]


def bench_env(rows: list[dict], group: int, completions: list[str], *, cold_png: bool) -> tuple[int, float]:
    """Play every maze ``group`` times through MazeEnv.step; return (steps, seconds)."""
    steps, i = 0, 0
    start = time.perf_counter()
    for row in rows:
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        for _ in range(group):
            env = MazeEnv(env_config=None, extras=extras)
            done = False
            while not done:
                if cold_png:
                    render_mod.render_png.cache_clear()
                out = env.step(completions[i % len(completions)])
                done = out["done"]
                i += 1
                steps += 1
    return steps, time.perf_counter() - start


def _naive_observation(maze: Maze, agent: tuple[int, int], style: RenderStyle) -> dict:
    img = render_mod._base_image.__wrapped__(maze, style)  # full redraw: every wall, every step
    width, height = img.size
    ox = (width - (maze.cols * style.cell_px + style.wall_px)) // 2
    oy = (height - (maze.rows * style.cell_px + style.wall_px)) // 2
    ImageDraw.Draw(img).ellipse(list(render_mod._marker_box(maze, style, agent, ox, oy)), fill=render_mod._AGENT)
    rgb = img.convert("RGB")  # the straightforward pipeline: an RGB image, encoded as RGB PNG
    url = "data:image/png;base64," + base64.b64encode(encode_png(rgb)).decode("ascii")
    return {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "ok"}],
    }


def bench_core(mazes: list[Maze], group: int, completions: list[str], max_turns: list[int], observe: Callable | None) -> tuple[int, float]:
    """parse + move + reward per step, plus ``observe(maze, agent)`` when given."""
    style = RenderStyle()
    steps, i = 0, 0
    start = time.perf_counter()
    for maze, limit in zip(mazes, max_turns, strict=True):
        for _ in range(group):
            cell, turn = maze.start, 0
            while True:
                out = score_step(maze, cell, completions[i % len(completions)])
                cell, turn, i, steps = out.cell_after, turn + 1, i + 1, steps + 1
                if out.solved or turn >= limit:
                    break
                if observe is not None:
                    observe(maze, cell, style)
    return steps, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mazes", type=int, default=64, help="distinct mazes")
    parser.add_argument("--group", type=int, default=8, help="rollouts per maze (GRPO group size)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    with Recording("env_throughput", params={**vars(args), "pinned_to_one_core": hasattr(os, "sched_setaffinity")}) as rec:
        results = measure(args)
        rec.results = results
        for key in (
            "rendered_steps_per_s",
            "rendered_cold_png_steps_per_s",
            "unrendered_steps_per_s",
            "naive_rendered_steps_per_s",
        ):
            target = TARGET_UNRENDERED if key.startswith("unrendered") else TARGET_RENDERED
            flag = "" if key.startswith("naive") else f"  (target >= {target}: {'met' if results[key] >= target else 'MISSED'})"
            print(f"{key:32s} {results[key]:>12,.1f}{flag}")
        print(f"speed-up over the naive pipeline: {results['speedup_vs_naive']}x (cold PNG: {results['cold_png_speedup_vs_naive']}x)")
    print(json.dumps(results, sort_keys=True))


def measure(args: argparse.Namespace) -> dict[str, float | int | str]:
    """Every figure of the module docstring, on the workload ``args`` describes."""
    rows = build_dataset(DatasetSpec(seed=args.seed, counts={"train": args.mazes}))["train"]
    mazes = [Maze.from_json(r["maze"]) for r in rows]
    limits = [r["max_turns"] for r in rows]
    completions = _completions(args.seed, 4096)
    width, height = render_mod.image_size_px(5, 5)

    # Warm imports and code paths once, then measure.
    bench_core(mazes[:2], 1, completions, limits[:2], None)
    results: dict[str, float | int | str] = {}
    render_mod.render_png.cache_clear()
    render_mod._base_image.cache_clear()
    steps, secs = bench_env(rows, args.group, completions, cold_png=False)
    results["rendered_steps_per_s"] = round(steps / secs, 1)
    steps, secs = bench_env(rows, args.group, completions, cold_png=True)
    results["rendered_cold_png_steps_per_s"] = round(steps / secs, 1)
    steps, secs = bench_core(mazes, args.group, completions, limits, None)
    results["unrendered_steps_per_s"] = round(steps / secs, 1)
    steps, secs = bench_core(mazes, args.group, completions, limits, _naive_observation)
    results["naive_rendered_steps_per_s"] = round(steps / secs, 1)
    results["speedup_vs_naive"] = round(results["rendered_steps_per_s"] / results["naive_rendered_steps_per_s"], 2)
    results["cold_png_speedup_vs_naive"] = round(results["rendered_cold_png_steps_per_s"] / results["naive_rendered_steps_per_s"], 2)
    results.update(image_px=f"{width}x{height}", mazes=args.mazes, group=args.group, steps_per_run=steps)
    return results


if __name__ == "__main__":
    main()
