"""CPU learning check for document reading: does GRPO with the tiny model beat the base model on held-out pages?

Usage (repository root)::

    python -m benchmarks.doc_read_learning            # 150 GRPO steps, 200 held-out rows (~25 min on 2 busy cores)
    python -m benchmarks.doc_read_learning --quick    # smoke run: 6 steps, 32 held-out rows

Recipe: ``doc_read`` rows (``prompt_style="terse"``: the page and the question, no system prompt;
``max_image_tokens`` 64, so a page is at most 64 vision tokens) with the question types ``--qtypes`` (default ``field.kind``: "What kind
of document is this: invoice, receipt, form or table?", the same text on every page, so anything
learnt is learnt from the image). The tiny random-init Qwen3-VL (:func:`hyperpod_rl.model.tiny.
build_tiny_qwen3vl`, tokenizer trained on the rows' texts) gets each candidate answer word as one
token; a LoRA adapter (rank 16, alpha 32, all linear layers outside the vision tower, as the
quickstart; learning rate 2e-3) is trained by GRPO with *constrained decoding*: the answer is
``<answer>WORD</answer>`` with WORD sampled from the policy restricted to the question's candidate
words (:data:`CANDIDATES`), ``--group`` samples per page, reward from the task's own pure reward
(``TASK.score``), advantage = reward - group mean, loss = -advantage x log-prob.

Evaluation: greedy answers on the held-out split (templates never seen in training) and the
out-of-distribution split (denser pages), by the base model (the same weights with the adapter's
zero-initialised B matrices, i.e. step 0) and by the trained model. The figure: mean held-out reward
of the trained model minus the base model's, per page, with a 95 % paired percentile bootstrap
interval (:func:`hyperpod_rl.eval.stats.bootstrap_interval` over the per-page differences).
``chance`` is the expected reward of a uniform pick among the candidates.

Writes ``benchmarks/results/doc_read_learning.json`` (``doc_read_learning_quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from typing import Any

from benchmarks._record import Recording

QUICK = {"steps": 6, "heldout": 32, "train": 64, "ood": 16}
#: Candidate answer words per answer type of the questions used here.
CANDIDATES = {"field.kind": ("invoice", "receipt", "form", "table"), "yesno": ("yes", "no")}


def _candidates(row: dict[str, Any]) -> tuple[str, ...]:
    return CANDIDATES["field.kind"] if row["qtype"] == "field.kind" else CANDIDATES[row["answer_type"]]


def _corpus(rows: list[dict[str, Any]]) -> list[str]:
    texts = []
    for row in rows[:64]:
        for msg in row["prompt"]:
            texts += [p["text"] for p in msg["content"] if p.get("type") == "text"]
    return texts + [f"<answer>{w}</answer>" for ws in CANDIDATES.values() for w in ws]


class CandidatePolicy:
    """The tiny model restricted to candidate answer tokens after ``<answer>``."""

    def __init__(self, model: Any, processor: Any) -> None:
        from hyperpod_rl.model.policy import MazePolicy

        self.model = model
        self.tok = processor.tokenizer
        self.encoder = MazePolicy(model, processor, action_constraint="none")  # used for collate() only
        self.prefix = self.tok.encode("<answer>", add_special_tokens=False)
        self.ids = {w: self.tok.encode(w, add_special_tokens=False) for ws in CANDIDATES.values() for w in ws}
        bad = {w: ids for w, ids in self.ids.items() if len(ids) != 1}
        if bad:
            raise RuntimeError(f"candidate words must be single tokens: {bad}")

    def logprobs(self, rows: list[dict[str, Any]]) -> list[Any]:
        """Per row: log-probs (with grad) over that row's candidate words."""
        import torch

        inputs, _ = self.encoder.collate([r["prompt"] for r in rows], [self.prefix] * len(rows))
        logits = self.model(**inputs, use_cache=False).logits[:, -1, :].float()
        out = []
        for i, row in enumerate(rows):
            cand = torch.tensor([self.ids[w][0] for w in _candidates(row)])
            out.append(torch.log_softmax(logits[i, cand], dim=-1))
        return out


def _greedy_rewards(policy: CandidatePolicy, task: Any, rows: list[dict[str, Any]], batch: int = 16) -> list[float]:
    import torch

    rewards = []
    with torch.no_grad():
        for i in range(0, len(rows), batch):
            chunk = rows[i : i + batch]
            for row, lp in zip(chunk, policy.logprobs(chunk), strict=True):
                word = _candidates(row)[int(lp.argmax())]
                rewards.append(task.score(row, f"<answer>{word}</answer>"))
    return rewards


def _by(rows: list[dict[str, Any]], values: list[float], key: str) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for row, v in zip(rows, values, strict=True):
        groups[str(row[key])].append(v)
    return {k: round(sum(v) / len(v), 4) for k, v in sorted(groups.items())}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build data and model, evaluate the base model, train, evaluate again; return every figure."""
    import numpy as np
    import torch
    from peft import LoraConfig, get_peft_model

    from hyperpod_rl.eval.stats import bootstrap_interval
    from hyperpod_rl.model.tiny import build_tiny_qwen3vl
    from hyperpod_rl.tasks.doc_read import DatasetSpec
    from hyperpod_rl.tasks.doc_read.task import TASK

    torch.set_num_threads(args.threads)
    spec = DatasetSpec(
        seed=args.seed,
        counts={"train": args.train, "heldout": args.heldout, "ood": args.ood},
        qtypes=tuple(args.qtypes),
        prompt_style="terse",
        max_image_tokens=args.max_image_tokens,
    )
    t0 = time.monotonic()
    splits = TASK.build_dataset(spec)
    train, heldout, ood = splits["train"], splits["heldout"], splits.get("ood", [])
    data_s = time.monotonic() - t0
    model, processor = build_tiny_qwen3vl(seed=args.seed, corpus=_corpus(train))
    processor.tokenizer.add_tokens(
        [w for ws in CANDIDATES.values() for w in ws if len(processor.tokenizer.encode(w, add_special_tokens=False)) != 1]
    )
    model.resize_token_embeddings(len(processor.tokenizer))
    torch.manual_seed(args.seed)
    lora = LoraConfig(r=16, lora_alpha=32.0, target_modules="all-linear", exclude_modules=r".*visual.*")
    model = get_peft_model(model, lora)
    model.eval()
    policy = CandidatePolicy(model, processor)

    base_held = _greedy_rewards(policy, TASK, heldout)
    base_ood = _greedy_rewards(policy, TASK, ood) if ood else []
    print(f"base: held-out reward {np.mean(base_held):.3f}, ood {np.mean(base_ood) if ood else float('nan'):.3f}", flush=True)

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr)
    rng = random.Random(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    curve = []
    t1 = time.monotonic()
    for step in range(1, args.steps + 1):
        batch = [train[i] for i in rng.sample(range(len(train)), args.pages_per_step)]
        model.train()
        lps = policy.logprobs(batch)
        losses, rewards = [], []
        for row, lp in zip(batch, lps, strict=True):
            words = _candidates(row)
            picks = torch.multinomial(lp.detach().exp(), args.group, replacement=True, generator=gen)
            r = torch.tensor([TASK.score(row, f"<answer>{words[int(k)]}</answer>") for k in picks])
            adv = r - r.mean()
            losses.append(-(adv * lp[picks]).mean())
            rewards.append(float(r.mean()))
        loss = torch.stack(losses).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        model.eval()
        curve.append(round(sum(rewards) / len(rewards), 4))
        if step % 10 == 0 or step == args.steps:
            print(f"step {step}: train reward {np.mean(curve[-10:]):.3f} ({time.monotonic() - t1:.0f}s)", flush=True)
    train_s = time.monotonic() - t1

    trained_held = _greedy_rewards(policy, TASK, heldout)
    trained_ood = _greedy_rewards(policy, TASK, ood) if ood else []
    diff = np.array(trained_held) - np.array(base_held)
    ci = bootstrap_interval(diff, n_resamples=2000, seed=args.seed)
    ci_ood = bootstrap_interval(np.array(trained_ood) - np.array(base_ood), n_resamples=2000, seed=args.seed) if ood else None
    chance = float(np.mean([1.0 / len(_candidates(r)) for r in heldout]))
    return {
        "task": "doc_read",
        "qtypes": list(args.qtypes),
        "heldout_rows": len(heldout),
        "ood_rows": len(ood),
        "chance_heldout": round(chance, 4),
        "base_heldout_reward": round(float(np.mean(base_held)), 4),
        "trained_heldout_reward": round(float(np.mean(trained_held)), 4),
        "heldout_gain": round(ci.value, 4),
        "heldout_gain_ci95": [round(ci.low, 4), round(ci.high, 4)],
        "heldout_gain_excludes_zero": ci.excludes_zero(),
        "base_ood_reward": round(float(np.mean(base_ood)), 4) if ood else None,
        "trained_ood_reward": round(float(np.mean(trained_ood)), 4) if ood else None,
        "ood_gain_ci95": [round(ci_ood.low, 4), round(ci_ood.high, 4)] if ci_ood else None,
        "base_heldout_by_kind": _by(heldout, base_held, "kind"),
        "trained_heldout_by_kind": _by(heldout, trained_held, "kind"),
        "trained_heldout_by_stratum": _by(heldout, trained_held, "stratum"),
        "train_reward_curve": curve,
        "image_tokens_heldout_mean": round(float(np.mean([r["image_tokens"] for r in heldout])), 1),
        "data_s": round(data_s, 1),
        "train_s": round(train_s, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150, help="GRPO steps")
    parser.add_argument("--pages-per-step", type=int, default=16)
    parser.add_argument("--group", type=int, default=8, help="samples per page (GRPO group size)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--train", type=int, default=1024, help="train rows")
    parser.add_argument("--heldout", type=int, default=200)
    parser.add_argument("--ood", type=int, default=100)
    parser.add_argument("--qtypes", nargs="+", default=["field.kind"])
    parser.add_argument("--max-image-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK}")
    args = parser.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    name = "doc_read_learning_quick" if args.quick else "doc_read_learning"
    with Recording(name, params=vars(args)) as rec:
        rec.results = run(args)
    r = rec.results
    verdict = "excludes zero" if r["heldout_gain_excludes_zero"] else "does NOT exclude zero"
    print(
        f"held-out reward: base {r['base_heldout_reward']:.3f} -> trained {r['trained_heldout_reward']:.3f} "
        f"(chance {r['chance_heldout']:.3f}); gain {r['heldout_gain']:+.3f}, 95% paired bootstrap CI "
        f"[{r['heldout_gain_ci95'][0]:+.3f}, {r['heldout_gain_ci95'][1]:+.3f}] {verdict}"
    )
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
