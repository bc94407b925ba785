"""Issue 14 item 2: the run's sampling settings win over the base model's generation_config.json."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch

from hyperpod_rl.model import sampling
from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.tasks.maze import generate_maze, image_part


def _prompt():
    maze = generate_maze(3, 3, seed=1)
    return [
        {"role": "system", "content": "You solve mazes."},
        {"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": "Move."}]},
    ]


@pytest.fixture
def greedy_file_model(tiny_setup, tmp_path):
    """The tiny base model with a generation_config.json that sets top_k=1 (and a repetition penalty)."""
    target = tmp_path / "model"
    shutil.copytree(tiny_setup["model_dir"], target)
    gen = json.loads((target / "generation_config.json").read_text())
    gen.update({"top_k": 1, "do_sample": True, "repetition_penalty": 30.0})
    (target / "generation_config.json").write_text(json.dumps(gen))
    return target


def test_free_generation_samples_with_the_run_settings_not_the_file(greedy_file_model):
    model, processor, _ = load_base_model(greedy_file_model)
    policy = MazePolicy(model, processor, action_constraint="none", max_new_tokens=6)
    prompt = _prompt()
    enc = policy._encode_prompt(prompt)
    # The input: generate() fills unset fields from the file, so top_k=1 makes
    # "sampling at temperature 1.0" greedy: 12 samples, one distinct response.
    torch.manual_seed(0)
    old = {tuple(model.generate(**enc, do_sample=True, temperature=1.0, max_new_tokens=6)[0].tolist()) for _ in range(12)}
    assert len(old) == 1
    # The policy sets every sampling field itself: 12 samples at temperature 1.0 differ.
    torch.manual_seed(0)
    responses = {tuple(policy.act([prompt], temperature=1.0)[0].response_ids) for _ in range(12)}
    assert len(responses) >= 6


def test_greedy_evaluation_ignores_the_file(tiny_setup, greedy_file_model):
    """Evaluation decodes greedily through the same policy: a repetition penalty in the file changes nothing."""
    plain = MazePolicy(*load_base_model(tiny_setup["model_dir"])[:2], action_constraint="none", max_new_tokens=8)
    with_file = MazePolicy(*load_base_model(greedy_file_model)[:2], action_constraint="none", max_new_tokens=8)
    prompt = _prompt()
    enc = plain._encode_prompt(prompt)
    # Left to generate(), the file's repetition penalty changes greedy decoding ...
    assert not torch.equal(
        plain.model.generate(**enc, do_sample=False, max_new_tokens=8), with_file.model.generate(**enc, do_sample=False, max_new_tokens=8)
    )
    # ... but the policy sets it explicitly, so both models answer the same.
    assert plain.act([prompt], greedy=True)[0].response_ids == with_file.act([prompt], greedy=True)[0].response_ids


def test_generation_config_is_reported_once(greedy_file_model, caplog):
    caplog.set_level(logging.WARNING, logger="hyperpod_rl.model.sampling")
    load_base_model(greedy_file_model)
    load_base_model(greedy_file_model)
    reports = [r.getMessage() for r in caplog.records if "generation_config.json" in r.getMessage()]
    assert len(reports) == 1
    assert "top_k=1 (requested 0)" in reports[0] and "repetition_penalty=30.0 (requested 1.0)" in reports[0]


def test_explicit_config_leaves_nothing_for_the_file():
    gen = sampling.explicit_generation_config(greedy=False, temperature=0.7, max_new_tokens=5, eos_token_id=2, pad_token_id=0)
    for key in ("top_k", "top_p", "min_p", "typical_p", "repetition_penalty", "no_repeat_ngram_size", "num_beams", "temperature"):
        assert getattr(gen, key) is not None, key
    assert (gen.top_k, gen.top_p, gen.temperature, gen.do_sample) == (0, 1.0, 0.7, True)


def test_serving_preflight_uses_the_same_rule():
    from hyperpod_rl.serve import preflight

    assert preflight.generation_config_overrides is sampling.generation_config_overrides
    assert sampling.generation_config_overrides({"top_k": 1, "temperature": 0.7}, {"temperature": 0.0}) == ["top_k=1 (requested 0)"]
    assert sampling.generation_config_overrides({"top_k": 0, "top_p": 1.0}, {}) == []
