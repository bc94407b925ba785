"""Document-reading env throughput on one CPU core: rendered samples per second, against a naive pipeline.

Workload: ``--samples`` distinct samples of the default dataset (train split: 2-6 table rows, rotation
within +-2 degrees, noise sigma up to 12, at most 512 vision tokens), each answered by a group of
``--group`` completions (GRPO-like: one page, several answers).

Figures:

* ``rendered_samples_per_s``: the shipped pipeline, from nothing to a scored group: generate the
  document and question, render (cached fonts and text masks, greyscale page, ``Image.effect_noise``),
  size (qwen-vl-utils rules), encode a greyscale PNG, build the prompt with its base64 image part,
  build the env (:func:`hyperpod_rl.tasks.make_env`), ``init`` and ``step`` every completion of the group.
* ``naive_rendered_samples_per_s``: the same samples and scoring, rendered the straightforward way:
  an RGB page, the font decoded for every text drawn (``ImageFont.load_default(size=...)`` per call),
  text masks never cached, NumPy Gaussian noise, bicubic rotation, Lanczos resize, RGB PNG at
  Pillow's default compression.
* ``scoring_steps_per_s``: ``DocReadEnv.step`` alone (parse, normalise, reward) on pre-built rows.

Prints each figure, writes ``benchmarks/results/doc_read_throughput.json`` (git commit, packages,
machine, date, load average; :mod:`benchmarks._record`) and prints one JSON line. Run from the
repository root: ``python -m benchmarks.doc_read_throughput``.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import time
from typing import Any

from benchmarks._record import Recording


def _completions(rows: list[dict[str, Any]], group: int, seed: int) -> list[list[str]]:
    """Per row: ``group`` answers, half right (the row's canonical answer), half a wrong one."""
    rng = random.Random(seed)
    out = []
    for row in rows:
        answers = []
        for g in range(group):
            text = row["answer"] if g % 2 == 0 else rng.choice(["12", "no", "2025-01-01", "$1,000.00", "Desk lamp"])
            answers.append(f"Reading the page.\n<answer>{text}</answer>")
        out.append(answers)
    return out


def _shipped(spec: Any, n: int, completions: list[list[str]]) -> float:
    from hyperpod_rl.tasks import make_env
    from hyperpod_rl.tasks.doc_read.dataset import draw_sample, make_row

    start = time.perf_counter()
    for i, answers in zip(range(n), completions, strict=True):
        doc, question, style = draw_sample(spec, "train", i)
        row = make_row(spec, "train", doc, question, style, "s", "h")
        for answer in answers:
            env = make_env("doc_read", row)
            env.init(row["prompt"])
            env.step(answer)
    return time.perf_counter() - start


def _naive_png(doc: Any, style: Any, max_image_tokens: int) -> bytes:
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    from hyperpod_rl.tasks.doc_read import render as r
    from hyperpod_rl.tasks.doc_read.templates import template

    lay = r._layout(doc, template(doc.template), style.font_scale)  # no layout cache
    paper, ink = (style.paper,) * 3, (style.ink,) * 3
    img = Image.new("RGB", (lay.width, lay.height), paper)
    draw = ImageDraw.Draw(img)
    for x0, y0, x1, y1, shade in lay.rects:
        draw.rectangle((x0, y0, x1, y1), fill=(max(0, style.paper + shade),) * 3)
    for x0, y0, x1, y1 in lay.lines:
        draw.line((x0, y0, x1, y1), fill=ink, width=1)
    for x, y, text, face in lay.texts:
        if face.name in ("sans", "bold"):
            font = ImageFont.load_default(size=face.px)  # decoded on every call
            draw.text((x, y), text, fill=ink, font=font, stroke_width=1 if face.name == "bold" else 0, stroke_fill=ink)
        else:
            mask = r._text_mask.__wrapped__(face.name, face.px, text)
            img.paste(ink, (x, y, x + mask.width, y + mask.height), mask)
    if style.noise_sigma > 0:
        arr = np.asarray(img, dtype=np.float32)
        arr = arr + np.random.default_rng(0).normal(0.0, style.noise_sigma, arr.shape[:2])[..., None]
        img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    if style.rotation_deg:
        img = img.rotate(style.rotation_deg, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=paper)
    size = r.sized_px(doc, style, max_image_tokens=max_image_tokens)
    img = img.resize(size, Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _naive(spec: Any, n: int, completions: list[list[str]]) -> float:
    from hyperpod_rl.tasks.doc_read.dataset import draw_sample
    from hyperpod_rl.tasks.doc_read.reward import score

    start = time.perf_counter()
    for i, answers in zip(range(n), completions, strict=True):
        doc, question, style = draw_sample(spec, "train", i)
        png = _naive_png(doc, style, spec.max_image_tokens)
        url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        _prompt = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": question.text}]}]
        for answer in answers:
            score(answer, question)
    return time.perf_counter() - start


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of the module docstring."""
    from hyperpod_rl.tasks import make_env
    from hyperpod_rl.tasks.doc_read import DatasetSpec, build_dataset
    from hyperpod_rl.tasks.doc_read import render as r

    spec = DatasetSpec(seed=args.seed, counts={"train": args.samples})
    rows = build_dataset(spec)["train"]
    completions = _completions(rows, args.group, args.seed)
    n = len(rows)
    _shipped(spec, 4, completions[:4])  # warm imports and code paths
    _naive(spec, 4, completions[:4])
    r._cached_layout.cache_clear()
    r._text_mask.cache_clear()
    results: dict[str, Any] = {}
    secs = _shipped(spec, n, completions)
    results["rendered_samples_per_s"] = round(n / secs, 1)
    secs = _naive(spec, n, completions)
    results["naive_rendered_samples_per_s"] = round(n / secs, 1)
    results["speedup_vs_naive"] = round(results["rendered_samples_per_s"] / results["naive_rendered_samples_per_s"], 2)
    envs = [make_env("doc_read", row) for row in rows for _ in range(args.group)]
    flat = [a for answers in completions for a in answers]
    start = time.perf_counter()
    for env, answer in zip(envs, flat, strict=True):
        env.step(answer)
    results["scoring_steps_per_s"] = round(len(flat) / (time.perf_counter() - start), 1)
    results.update(
        samples=args.samples,
        group=args.group,
        mean_image_px=[round(sum(x["width_px"] for x in rows) / len(rows)), round(sum(x["height_px"] for x in rows) / len(rows))],
        mean_image_tokens=round(sum(x["image_tokens"] for x in rows) / len(rows), 1),
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="distinct samples (pages with a question)")
    parser.add_argument("--group", type=int, default=8, help="completions scored per sample (GRPO group size)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    with Recording("doc_read_throughput", params={**vars(args), "pinned_to_one_core": hasattr(os, "sched_setaffinity")}) as rec:
        rec.results = measure(args)
    res = rec.results
    for key in ("rendered_samples_per_s", "naive_rendered_samples_per_s", "scoring_steps_per_s"):
        print(f"{key:32s} {res[key]:>12,.1f}")
    print(f"speed-up over the naive pipeline: {res['speedup_vs_naive']}x")
    print(json.dumps(res, sort_keys=True))


if __name__ == "__main__":
    main()
