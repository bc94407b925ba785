"""Compiled decoding (static KV cache + ``torch.compile``'d decode step), run on the CPU.

On a GPU the same path captures CUDA graphs (``benchmarks/gpu/grpo_e2e.py --decode`` measures it
against eager decoding); here it checks what can go wrong whatever the device: filler rows and
left padding must never change an answer, and the observations' order and count are kept.
"""

from __future__ import annotations

import pytest
import torch

from hyperpod_rl.config.decoding import DECODE_LENGTH_BUCKET, decode_batch_rows
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.model.lora import wrap_lora
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.tiny import build_tiny_qwen3vl
from hyperpod_rl.tasks.maze import generate_maze, image_part


def _prompt(seed: int, side: int = 3, words: int = 0):
    maze = generate_maze(side, side, seed=seed)
    return [
        {"role": "system", "content": "You solve mazes."},
        {"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": "Move" + " up" * words + "." * seed}]},
    ]


@pytest.fixture(scope="module")
def lora_model():
    model, proc = build_tiny_qwen3vl(seed=0)
    cfg = RunConfig.build({"run_id": "decode-test", "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet"}})
    model, _ = wrap_lora(model, cfg.lora)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:  # non-zero adapters, so a decode path that skipped LoRA would answer differently
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    model.eval()
    return model, proc


def test_batch_buckets():
    assert [decode_batch_rows(n) for n in (1, 2, 3, 5, 8, 9, 33, 64, 65, 96, 129)] == [1, 2, 4, 8, 8, 16, 64, 64, 128, 128, 192]


def test_collate_pads_to_a_length_multiple(lora_model):
    model, proc = lora_model
    policy = MazePolicy(model, proc, action_constraint="none", decode="eager")
    prompts = [_prompt(1), _prompt(2, words=40)]
    plain, starts = policy.collate(prompts, [[], [5, 6]])
    padded, pstarts = policy.collate(prompts, [[], [5, 6]], length_multiple=DECODE_LENGTH_BUCKET)
    extra = padded["input_ids"].shape[1] - plain["input_ids"].shape[1]
    assert padded["input_ids"].shape[1] % DECODE_LENGTH_BUCKET == 0 and extra > 0
    assert pstarts == [s + extra for s in starts]
    assert torch.equal(padded["input_ids"][:, extra:], plain["input_ids"])
    assert int(padded["attention_mask"][:, :extra].sum()) == 0


@pytest.mark.slow
def test_compiled_decode_answers_as_eager(lora_model):
    """Greedy answers of the compiled path equal the eager path's, over calls of different shapes.

    Slow: torch.compile of the decoder for several shapes."""
    model, proc = lora_model
    eager = MazePolicy(model, proc, action_constraint="none", max_new_tokens=12, decode="eager")
    compiled = MazePolicy(model, proc, action_constraint="none", max_new_tokens=12, decode="compiled")
    assert compiled.compiled_decode and not eager.compiled_decode
    # three observations (one filler row), then five longer ones (a second length bucket): the second turn of an episode
    calls = [[_prompt(s) for s in range(3)], [_prompt(s, side=4, words=60) for s in range(5)]]
    for prompts in calls:
        want = eager.act(prompts, greedy=True)
        got = compiled.act(prompts, greedy=True)
        assert len(got) == len(prompts)
        assert [a.response_ids for a in got] == [a.response_ids for a in want]
        assert [a.text for a in got] == [a.text for a in want]
        assert [a.logprob for a in got] == pytest.approx([a.logprob for a in want], abs=1e-4)
    assert len({tuple(a.response_ids) for a in want}) > 1  # the observations really differ


@pytest.mark.slow
def test_compiled_layers_train_as_eager(tiny_setup, tmp_path):
    """One reference-trainer step with compiled decoder layers gives the eager step's loss and update.

    Slow: torch.compile of the decoder layers, forward and backward."""
    from torch._dynamo.utils import counters

    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.train.reference import ReferenceTrainer

    data = tiny_setup["data"]
    base = {
        "data": {"train_path": str(data.train), "heldout_path": str(data.heldout), "prompts_per_step": 2},
        "model": {"path": str(tiny_setup["model_dir"])},
        "grpo": {"group_size": 2},
        "rollout": {"max_turns": 2},
        "trainer": {"steps": 1, "device": "cpu", "eval_rows": 1},
        "checkpoint": {"interval": 0},
    }
    values, updates = [], []
    for mode in (False, True):
        cfg = RunConfig.build({**base, "run_id": f"layers-{str(mode).lower()}", "trainer": {**base["trainer"], "compile_layers": mode}})
        trainer = ReferenceTrainer(cfg, tmp_path / str(mode))
        trainer._build()
        layers = trainer.model.get_base_model().model.language_model.layers
        assert (trainer.compiled.count if trainer.compiled else 0) == (len(layers) if mode else 0)
        counters.clear()
        before = torch.cat([p.detach().flatten().clone() for n, p in trainer.model.named_parameters() if "lora_" in n])
        values.append(trainer._step().values)
        # compiled layers ran in the update (graphs captured) and are eager again after it
        assert (counters["stats"]["unique_graphs"] > 0) == mode
        assert all(layer._compiled_call_impl is None for layer in layers)
        after = torch.cat([p.detach().flatten() for n, p in trainer.model.named_parameters() if "lora_" in n])
        updates.append(after - before)
    assert values[1]["policy/policy_loss"] == pytest.approx(values[0]["policy/policy_loss"], abs=1e-5)
    assert values[1]["reward/avg_raw_reward"] == values[0]["reward/avg_raw_reward"]
    # the same update up to kernel fusion's reordering of float sums (torch 2.11's inductor on the CPU:
    # 1.4e-6 at most, where the step moved weights by up to 5e-4, the learning rate): within 1 % of the largest change
    largest = float(updates[0].abs().max())
    assert largest > 0 and float((updates[0] != 0).float().mean()) > 0  # the step changed the adapters
    assert float((updates[1] - updates[0]).abs().max()) <= 0.01 * largest
