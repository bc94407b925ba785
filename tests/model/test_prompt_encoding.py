"""The policy encodes the prompts its cache lacks in one processor call: each prompt's inputs equal the
processor's own for that prompt alone (a rollout turn meets dozens of new observations)."""

from __future__ import annotations

import pytest
import torch

from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.model.policy import MazePolicy, messages_to_template
from hyperpod_rl.tasks.maze import generate_maze, image_part


def _maze_prompt(size: int, seed: int, text: str = "Move.") -> list[dict]:
    maze = generate_maze(size, size, seed=seed)
    return [
        {"role": "system", "content": "You are in a maze."},
        {"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": text}]},
    ]


def _prompts() -> list[list[dict]]:
    two = generate_maze(4, 4, seed=9)
    both = [{"role": "user", "content": [image_part(two, two.start), {"type": "text", "text": "then"}, image_part(two, two.goal)]}]
    text_only = [{"role": "user", "content": "No image here, answer up."}]
    # sizes differ (so do image and token counts); one prompt twice; two images in one; text alone
    return [
        _maze_prompt(3, 1),
        _maze_prompt(5, 2, "A longer instruction, then move."),
        both,
        _maze_prompt(3, 1),
        text_only,
        _maze_prompt(4, 3),
    ]


def _alone(processor, messages) -> dict[str, torch.Tensor]:
    tmpl, images, _ = messages_to_template(messages)
    text = processor.apply_chat_template(tmpl, add_generation_prompt=True, tokenize=False)
    return dict(processor(text=[text], images=images or None, return_tensors="pt").items())


@pytest.fixture(scope="module")
def base(tiny_setup):
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    return model, processor


@pytest.mark.parametrize("side", ["left", "right"])
def test_prompts_encoded_together_equal_each_prompt_encoded_alone(base, side):
    model, processor = base
    before = processor.tokenizer.padding_side
    processor.tokenizer.padding_side = side
    try:
        policy = MazePolicy(model, processor)
        prompts = _prompts()
        together = policy._encode_prompts(prompts)
        again = policy._encode_prompts(list(reversed(prompts)))[::-1]  # from the cache
        for messages, enc, cached in zip(prompts, together, again, strict=True):
            alone = _alone(processor, messages)
            assert enc.keys() == alone.keys() == cached.keys()
            for key in alone:
                assert enc[key].dtype == alone[key].dtype and torch.equal(enc[key], alone[key]), key
                assert torch.equal(cached[key], alone[key]), key
        assert "pixel_values" not in together[4] and together[2]["image_grid_thw"].shape == (2, 3)
        assert len(policy._cache) == 5  # the repeated prompt is encoded once
    finally:
        processor.tokenizer.padding_side = before


def test_batched_inputs_give_the_same_hidden_states(base):
    model, processor = base
    policy = MazePolicy(model, processor)
    prompts = _prompts()
    batched, starts = policy.collate(prompts, [[]] * len(prompts))
    policy._cache.clear()
    for p in prompts:  # each prompt through the cache on its own: the inputs a prompt-at-a-time encoder built
        policy._encode_prompts([p])
    one_by_one, starts_one = policy.collate(prompts, [[]] * len(prompts))
    assert starts == starts_one and batched.keys() == one_by_one.keys()
    assert all(torch.equal(batched[k], one_by_one[k]) for k in batched)


def _object_prompt(size: int, seed: int) -> list[dict]:
    """A prompt whose image part holds a PIL image object (not JSON)."""
    from hyperpod_rl.tasks.maze.render import render_maze

    maze = generate_maze(size, size, seed=seed)
    return [{"role": "user", "content": [{"type": "image", "image": render_maze(maze, maze.start)}, {"type": "text", "text": "Move."}]}]


def test_image_objects_of_one_size_are_told_apart(base):
    """Conversations holding image objects are keyed by their pixels, never by their text form."""
    model, processor = base
    policy = MazePolicy(model, processor)
    prompts = [_object_prompt(3, seed) for seed in (1, 2, 3)]
    for p in prompts:  # one at a time, so that each later prompt is looked up in the cache
        (enc,) = policy._encode_prompts([p])
        alone = _alone(processor, p)
        assert all(torch.equal(enc[k], alone[k]) for k in alone)
    assert len(policy._cache) == 3 and not policy._keys


def test_a_conversation_seen_before_is_not_decoded_again(base, monkeypatch):
    model, processor = base
    policy = MazePolicy(model, processor)
    prompts = _prompts()
    first = policy._encode_prompts(prompts)
    from hyperpod_rl.model import policy as policy_module

    monkeypatch.setattr(policy_module, "messages_to_template", lambda m: pytest.fail("decoded a known conversation again"))
    again = policy._encode_prompts(prompts)
    assert all(a[k] is b[k] for a, b in zip(first, again, strict=True) for k in a)
