"""Issue 14 item 11: vision tokens never reach sampled responses, and scoring one is a clear error."""

from __future__ import annotations

import pytest
import torch

from hyperpod_rl.errors import LogprobInputError
from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.tiny import VISION_SPECIAL_TOKENS
from hyperpod_rl.tasks.maze import generate_maze, image_part


def _prompt():
    maze = generate_maze(3, 3, seed=2)
    return [{"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": "Move."}]}]


@pytest.fixture(scope="module")
def base(tiny_setup):
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    return model, processor


@pytest.mark.parametrize("mode", ["none", "directions"])
@pytest.mark.parametrize("token", ["<|image_pad|>", "<|vision_start|>"])
def test_scoring_a_response_with_a_vision_token_is_a_clear_error(base, mode, token):
    model, processor = base
    policy = MazePolicy(model, processor, action_constraint=mode, max_new_tokens=4)
    tok = processor.tokenizer
    vision_id = tok.convert_tokens_to_ids(token)
    text_id = tok.encode("up", add_special_tokens=False)[0]
    response = [text_id, vision_id, text_id, policy.eos_id]
    # Before: the <|image_pad|> in the fed response made the model count one image token too
    # many ("Image features and image tokens do not match"); now it is refused before any forward.
    with pytest.raises(
        LogprobInputError, match=rf"response 1 holds the vision token {token.replace('|', '[|]')} \(id {vision_id}\) at position 1"
    ):
        policy.score([_prompt(), _prompt()], [[text_id, policy.eos_id], response], [[True, False], [True] * 4])


def test_a_token_outside_the_constrained_vocabulary_is_a_clear_error(base):
    model, processor = base
    policy = MazePolicy(model, processor, action_constraint="directions")
    other = processor.tokenizer.encode("maze", add_special_tokens=False)[0]
    with pytest.raises(
        LogprobInputError, match=r"response 0 samples token id .* at position 0, outside the tokens action_constraint='directions'"
    ):
        policy.score([_prompt()], [[other]], [[True]])


def test_sampling_suppresses_every_vision_token(base):
    model, processor = base
    policy = MazePolicy(model, processor, action_constraint="none", max_new_tokens=8)
    vision = {processor.tokenizer.convert_tokens_to_ids(t) for t in VISION_SPECIAL_TOKENS}
    assert set(policy.suppress_ids) == vision
    torch.manual_seed(3)
    actions = [policy.act([_prompt()], temperature=3.0)[0] for _ in range(6)]  # hot: near-uniform draws
    assert all(not vision & set(a.response_ids) for a in actions)
    scored = policy.score([_prompt()] * 6, [a.response_ids for a in actions], [a.loss_mask for a in actions], temperature=3.0)
    assert torch.isfinite(scored.logprobs).all()
