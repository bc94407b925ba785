"""Presets: the planner input ``hyperpod-rl plan --preset`` uses describes the preset, and the documented figures match the planner."""

from __future__ import annotations

import re

import pytest

from hyperpod_rl.config import presets
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.plan import GPUS, PlanInput, plan
from hyperpod_rl.run_plan import plan_input_for


def _plan_input(name: str, **update) -> PlanInput:
    """The input the CLI plans for the preset (on the preset's own GPU), with ``update`` applied."""
    inp = plan_input_for(RunConfig.from_preset(name), gpu=presets.preset_gpu(name))
    return PlanInput(**{**inp.model_dump(exclude={"gpu"}), "gpu": inp.gpu, **update})


def test_presets_api():
    assert RunConfig.presets() == ["hyperpod-6gpu", "single-node-8gpu", "single-gpu"]
    assert set(presets.PRESET_GPUS) == set(RunConfig.presets())
    assert set(presets.PRESET_GPUS.values()) <= set(GPUS)  # every preset's GPU is in the planner's table
    assert presets.preset_gpu("hyperpod-6gpu") == "A10G"  # ml.g5.12xlarge
    with pytest.raises(Exception, match="unknown run preset 'nope'"):
        presets.preset_gpu("nope")


@pytest.mark.parametrize("name", RunConfig.presets())
def test_planner_input_describes_the_preset(name):
    cfg = RunConfig.from_preset(name)
    inp = _plan_input(name)
    assert (inp.nodes, inp.gpus_per_node) == (cfg.placement.nodes, cfg.placement.gpus_per_node)
    assert inp.train_batch_size == cfg.data.prompts_per_step
    assert inp.mini_batch_size == cfg.trainer.mini_batch_size * cfg.grpo.group_size
    assert inp.micro_train_batch_size_per_gpu == cfg.trainer.micro_batch_size
    assert inp.group_size == cfg.grpo.group_size
    assert inp.lora_rank == cfg.lora.rank
    assert inp.use_kl == (cfg.grpo.kl_coef > 0)
    assert inp.gpu_memory_utilization == cfg.rollout.gpu_memory_utilization
    assert inp.turns == cfg.rollout.max_turns
    assert inp.max_response_tokens >= cfg.rollout.max_new_tokens
    assert inp.images_per_prompt == cfg.rollout.max_turns  # one maze image per turn
    assert inp.gpu_spec() == GPUS[presets.PRESET_GPUS[name]]


@pytest.mark.parametrize("name", RunConfig.presets())
def test_documented_sequence_is_the_one_the_cli_plans(name):
    """Reported: the CLI planned 3,014-token sequences (one image, the whole 2,048-token prompt budget as text)
    where this docstring says 2,404 (256 text + 6 images x 198 + 6 turns x (128 + 32))."""
    inp = _plan_input(name)
    assert inp.seq_len == 2404
    assert f"the planner's sequence is {inp.seq_len:,}" in " ".join(presets.__doc__.split())
    assert inp.max_prompt_tokens == 256 and inp.image_tokens_per_image + 2 == 198 and inp.max_response_tokens == 128 + 32


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
    # the blocker names a tensor-parallel size that tiles the 6 GPUs, splits the heads and fits (3 does not split 32 heads)
    assert tp1.blockers[-1].endswith("set inference_tensor_parallel_size=2 (3 engines of 2 GPUs)"), tp1.blockers
    assert "suggests tensor parallel size 2" in " ".join(presets.__doc__.split())
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
