"""Presets: their planner inputs match the preset, and the documented memory figures match the planner."""

from __future__ import annotations

import re

import pytest

from hyperpod_rl.config import presets
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.plan import GPUSpec, PlanInput, plan


def _plan_input(name: str, **update) -> PlanInput:
    fields = dict(presets.PLANNER_INPUTS[name], **update)
    if isinstance(fields["gpu"], dict):
        fields["gpu"] = GPUSpec(**fields["gpu"])
    return PlanInput(**fields)


def test_presets_api():
    assert RunConfig.presets() == ["hyperpod-6gpu", "single-node-8gpu", "single-gpu"]
    assert set(presets.PLANNER_INPUTS) == set(RunConfig.presets())


@pytest.mark.parametrize("name", RunConfig.presets())
def test_planner_inputs_describe_the_preset(name):
    cfg = RunConfig.from_preset(name)
    inp = presets.PLANNER_INPUTS[name]
    assert (inp["nodes"], inp["gpus_per_node"]) == (
        cfg.placement.nodes,
        cfg.placement.gpus_per_node,
    )
    assert inp["train_batch_size"] == cfg.data.mazes_per_step
    assert inp["mini_batch_size"] == cfg.trainer.mini_batch_size * cfg.grpo.group_size
    assert inp["micro_train_batch_size_per_gpu"] == cfg.trainer.micro_batch_size
    assert inp["group_size"] == cfg.grpo.group_size
    assert inp["lora_rank"] == cfg.lora.rank
    assert inp["use_kl"] == (cfg.grpo.kl_coef > 0)
    assert inp["gpu_memory_utilization"] == cfg.rollout.gpu_memory_utilization
    assert inp["turns"] == cfg.rollout.max_turns
    assert inp["max_response_tokens"] >= cfg.rollout.max_new_tokens


#: policy-update peak (GiB per GPU) quoted in ``hyperpod_rl.config.presets``' docstring.
DOCUMENTED_PEAK = {"hyperpod-6gpu": 9, "single-node-8gpu": 15, "single-gpu": 28}


@pytest.mark.parametrize("name", RunConfig.presets())
def test_documented_memory_matches_the_planner(name):
    p = plan(_plan_input(name))
    assert round(p.memory.peak_gib) == DOCUMENTED_PEAK[name]
    assert re.search(rf"about {DOCUMENTED_PEAK[name]} (of|GiB)", presets.__doc__)
    assert p.verdicts[0].startswith("policy update fits")


def test_seed_topology_rollout_is_tight_as_documented():
    """On A10G (24 GB) a TP1 engine of the 8B model leaves the planner no KV cache; TP2 does."""
    tp1 = plan(_plan_input("hyperpod-6gpu"))
    assert tp1.kv_cache.tokens == 0 and not tp1.fits
    assert "leaves no KV cache" in presets.__doc__
    tp2 = plan(_plan_input("hyperpod-6gpu", inference_tensor_parallel_size=2))
    assert tp2.fits and round(tp2.kv_cache.tokens, -3) == 111_000
    alt = RunConfig.from_preset("hyperpod-6gpu", placement={"num_engines": 3, "tensor_parallel_size": 2})
    assert alt.placement.rollout_gpus == 6


@pytest.mark.parametrize("name", ["single-node-8gpu", "single-gpu"])
def test_h200_presets_keep_the_documented_kv_cache(name):
    p = plan(_plan_input(name))
    assert p.fits
    assert round(p.kv_cache.tokens, -3) == 463_000
