"""Presets: the planner input ``hyperpod-rl plan --preset`` uses describes the preset, and the documented figures match the planner.

``hyperpod-6gpu`` is AWS's walkthrough topology as issue 29 quotes it (checked here against the issue's words, not the post).
"""

from __future__ import annotations

import re

import pytest

from hyperpod_rl.cluster import ClusterSpec
from hyperpod_rl.config import presets
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan import GPUS, PlanInput, plan
from hyperpod_rl.run_plan import fit_warnings, plan_input_for, plan_run

#: the presets the planner sizes (GRPO runs; an SFT stage has no rollouts and is refused)
GRPO_PRESETS = [n for n in RunConfig.presets() if RunConfig.from_preset(n).stage == "grpo"]


def _plan_input(name: str, **update) -> PlanInput:
    """The input the CLI plans for the preset (on the preset's own GPU), with ``update`` applied."""
    inp = plan_input_for(RunConfig.from_preset(name), gpu=presets.preset_gpu(name))
    return PlanInput(**{**inp.model_dump(exclude={"gpu"}), "gpu": inp.gpu, **update})


def test_presets_api():
    assert RunConfig.presets() == ["hyperpod-6gpu", "hyperpod-6gpu-sft", "single-node-8gpu", "single-gpu"]
    assert GRPO_PRESETS == ["hyperpod-6gpu", "single-node-8gpu", "single-gpu"]
    assert set(presets.PRESET_GPUS) == set(RunConfig.presets())
    assert set(presets.PRESET_GPUS.values()) <= set(GPUS)  # every preset's GPU is in the planner's table
    assert presets.preset_gpu("hyperpod-6gpu") == presets.preset_gpu("hyperpod-6gpu-sft") == "RTXPRO6000"  # ml.g7e.12xlarge
    with pytest.raises(Exception, match="unknown run preset 'nope'"):
        presets.preset_gpu("nope")


def test_seed_preset_has_the_walkthrough_settings_as_issue_29_quotes_them():
    """Issue 29 item 5: LoRA r32 on Qwen3-VL-8B, FSDP over 6 GPUs, 6 colocated TP1 engines at 0.45, group 8, up to 15 turns,
    eval every 10 steps, export and full checkpoints every 20, resume latest, LoRA synced through shared (FSx) storage."""
    cfg = RunConfig.from_preset("hyperpod-6gpu")
    assert cfg.model.path == "Qwen/Qwen3-VL-8B-Instruct" and cfg.lora.rank == 32
    pl = cfg.placement
    assert (pl.strategy, pl.nodes, pl.gpus_per_node, pl.colocate_all, pl.num_engines, pl.tensor_parallel_size) == ("fsdp", 3, 2, True, 6, 1)
    assert cfg.rollout.gpu_memory_utilization == 0.45 and cfg.grpo.group_size == 8 and cfg.rollout.max_turns == 15
    assert cfg.trainer.eval_interval == 10
    assert (cfg.checkpoint.interval, cfg.checkpoint.export_interval, cfg.checkpoint.resume) == (20, 20, "latest")
    assert cfg.storage.shared and cfg.storage.root.startswith("/fsx/")
    # the docstring says which settings are quoted and which are ours
    doc = " ".join(presets.__doc__.split())
    assert "as issue 29 quotes it" in doc and "Ours, not the post's" in doc and "could not be retrieved" in doc


def test_seed_run_preset_matches_the_seed_cluster_preset():
    """The run's placement is the cluster's shape: one policy node per worker pod, its GPUs, on the planner's GPU."""
    cfg, spec = RunConfig.from_preset("hyperpod-6gpu"), ClusterSpec.from_preset("seed")
    (group,) = spec.worker_groups
    assert (cfg.placement.nodes, cfg.placement.gpus_per_node) == (group.replicas, group.gpus_per_worker)
    assert group.instance_type == "ml.g7e.12xlarge" and spec.head.instance_type == "ml.r5d.16xlarge"
    assert GPUS[presets.preset_gpu("hyperpod-6gpu")].name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def test_sft_preset_is_the_seed_topology_with_stage_sft():
    """Issue 29 item 5's visgym-sft path: SFT on the same cluster, same model, LoRA, placement, storage and turn limit."""
    sft, grpo = RunConfig.from_preset("hyperpod-6gpu-sft"), RunConfig.from_preset("hyperpod-6gpu")
    assert sft.stage == "sft" and grpo.stage == "grpo"
    for section in ("model", "lora", "placement", "storage", "rollout", "checkpoint"):
        assert getattr(sft, section) == getattr(grpo, section), section
    assert sft.sft.rows_per_step == 48 and sft.sft.lr == 1e-4
    # the planner sizes GRPO runs: the SFT stage is refused with the fix, and submit_run's fit check skips it
    with pytest.raises(ConfigError, match=r"stage='sft': the planner sizes GRPO runs .* --preset hyperpod-6gpu"):
        plan_run(sft, gpu="RTXPRO6000")
    assert fit_warnings(sft) == []


def test_grpo_from_the_sft_adapter_builds_on_skyrl_and_is_checked_where_readable(tmp_path):
    """GRPO from the SFT adapter on SkyRL (the walkthrough's recipe): an FSx path this machine does not mount is
    left to the job (hyperpod_rl.train.skyrl_init_adapter loads and checks it there); a readable adapter of
    another rank is refused when built, with the fix."""
    fsx = "/fsx/hyperpod-rl/runs/hyperpod-6gpu-sft/adapter"
    assert RunConfig.from_preset("hyperpod-6gpu", **{"model.init_adapter": fsx}).model.init_adapter == fsx
    (tmp_path / "adapter_config.json").write_text('{"r": 16}')
    with pytest.raises(ConfigError, match=r"model.init_adapter has LoRA rank 16, but lora.rank is 32: set lora.rank=16"):
        RunConfig.from_preset("hyperpod-6gpu", **{"model.init_adapter": str(tmp_path)})


@pytest.mark.parametrize("name", GRPO_PRESETS)
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


#: the planner's sequence (tokens) quoted in ``hyperpod_rl.config.presets``' docstring: 256 text + turns x (198 image + 128 + 32)
DOCUMENTED_SEQ = {"hyperpod-6gpu": 5626, "single-node-8gpu": 2404, "single-gpu": 2404}


@pytest.mark.parametrize("name", GRPO_PRESETS)
def test_documented_sequence_is_the_one_the_cli_plans(name):
    """Reported: the CLI planned 3,014-token sequences (one image, the whole 2,048-token prompt budget as text)
    where this docstring says 2,404 (256 text + 6 images x 198 + 6 turns x (128 + 32))."""
    inp = _plan_input(name)
    turns = RunConfig.from_preset(name).rollout.max_turns
    assert inp.seq_len == DOCUMENTED_SEQ[name] == 256 + turns * (198 + 128 + 32)
    assert f"{inp.seq_len:,}" in " ".join(presets.__doc__.split())
    assert inp.max_prompt_tokens == 256 and inp.image_tokens_per_image + 2 == 198 and inp.max_response_tokens == 128 + 32


#: policy-update peak (GiB per GPU) quoted in ``hyperpod_rl.config.presets``' docstring.
DOCUMENTED_PEAK = {"hyperpod-6gpu": 12, "single-node-8gpu": 15, "single-gpu": 28}


@pytest.mark.parametrize("name", GRPO_PRESETS)
def test_documented_memory_matches_the_planner(name):
    p = plan(_plan_input(name))
    assert round(p.memory.peak_gib) == DOCUMENTED_PEAK[name]
    assert re.search(rf"about {DOCUMENTED_PEAK[name]} (of|GiB)", presets.__doc__)
    assert p.verdicts[0].startswith("policy update fits")


def test_seed_topology_fits_its_gpu_and_not_the_a10g():
    """The planner's evidence that the walkthrough's settings need the 96 GB card: on the RTX PRO 6000 at 0.45 a TP1
    engine keeps about 160k KV tokens; the same settings on ml.g5.12xlarge's A10G (24 GB) leave none."""
    rtx = plan(_plan_input("hyperpod-6gpu"))
    assert rtx.fits and rtx.blockers == [] and round(rtx.kv_cache.tokens, -4) == 160_000
    doc = " ".join(presets.__doc__.split())
    assert "about 12 of 94 GiB" in doc and "about 160k KV tokens" in doc and "28 concurrent 15-turn episodes" in doc
    assert rtx.kv_cache.tokens // rtx.input.seq_len == 28
    a10g = plan(_plan_input("hyperpod-6gpu", gpu="A10G"))
    assert a10g.kv_cache.tokens == 0 and not a10g.fits
    assert "leave no KV cache at all" in doc


def test_a10g_blocker_names_a_fix_that_fits():
    """Reported: on 6 A10G at 0.45 the blocker said no utilization or tensor-parallel size fits, while TP 2 at 0.9 does.
    The fix now names the TP with the utilization it needs, and that fix fits."""
    a10g = plan(_plan_input("hyperpod-6gpu", gpu="A10G"))
    assert a10g.blockers[-1].endswith(
        "set inference_tensor_parallel_size=2 (3 engines of 2 GPUs) with gpu_memory_utilization of at least 0.58"
    ), a10g.blockers
    fixed = plan(_plan_input("hyperpod-6gpu", gpu="A10G", inference_tensor_parallel_size=2, gpu_memory_utilization=0.58))
    assert fixed.fits and fixed.kv_cache.concurrent_sequences >= 1
    assert not plan(_plan_input("hyperpod-6gpu", gpu="A10G", inference_tensor_parallel_size=2, gpu_memory_utilization=0.57)).fits
    # at the old 6-turn sizing, TP 2 alone was enough, and the blocker still says only that
    six = plan(_plan_input("hyperpod-6gpu", gpu="A10G", turns=6, images_per_prompt=6, gpu_memory_utilization=0.9))
    assert six.blockers[-1].endswith("set inference_tensor_parallel_size=2 (3 engines of 2 GPUs)"), six.blockers
    # and where nothing fits, it says so
    tiny_gpu = plan(_plan_input("hyperpod-6gpu", gpu="A10G", gpus_per_node=1, nodes=6))
    assert tiny_gpu.blockers[-1].endswith(
        "no utilization or tensor-parallel size that fits this GPU count: use GPUs with more memory or a smaller model"
    )


@pytest.mark.parametrize("name", ["single-node-8gpu", "single-gpu"])
def test_h200_presets_keep_the_documented_kv_cache(name):
    p = plan(_plan_input(name))
    assert p.fits
    assert round(p.kv_cache.tokens, -3) == 463_000
