"""Run presets for the SkyRL backend (Qwen3-VL-8B-Instruct, GRPO, LoRA r32, colocated FSDP2 + vLLM).

Every preset is a plain dict that :meth:`RunConfig.from_preset` validates; overrides are merged
in first, so an override that breaks a rule fails with the same field-naming message as any
other config. Each preset names the GPU of its nodes (:data:`PRESET_GPUS`). ``tests/config``
loads each preset through SkyRL 0.3.0's own loader and validator, and recomputes the figures below
with the planner on exactly the input ``hyperpod-rl plan --preset NAME`` uses
(:func:`hyperpod_rl.run_plan.plan_input_for` on the preset's GPU), so the numbers in these
docstrings cannot drift from the planner or the command.

Shared sizing (:func:`hyperpod_rl.run_plan.plan_input_for`): each maze turn is one 448x448 px
image (196 image tokens + 2) and at most 128 generated tokens plus a 32-token environment reply,
after a 256-token text prompt; at the 6 turns of the H200 presets the planner's sequence is 2,404
tokens (``hyperpod-6gpu``'s 15 turns: 5,626). Qwen3-VL-8B has 8.77 B parameters: 16.3 GiB in bf16.

``hyperpod-6gpu`` (the seed topology: AWS's walkthrough of SkyRL on HyperPod, 2026-09-25, as issue 29 quotes it)
    **Quoted from the post, as issue 29 quotes it** (the post itself could not be retrieved here,
    so none of this is checked against it): 3 x ml.g7e.12xlarge workers with 2 x NVIDIA RTX PRO
    6000 Blackwell (96 GB) each, an ml.r5d.16xlarge CPU head (512 GB, consolidates LoRA shards;
    ``ClusterSpec.from_preset("seed")``), Qwen3-VL-8B, LoRA r32, FSDP over 6 GPUs with 6
    colocated vLLM engines (TP1) at gpu_memory_utilization 0.45, 8 samples per prompt, up to 15
    turns, evaluation every 10 steps, export (``checkpoint.export_interval``) and full checkpoints
    every 20, resume_mode latest, LoRA synced through FSx (``storage.root`` on the shared volume).
    **Ours, not the post's** (the issue does not quote them): 12 mazes x 8 samples per step, 2
    optimizer steps (6 mazes each), micro batch 2 per GPU, lr 3e-5 (SkyRL's Qwen3-VL-8B LoRA
    recipe), 200 steps, KL off, max_num_seqs 64, the token limits of every preset.
    Planned on the RTX PRO 6000 (``hyperpod-rl plan --preset hyperpod-6gpu``), a 15-turn episode
    is 5,626 tokens (256 + 15 images x 198 + 15 turns x 160). Policy update: about 12 of 94 GiB
    per GPU (1.5 GiB of it held by the sleeping engine), so micro batch 2 fits with room; no KL
    term, so no reference model copy. Rollout: at 0.45 a TP1 engine keeps its 16.3 GiB of bf16
    weights and, by the planner's count (4 GiB of vLLM workspace reserved), about 160k KV tokens,
    28 concurrent 15-turn episodes per engine; a step's 96 episodes are 16 per engine. The fit
    is the GPU's: the same settings on ml.g5.12xlarge's A10G (24 GB) leave no KV cache at all
    (the planner's fix there, TP 2 at gpu_memory_utilization 0.58 or more, is not the published
    engine layout; ``tests/config/test_run_presets.py``).
``hyperpod-6gpu-sft`` (the SFT warm start on the same cluster; ``stage='sft'``, docs/sft.md)
    The walkthrough starts GRPO from a supervised checkpoint of the maze task (as issue 29 quotes
    it). Same model, LoRA, placement, storage and rollout limits as ``hyperpod-6gpu`` (so its
    demonstrations are played up to 15 turns, in the GRPO rollout's chat format), trained by
    SkyRL 0.3.0's own SFT trainer (:mod:`hyperpod_rl.config.skyrl_sft`). **Ours, not the post's**:
    48 demonstration turns per step (8 per GPU, micro batch 2: SkyRL's batch rule), lr 1e-4
    (an untuned LoRA SFT rate for the 8B model; the ``sft.lr`` default, 2e-3, is the tiny
    quickstart model's), 200 steps. Not planned: the planner sizes GRPO runs (rollouts and the
    policy update) and refuses an SFT stage. The GRPO run starts from its adapter with
    ``model.init_adapter=/fsx/hyperpod-rl/runs/hyperpod-6gpu-sft/adapter``
    (:mod:`hyperpod_rl.train.skyrl_init_adapter` loads it into SkyRL's policy).
``single-node-8gpu`` (one 8 x H200 node, e.g. ml.p5en.48xlarge)
    FSDP2 over 8 GPUs, 8 engines at TP1, 32 mazes x 8 samples per step, 2 optimizer steps,
    micro batch 8, KL 0.001 (a reference model, colocated and offloaded while the policy trains).
    Policy update about 15 of 140 GiB per GPU (activations 8.9 GiB dominate); vLLM at 0.6 keeps
    about 463k KV tokens per engine (192 concurrent 2,404-token episodes), so a step's 256
    episodes decode in one or two waves across the 8 engines.
``single-gpu`` (one H200)
    No sharding: all 16.3 GiB of weights plus 1.3 GiB of LoRA state on the one GPU; 8 mazes x 8
    samples, one optimizer step, micro batch 8; policy update about 28 of 140 GiB. One engine at
    0.6 keeps about 463k KV tokens, so all 64 episodes decode together.
"""

from __future__ import annotations

import copy
from typing import Any

from hyperpod_rl.errors import ConfigError

__all__ = ["PRESETS", "PRESET_GPUS", "preset_dict", "preset_gpu", "preset_names", "with_overrides"]

_MODEL = "Qwen/Qwen3-VL-8B-Instruct"

_COMMON: dict[str, Any] = {
    "backend": "skyrl",
    "model": {"path": _MODEL, "model_id": _MODEL},
    # Qwen3-VL-8B LoRA recipe of SkyRL's geometry3k example: rank 32, alpha 32, lr 3e-5.
    "lora": {
        "rank": 32,
        "alpha": 32.0,
        "dropout": 0.0,
        "target_modules": "all-linear",
        "exclude_modules": r".*visual.*",
        "max_serving_rank": 64,
    },
    "grpo": {
        "group_size": 8,
        "lr": 3e-5,
        "kl_coef": 0.0,
        "entropy_coef": 0.0,
        "clip_eps": 0.2,
        "advantage": "outcome",
        "weight_decay": 0.0,
    },
    "rollout": {
        "max_turns": 6,
        "temperature": 1.0,
        "action_constraint": "none",
        "max_new_tokens": 128,
        "max_prompt_tokens": 2048,
        "max_input_tokens": 8192,
        "max_model_len": 16384,
    },
    "trainer": {
        "steps": 200,
        "seed": 0,
        "gradient_checkpointing": True,
        "eval_interval": 20,
    },
    "checkpoint": {"interval": 20, "keep": 2, "resume": "latest"},
    "logging": {"logger": "console", "project_name": "hyperpod-rl"},
}


def _data(root: str) -> dict[str, Any]:
    return {
        "train_path": f"{root}/datasets/maze/train.parquet",
        "heldout_path": f"{root}/datasets/maze/heldout.parquet",
    }


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


#: The seed topology's run settings (``hyperpod-6gpu``; see the module docstring for which are quoted from
#: AWS's walkthrough as issue 29 quotes it, and which are ours).
_SEED: dict[str, Any] = {
    "placement": {
        "nodes": 3,
        "gpus_per_node": 2,
        "colocate_all": True,
        "num_engines": 6,
        "tensor_parallel_size": 1,
    },
    "rollout": {"gpu_memory_utilization": 0.45, "max_num_seqs": 64, "max_turns": 15},
    "data": {**_data("/fsx/hyperpod-rl"), "prompts_per_step": 12},
    "trainer": {"mini_batch_size": 6, "micro_batch_size": 2, "eval_interval": 10},
    "checkpoint": {"interval": 20, "export_interval": 20, "resume": "latest"},
    "storage": {"root": "/fsx/hyperpod-rl", "shared": True},
}

#: name -> the preset's config dict (without ``run_id``; the preset name is the default run id).
PRESETS: dict[str, dict[str, Any]] = {
    "hyperpod-6gpu": _merge(_COMMON, _SEED),
    "hyperpod-6gpu-sft": _merge(
        _COMMON,
        _merge(
            _SEED,
            {
                "stage": "sft",
                "sft": {"rows_per_step": 48, "lr": 1e-4},
            },
        ),
    ),
    "single-node-8gpu": _merge(
        _COMMON,
        {
            "placement": {
                "nodes": 1,
                "gpus_per_node": 8,
                "colocate_all": True,
                "num_engines": 8,
                "tensor_parallel_size": 1,
            },
            "grpo": {"kl_coef": 0.001},
            "rollout": {"gpu_memory_utilization": 0.6, "max_num_seqs": 256},
            "data": {**_data("/data/hyperpod-rl"), "prompts_per_step": 32},
            "trainer": {"mini_batch_size": 16, "micro_batch_size": 8},
            "storage": {"root": "/data/hyperpod-rl", "shared": False},
        },
    ),
    "single-gpu": _merge(
        _COMMON,
        {
            "placement": {
                "nodes": 1,
                "gpus_per_node": 1,
                "colocate_all": True,
                "num_engines": 1,
                "tensor_parallel_size": 1,
            },
            "rollout": {"gpu_memory_utilization": 0.6, "max_num_seqs": 128},
            "data": {**_data("/data/hyperpod-rl"), "prompts_per_step": 8},
            "trainer": {"mini_batch_size": 8, "micro_batch_size": 8},
            "storage": {"root": "/data/hyperpod-rl", "shared": False},
        },
    ),
}

#: name -> the GPU the preset's nodes have (a name of ``hyperpod_rl.plan.GPUS``): what
#: ``hyperpod-rl plan --preset NAME`` plans for unless ``--gpu`` says otherwise.
PRESET_GPUS: dict[str, str] = {
    "hyperpod-6gpu": "RTXPRO6000",  # ml.g7e.12xlarge: 2 x RTX PRO 6000 Blackwell Server Edition
    "hyperpod-6gpu-sft": "RTXPRO6000",
    "single-node-8gpu": "H200",  # ml.p5en.48xlarge
    "single-gpu": "H200",
}


def preset_gpu(name: str) -> str:
    """The GPU (a short name of ``hyperpod_rl.plan.GPUS``) the preset ``name`` runs on.

    Raises:
        ConfigError: unknown preset name.
    """
    if name not in PRESET_GPUS:
        raise ConfigError(f"unknown run preset {name!r}: use one of {', '.join(PRESETS)}")
    return PRESET_GPUS[name]


def preset_names() -> list[str]:
    """The preset names, in a stable order."""
    return list(PRESETS)


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    node = data
    *parents, leaf = dotted.split(".")
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {dotted!r}: {part!r} is not a section")
        node = child
    node[leaf] = value


def preset_dict(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The preset ``name`` as a plain dict, with ``overrides`` merged in (not yet validated).

    Raises:
        ConfigError: unknown preset name, or a dotted override through a non-section field.
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown run preset {name!r}: use one of {', '.join(PRESETS)}")
    return with_overrides({"run_id": name, **PRESETS[name]}, overrides)


def with_overrides(data: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """A deep copy of the config dict ``data`` with ``overrides`` merged in (not yet validated).

    Overrides are section dicts merged into a section (``{"lora": {"rank": 16}}``), top-level
    fields, or dotted paths (``{"lora.rank": 16}``).

    Raises:
        ConfigError: a dotted override goes through a field that is not a section.
    """
    data = copy.deepcopy(data)
    for key, value in (overrides or {}).items():
        if "." in key:
            _set_dotted(data, key, value)
        elif isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = _merge(data[key], value)
        else:
            data[key] = value
    return data
