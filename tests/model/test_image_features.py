"""MazePolicy.reusing_image_features: inside the block the vision tower encodes a batch only when one of
its images is new, and a GRPO step's update reuses what its rollout encoded."""

from __future__ import annotations

import pytest
import torch

from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.tasks.maze import generate_maze, image_part


def _prompt(seed: int, text: str = "Move.") -> list[dict]:
    maze = generate_maze(4, 4, seed=seed)
    return [{"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": text}]}]


@pytest.fixture
def policy(tiny_setup):
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    model.requires_grad_(False)  # frozen, as under the trainer's LoRA
    return MazePolicy(model, processor)


def _tower_calls(policy: MazePolicy) -> list[int]:
    calls: list[int] = []
    policy._unwrapped().model.visual.register_forward_hook(lambda module, args, out: calls.append(1))
    return calls


def _hidden(policy: MazePolicy, prompts: list[list[dict]]) -> torch.Tensor:
    inputs, _ = policy.collate(prompts, [[]] * len(prompts))
    with torch.no_grad():
        return policy._hidden(inputs)


def test_a_batch_of_seen_images_runs_no_vision_tower(policy):
    calls = _tower_calls(policy)
    batch = [_prompt(1), _prompt(2), _prompt(3)]
    outside = _hidden(policy, batch)
    with policy.reusing_image_features():
        first = _hidden(policy, batch)  # new images: encoded whole, as outside the block
        assert len(calls) == 2 and torch.equal(first, outside)
        again = _hidden(policy, batch)
        assert len(calls) == 2 and torch.equal(again, outside)
        # other texts and another order over the same images: still no tower, the same features
        other = [_prompt(3, "Go."), _prompt(1, "Go.")]
        reused = _hidden(policy, other)
        assert len(calls) == 2
        torch.testing.assert_close(reused, _hidden_outside(policy, other), rtol=1e-5, atol=1e-5)
        mixed = _hidden(policy, [_prompt(1), _prompt(4)])  # one new image: the batch is encoded whole
        assert len(calls) == 4  # (the outside call above was one)
    assert torch.equal(mixed, _hidden(policy, [_prompt(1), _prompt(4)]))
    assert len(calls) == 5  # after the block every batch is encoded again
    assert "get_image_features" not in vars(policy._unwrapped().model)


def _hidden_outside(policy: MazePolicy, prompts: list[list[dict]]) -> torch.Tensor:
    inner = policy._unwrapped().model
    patched = vars(inner).pop("get_image_features")
    try:
        return _hidden(policy, prompts)
    finally:
        inner.get_image_features = patched


def test_a_trained_vision_tower_is_never_reused(policy):
    calls = _tower_calls(policy)
    visual = policy._unwrapped().model.visual
    next(visual.parameters()).requires_grad_(True)
    with policy.reusing_image_features():
        _hidden(policy, [_prompt(1)])
        _hidden(policy, [_prompt(1)])
    assert len(calls) == 2


def test_the_update_after_a_rollout_gets_the_same_gradients(policy):
    """The features the rollout encoded are the update's: its log-probs and gradients equal a fresh update's."""
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(policy.model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    lora = MazePolicy(model, policy.processor)
    prompts = [_prompt(1), _prompt(2), _prompt(1, "Again.")]
    actions = lora.act(prompts, generator=torch.Generator().manual_seed(0))
    args = (prompts, [a.response_ids for a in actions], [a.loss_mask for a in actions])

    def grads() -> tuple[torch.Tensor, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        logp = lora.score(*args).logprobs
        logp.sum().backward()
        return logp.detach(), [p.grad.clone() for p in model.parameters() if p.requires_grad]

    fresh_logp, fresh = grads()
    calls = _tower_calls(lora)
    with lora.reusing_image_features():
        lora.act(prompts, generator=torch.Generator().manual_seed(0))
        reused_logp, reused = grads()
    assert len(calls) == 1  # the rollout's
    torch.testing.assert_close(reused_logp, fresh_logp, rtol=1e-5, atol=1e-6)
    for a, b in zip(reused, fresh, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
