"""Activation checkpointing and compiled decoder layers (hyperpod_rl.model.layers), on the tiny Qwen3-VL on the CPU.

Checkpointing must not change the loss or the gradients, must recompute exactly the layers it was
asked to (counted by calls of each layer's MLP), and must leave inference passes alone. The
compiled-layer switch must run the compiled code only inside its block.
"""

from __future__ import annotations

import pytest
import torch

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.layers import checkpoint_decoder_layers, compile_decoder_layers, decoder_layers
from hyperpod_rl.model.lora import wrap_lora
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.tiny import build_tiny_qwen3vl
from hyperpod_rl.tasks.maze import generate_maze, image_part


def _model(layers: int = 4):
    model, proc = build_tiny_qwen3vl(seed=0, num_layers=layers)
    cfg = RunConfig.build({"run_id": "layers-test", "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet"}})
    model, _ = wrap_lora(model, cfg.lora)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:  # non-zero adapters: the gradients of lora_A depend on them
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    return model, proc


def _batch(proc, model):
    policy = MazePolicy(model, proc, action_constraint="none", decode="eager")
    prompts = []
    for seed in (1, 2, 3):
        maze = generate_maze(3, 3, seed=seed)
        prompts.append([{"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": "Move."}]}])
    responses = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    return policy, prompts, responses


def _loss_and_grads(model, policy, prompts, responses):
    model.train()
    model.zero_grad(set_to_none=True)
    masks = [[True] * len(r) for r in responses]
    scored = policy.score(prompts, responses, masks, [[0], [1], [2]], temperature=1.0)
    loss = -(scored.logprobs * scored.loss_mask).sum() / scored.loss_mask.sum()
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    return float(loss.detach()), grads


def _count_mlp_calls(model) -> list[int]:
    calls = [0] * len(decoder_layers(model))
    for i, layer in enumerate(decoder_layers(model)):
        layer.mlp.register_forward_pre_hook(lambda *_, i=i: calls.__setitem__(i, calls[i] + 1))
    return calls


@pytest.mark.parametrize(
    ("fraction", "policy", "recomputed"), [(1.0, "full", 4), (0.5, "full", 2), (0.25, "full", 1), (1.0, "save_matmuls", 4)]
)
def test_checkpointing_keeps_loss_and_gradients_and_recomputes_the_asked_layers(fraction, policy, recomputed):
    model, proc = _model()
    pol, prompts, responses = _batch(proc, model)
    loss0, grads0 = _loss_and_grads(model, pol, prompts, responses)
    calls = _count_mlp_calls(model)
    assert checkpoint_decoder_layers(model, fraction=fraction, policy=policy) == recomputed
    loss1, grads1 = _loss_and_grads(model, pol, prompts, responses)
    # the first `recomputed` layers run their MLP again in backward; the rest once
    assert calls == [2] * recomputed + [1] * (4 - recomputed)
    assert loss1 == pytest.approx(loss0, rel=1e-6)
    assert grads1.keys() == grads0.keys()
    for name in grads0:
        torch.testing.assert_close(grads1[name], grads0[name], rtol=1e-5, atol=1e-7, msg=name)


def test_checkpointing_leaves_inference_alone_and_can_be_undone():
    model, proc = _model()
    pol, prompts, responses = _batch(proc, model)
    calls = _count_mlp_calls(model)
    checkpoint_decoder_layers(model, fraction=1.0)
    with torch.no_grad():
        pol.score(prompts, responses, [[True] * len(r) for r in responses], [[0], [1], [2]], temperature=1.0)
    assert calls == [1, 1, 1, 1]
    assert checkpoint_decoder_layers(model, fraction=0.0) == 0
    _loss_and_grads(model, pol, prompts, responses)
    assert calls == [2, 2, 2, 2]  # one more forward each, no recompute: undone
    assert all("forward" not in layer.__dict__ for layer in decoder_layers(model))


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_checkpoint_share_out_of_range_is_refused(fraction):
    model, _ = _model(layers=2)
    with pytest.raises(ConfigError, match=r"within \[0, 1\]"):
        checkpoint_decoder_layers(model, fraction=fraction)


def test_layers_of_a_model_that_is_not_qwen3_vl_are_refused_with_the_setting_to_turn_off():
    with pytest.raises(ConfigError, match="trainer.checkpoint_layers needs a Qwen3-VL model"):
        checkpoint_decoder_layers(torch.nn.Linear(2, 2))
    with pytest.raises(ConfigError, match="trainer.compile_layers needs a Qwen3-VL model"):
        compile_decoder_layers(torch.nn.Linear(2, 2))


@pytest.mark.slow
def test_compiled_layers_run_only_inside_their_block_and_match_eager_with_checkpointing_inside():
    """Compiled layers tracing a checkpoint (full and selective) give the eager loss and gradients.

    Slow: torch.compile tracing checkpointed layers, forward and backward."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    model, proc = _model(layers=2)
    pol, prompts, responses = _batch(proc, model)
    loss0, grads0 = _loss_and_grads(model, pol, prompts, responses)
    for policy in ("full", "save_matmuls"):
        torch._dynamo.reset()
        counters.clear()
        checkpoint_decoder_layers(model, fraction=1.0, policy=policy)
        switch = compile_decoder_layers(model)
        assert switch.count == 2
        assert all(layer._compiled_call_impl is None for layer in decoder_layers(model))  # off until active()
        _loss_and_grads(model, pol, prompts, responses)
        assert counters["stats"]["unique_graphs"] == 0  # eager outside the block
        with switch.active():
            assert all(layer._compiled_call_impl is not None for layer in decoder_layers(model))
            loss1, grads1 = _loss_and_grads(model, pol, prompts, responses)
        assert counters["stats"]["unique_graphs"] > 0
        assert all(layer._compiled_call_impl is None for layer in decoder_layers(model))
        assert loss1 == pytest.approx(loss0, rel=1e-5), policy
        for name in grads0:
            torch.testing.assert_close(grads1[name], grads0[name], rtol=1e-4, atol=1e-6, msg=f"{policy}: {name}")
