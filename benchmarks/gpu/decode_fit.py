"""Fit the planner's decode-time model of the reference backend's compiled decoding; hold the 4B shape out.

Model (``hyperpod_rl.plan.throughput.HF_DECODE``): one decode step of a batch of episodes takes
``layers x (layer_s + head_s x attention heads)`` seconds. On one H200 at 32 episodes a batch, the
step time did not follow the weights read per step: the 4B and 8B shapes (36 layers and 32 heads
each, hidden 2,560 vs 4,096) decode equally fast, the 2B shape (28 layers, 16 heads) faster. The
form was picked after seeing that, so the held-out 4B point checks the two constants, not the form.

Points: every compiled-decoding run of ``FILES`` (decode seconds / (turns x max_new_tokens)), with the
decoder layers eager during decoding (``h200_grpo_e2e_levers_8b.json`` compiled them for decoding too and
is left out). The constants are the exact fit to the per-shape medians of the fitted shapes.

    python -m benchmarks.gpu.decode_fit     # prints the fit, and each shape's measured and predicted step
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks._record import RESULTS_DIR
from hyperpod_rl.plan import model_shape
from hyperpod_rl.plan.throughput import hf_decode_step_s

FILES = (
    "h200_grpo_e2e_decode_2b.json",
    "h200_grpo_e2e_sac_2b.json",
    "h200_grpo_e2e_trl_mb8_2b.json",
    "h200_grpo_e2e_decode_4b.json",
    "h200_grpo_e2e_decode_8b.json",
    "h200_grpo_e2e_sac_8b.json",
)
FIT_SHAPES = ("Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-8B-Instruct")
HELD_OUT_SHAPES = ("Qwen/Qwen3-VL-4B-Instruct",)
#: Decimal places of the constants (milliseconds) as the planner carries them.
ROUND_MS = 3


def points(results: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """One point per compiled-decoding run: file, shape, turns, episodes per batch, seconds per decode step."""
    out = []
    for name in FILES:
        doc = json.loads((results / name).read_text())
        params = doc["params"]
        for run in doc["results"]["runs"]:
            if run.get("decode") != "compiled":
                continue
            steps = run["max_turns"] * int(params["max_new_tokens"])
            out.append(
                {
                    "file": name,
                    "shape": run["shape"],
                    "turns": run["max_turns"],
                    "episodes": int(params["mazes"]) * int(params["group"]),
                    "step_s": run["median_rollout_decode_s"] / steps,
                }
            )
    return out


def per_shape(data: list[dict[str, Any]]) -> dict[str, float]:
    """Median seconds per decode step of each shape."""
    return {s: statistics.median(p["step_s"] for p in data if p["shape"] == s) for s in sorted({p["shape"] for p in data})}


def fit(data: list[dict[str, Any]]) -> dict[str, float]:
    """``layer_s`` and ``head_s`` (seconds) through the two fitted shapes' medians, rounded as the planner carries them."""
    med = per_shape(data)
    (a, b) = (model_shape(s) for s in FIT_SHAPES)
    ya, yb = med[FIT_SHAPES[0]] / a.num_hidden_layers, med[FIT_SHAPES[1]] / b.num_hidden_layers
    head_s = (yb - ya) / (b.num_attention_heads - a.num_attention_heads)
    layer_s = ya - head_s * a.num_attention_heads
    return {"layer_s": round(layer_s * 1e3, ROUND_MS) / 1e3, "head_s": round(head_s * 1e3, ROUND_MS) / 1e3}


def predicted_step_s(shape: str, constants: dict[str, float]) -> float:
    """Seconds per decode step the model gives ``shape``."""
    return hf_decode_step_s(model_shape(shape), constants)


def main() -> None:
    data = points()
    constants = fit(data)
    print(f"fit on {', '.join(FIT_SHAPES)}: layer_s {constants['layer_s'] * 1e3:.3f} ms, head_s {constants['head_s'] * 1e3:.3f} ms")
    for shape, measured in per_shape(data).items():
        pred = predicted_step_s(shape, constants)
        split = "held out" if shape in HELD_OUT_SHAPES else "fitted"
        n = sum(p["shape"] == shape for p in data)
        print(
            f"{shape} ({split}, {n} runs): measured {measured * 1e3:.1f} ms/step, predicted {pred * 1e3:.1f} ms ({pred / measured - 1:+.1%})"
        )


if __name__ == "__main__":
    main()
