"""Diagnostic: graphs, graph breaks and recompiles of compiled decoding (``rollout.decode='compiled'``).

Runs :meth:`MazePolicy.act` with free generation on the tiny Qwen3-VL (or ``--shape``'s layout
with random weights) over calls whose batch and prompt length change as a multi-turn rollout's do,
and prints, per call, the seconds, the graphs compiled and the graph breaks with their reasons
(``torch._dynamo.utils.counters``). Usage: ``python -m benchmarks.gpu.decode_graphs [--shape 2B]``;
``TORCH_LOGS=recompiles`` adds dynamo's reasons for each recompile.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from benchmarks.gpu.workload import SHAPES
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.tiny import build_tiny_qwen3vl
from hyperpod_rl.tasks.maze import generate_maze, image_part


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default=None, help="real layout (random weights); default: the tiny model")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    args = ap.parse_args()
    from torch._dynamo.utils import counters

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, proc = build_tiny_qwen3vl(seed=0)
    if args.shape:
        from benchmarks.gpu.grpo_e2e import build_model

        model = build_model(args.shape, proc, device=device, tiny=False)
    else:
        model = model.to(device=device, dtype=torch.bfloat16 if device.type == "cuda" else torch.float32)
    model.eval()

    def prompt(seed: int, words: int) -> list[dict]:
        m = generate_maze(5, 5, seed=seed)
        return [{"role": "user", "content": [image_part(m, m.start), {"type": "text", "text": "Move" + " on" * words + "."}]}]

    policy = MazePolicy(model, proc, action_constraint="none", max_new_tokens=args.max_new_tokens, decode="compiled")
    # (batch, extra prompt words): a rollout's turns shrink the batch and lengthen the prompts
    calls = [(32, 0), (32, 0), (29, 150), (17, 300), (32, 0), (29, 150)]
    for i, (batch, words) in enumerate(calls):
        counters.clear()
        t = time.perf_counter()
        with torch.no_grad():
            policy.act([prompt(s, words) for s in range(batch)])
        if device.type == "cuda":
            torch.cuda.synchronize()
        breaks = {str(k)[:300]: v for k, v in counters["graph_break"].items()}
        print(
            json.dumps(
                {
                    "call": i,
                    "batch": batch,
                    "words": words,
                    "s": round(time.perf_counter() - t, 2),
                    "graphs": counters["stats"]["unique_graphs"],
                    "frames": dict(counters["frames"]),
                    "breaks": breaks,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
