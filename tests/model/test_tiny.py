"""The embedded tiny Qwen3-VL: architecture, tokenizer, save/load round trip, revision hash."""

from __future__ import annotations

import pytest
import torch

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.tiny import DIRECTION_TOKENS, VISION_SPECIAL_TOKENS, build_tiny_qwen3vl, directory_revision
from hyperpod_rl.tasks.maze import generate_maze, image_part


def _prompt(seed: int = 0):
    maze = generate_maze(3, 3, seed=seed)
    return [
        {"role": "system", "content": "You solve mazes."},
        {"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": "Move."}]},
    ]


def test_tiny_model_is_qwen3_vl_and_directions_are_single_tokens():
    model, processor = build_tiny_qwen3vl(seed=0)
    assert model.config.model_type == "qwen3_vl"
    assert type(model).__name__ == "Qwen3VLForConditionalGeneration"
    for word in DIRECTION_TOKENS:
        assert len(processor.tokenizer.encode(word, add_special_tokens=False)) == 1
    for tok in VISION_SPECIAL_TOKENS:
        assert processor.tokenizer.convert_tokens_to_ids(tok) != processor.tokenizer.unk_token_id


def test_same_seed_same_revision(tmp_path):
    from hyperpod_rl.model.loading import save_tiny_base_model

    a, rev_a = save_tiny_base_model(tmp_path / "a", seed=3)
    b, rev_b = save_tiny_base_model(tmp_path / "b", seed=3)
    c, rev_c = save_tiny_base_model(tmp_path / "c", seed=4)
    assert rev_a == rev_b == directory_revision(a) == directory_revision(b)
    assert rev_c != rev_a
    model, processor, model_id = load_base_model(a)
    assert model_id == "hyperpod-rl/tiny-qwen3-vl"
    assert processor.tokenizer.padding_side == "left"


def test_policy_logprobs_match_between_acting_and_scoring(tiny_setup):
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    policy = MazePolicy(model, processor)
    prompts = [_prompt(s) for s in range(4)]
    actions = policy.act(prompts, generator=torch.Generator().manual_seed(0))
    assert all(a.text in {f"<answer>{d}</answer>" for d in DIRECTION_TOKENS} for a in actions)
    scored = policy.score(prompts, [a.response_ids for a in actions], [a.loss_mask for a in actions])
    logp, ent = scored.logprobs, scored.entropy
    assert torch.allclose(logp.sum(-1), torch.tensor([actions[i].logprob for i in scored.indices]), atol=1e-5)
    assert ((ent.sum(-1) > 0) & (ent.sum(-1) <= torch.log(torch.tensor(4.0)) + 1e-5)).all()


def test_free_generation_never_emits_vision_tokens(tiny_setup):
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    policy = MazePolicy(model, processor, action_constraint="none", max_new_tokens=6)
    vision_ids = {processor.tokenizer.convert_tokens_to_ids(t) for t in VISION_SPECIAL_TOKENS}
    torch.manual_seed(0)
    for action in policy.act([_prompt(s) for s in range(3)], temperature=1.5):
        assert not vision_ids & set(action.response_ids)


def test_missing_model_dir_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="has no config.json"):
        load_base_model(tmp_path)
