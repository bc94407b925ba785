"""Prompt-style experiment: can the tiny random-init model find the image behind the prompt text?

Usage (repository root)::

    python -m benchmarks.prompt_style            # both styles, 125 steps, 200 held-out mazes
    python -m benchmarks.prompt_style --quick    # a smoke run: 10 steps, 50 held-out mazes

For each ``prompt_style`` (``full``: system prompt, legend and rules, ~130 fixed text tokens;
``terse``: the image and one word), the same recipe: maze data in that style (3x3..5x5, one
turn), the tiny random-init Qwen3-VL built for that data (its tokenizer is trained on the env's
texts, as the quickstart does), a LoRA adapter (the quickstart's rank, alpha and learning rate)
trained *supervised* on the first move: each step takes ``--mazes-per-step`` train mazes and
minimises ``-log P(an optimal first move)`` under the constrained answer format (the four
direction tokens). Every ``--eval-every`` steps: greedy first-move accuracy (share of held-out
mazes whose answer is a shortest-path move). The accuracy at step 0 (the untrained model) is the
baseline, measured in the same run; ``chance`` is the expected accuracy of a uniform random move.

Writes ``benchmarks/results/prompt_style.json`` (or ``prompt_style_quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path
from typing import Any

from benchmarks._record import Recording, scratch_dir

QUICK = {"steps": 10, "heldout": 50, "eval_every": 5}


def _first_contexts(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The first observation of each row, as the env serves it (``MazeEnv.init``)."""
    from hyperpod_rl.tasks.maze import MazeEnv

    out = []
    for row in rows:
        prompt, _ = MazeEnv(env_config=None, extras=dict(row)).init(list(row["prompt"]))
        out.append(prompt)
    return out


def _optimal(rows: list[dict[str, Any]]) -> list[frozenset[str]]:
    from hyperpod_rl.tasks.maze import Maze

    mazes = [Maze.from_json(r["maze"]) for r in rows]
    return [m.optimal_moves(m.start) for m in mazes]


def _accuracy(policy: Any, contexts: list[Any], optimal: list[frozenset[str]]) -> float:
    import torch

    with torch.no_grad():
        actions = policy.act(contexts, greedy=True)
    hits = [a.text.removeprefix("<answer>").removesuffix("</answer>") in opt for a, opt in zip(actions, optimal, strict=True)]
    return round(sum(hits) / len(hits), 4)


def run_style(style: str, args: argparse.Namespace, storage: Path) -> dict[str, Any]:
    """Train and evaluate one prompt style; returns its curve."""
    import torch
    from peft import LoraConfig, get_peft_model

    from hyperpod_rl.model.loading import load_base_model
    from hyperpod_rl.model.policy import MazePolicy
    from hyperpod_rl.model.tiny import DIRECTION_TOKENS
    from hyperpod_rl.quickstart import QuickstartOptions, prepare_base_model
    from hyperpod_rl.tasks.maze import DatasetSpec, build_dataset

    opts = QuickstartOptions.build(seed=args.seed)
    spec = DatasetSpec(
        seed=args.seed,
        sizes=tuple((n, n) for n in range(opts.min_size, opts.max_size + 1)),
        counts={"train": args.train_mazes, "heldout": args.heldout},
        max_turns=1,
        prompt_style=style,
    )
    splits = build_dataset(spec)
    train, heldout = splits["train"], splits["heldout"]
    model_dir, _ = prepare_base_model(opts, storage / style, train)
    torch.manual_seed(args.seed)
    model, processor, _ = load_base_model(model_dir)
    lora = LoraConfig(r=opts.lora_rank, lora_alpha=2.0 * opts.lora_rank, target_modules="all-linear", exclude_modules=r".*visual.*")
    model = get_peft_model(model, lora)
    policy = MazePolicy(model, processor, action_constraint="directions")
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=opts.lr)

    train_ctx, train_opt = _first_contexts(train), _optimal(train)
    held_ctx, held_opt = _first_contexts(heldout), _optimal(heldout)
    prompt_tokens, image_tokens = _prompt_tokens(processor, held_ctx[0])
    text_tokens = prompt_tokens - image_tokens
    answer = policy.prefix_ids
    suffix = list(policy.suffix_ids)
    dir_ids = [processor.tokenizer.encode(w, add_special_tokens=False)[0] for w in DIRECTION_TOKENS]
    curve = [(0, _accuracy(policy, held_ctx, held_opt))]
    print(f"{style}: step 0 held-out first-move accuracy {curve[0][1]:.3f} ({text_tokens} text tokens in the first prompt)", flush=True)
    rng = random.Random(args.seed)
    for step in range(1, args.steps + 1):
        batch = rng.sample(range(len(train)), args.mazes_per_step)
        contexts, responses, masks, targets = [], [], [], []
        for i in batch:  # every maze scores all four directions (one shared forward per maze)
            for d, word in zip(dir_ids, DIRECTION_TOKENS, strict=True):
                contexts.append(train_ctx[i])
                responses.append([*answer, d, *suffix])
                masks.append([False] * len(answer) + [True] + [False] * len(suffix))
                targets.append(word in train_opt[i])  # the direction tokens are the env's direction words
        model.train()
        scored = policy.score(contexts, responses, masks)
        order = torch.tensor(scored.indices)
        logp = torch.empty(len(contexts))
        logp = logp.index_put((order,), scored.logprobs.sum(-1)).view(len(batch), 4)
        is_opt = torch.tensor(targets).view(len(batch), 4)
        loss = -torch.logsumexp(logp.masked_fill(~is_opt, float("-inf")), dim=-1).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        model.eval()
        if step % args.eval_every == 0 or step == args.steps:
            curve.append((step, _accuracy(policy, held_ctx, held_opt)))
            print(f"{style}: step {step} loss {loss.item():.3f} held-out first-move accuracy {curve[-1][1]:.3f}", flush=True)
    chance = round(sum(len(o) / 4 for o in held_opt) / len(held_opt), 4)
    return {
        "style": style,
        "prompt_tokens": prompt_tokens,
        "prompt_image_tokens": image_tokens,
        "prompt_text_tokens": text_tokens,
        "chance": chance,
        "accuracy_curve": curve,
    }


def _prompt_tokens(processor: Any, messages: list[dict[str, Any]]) -> tuple[int, int]:
    """``(all tokens, image tokens)`` of one first prompt, as the processor encodes it."""
    from hyperpod_rl.model.policy import messages_to_template

    template, images, _ = messages_to_template(messages)
    text = processor.apply_chat_template(template, add_generation_prompt=True, tokenize=False)
    enc = processor(text=[text], images=images or None, return_tensors="pt")
    pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    return int(enc["input_ids"].shape[1]), int((enc["input_ids"] == pad).sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--styles", nargs="+", default=["full", "terse"])
    parser.add_argument("--steps", type=int, default=125, help="supervised steps per style")
    parser.add_argument("--mazes-per-step", type=int, default=16)
    parser.add_argument("--train-mazes", type=int, default=2000)
    parser.add_argument("--heldout", type=int, default=200)
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK}")
    args = parser.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    home = scratch_dir("hprl-bench-prompt-")
    os.environ["HYPERPOD_RL_HOME"] = str(home)
    name = "prompt_style_quick" if args.quick else "prompt_style"
    with Recording(name, params=vars(args)) as rec:
        rec.results = {"task": "supervised first move", "styles": [run_style(s, args, home / "storage") for s in args.styles]}
    for s in rec.results["styles"]:
        (s0, a0), (s1, a1) = s["accuracy_curve"][0], s["accuracy_curve"][-1]
        print(f"{s['style']:>6}: first-move accuracy {a0:.3f} at step {s0} -> {a1:.3f} at step {s1} (chance {s['chance']:.3f})")
    print(json.dumps(rec.results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
