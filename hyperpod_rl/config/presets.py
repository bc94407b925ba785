"""Run presets for the SkyRL backend (Qwen3-VL-8B-Instruct, GRPO, LoRA r32, colocated FSDP2 + vLLM).

Every preset is a plain dict that :meth:`RunConfig.from_preset` validates; overrides are merged
in first, so an override that breaks a rule fails with the same field-naming message as any
other config. Each preset names the GPU of its nodes (:data:`PRESET_GPUS`). ``tests/config``
loads each preset through SkyRL 0.4's own loader and validator, and recomputes the figures below
with the planner on exactly the input ``hyperpod-rl plan --preset NAME`` uses
(:func:`hyperpod_rl.run_plan.plan_input_for` on the preset's GPU), so the numbers in these
docstrings cannot drift from the planner or the command.

Shared sizing (:func:`hyperpod_rl.run_plan.plan_input_for`): a maze episode is at most 6 turns,
each turn one 448x448 px image (196 image tokens + 2) and at most 128 generated tokens plus a
32-token environment reply, after a 256-token text prompt; the planner's sequence is 2,404
tokens. Qwen3-VL-8B has 8.77 B parameters: 16.3 GiB in bf16.

``hyperpod-6gpu`` (the seed topology: CPU head + 3 GPU workers x 2 GPUs, ml.g5.12xlarge, A10G 24 GB)
    FSDP2 over 6 GPUs, colocate_all, 6 vLLM engines at TP1, LoRA r32 on the language linears,
    12 mazes x 8 samples per step, 2 optimizer steps (6 mazes each), micro batch 2 per GPU.
    Policy update: about 9 GiB of 22 GiB per GPU (weights 2.7 + FSDP2 buffers 2.9 + LoRA 0.2
    + activations 2.2 + chunked log-prob logits 0.5 + 0.5 overhead, plus 1.5 GiB held by the
    sleeping engine), so micro batch 2 fits with room; no KL term, so no reference model copy.
    **Rollout is the tight part**: a TP1 engine holds all 16.3 GiB of bf16 weights on a 22 GiB
    card; at gpu_memory_utilization 0.9 the planner (which reserves 4 GiB of vLLM workspace)
    leaves no KV cache at all and flags it as a blocker (``hyperpod-rl plan --preset hyperpod-6gpu``,
    planned on the A10G, exits 1 and suggests tensor parallel size 2). vLLM's real workspace on a 24 GB card is
    smaller, but expect only a few thousand KV tokens per engine. If engines fail to start or
    preempt constantly, use ``placement={"num_engines": 3, "tensor_parallel_size": 2}``
    (111k KV tokens per engine by the planner) or a 48 GB GPU (ml.g6e).
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


#: name -> the preset's config dict (without ``run_id``; the preset name is the default run id).
PRESETS: dict[str, dict[str, Any]] = {
    "hyperpod-6gpu": _merge(
        _COMMON,
        {
            "placement": {
                "nodes": 3,
                "gpus_per_node": 2,
                "colocate_all": True,
                "num_engines": 6,
                "tensor_parallel_size": 1,
            },
            "rollout": {"gpu_memory_utilization": 0.9, "max_num_seqs": 64},
            "data": {**_data("/fsx/hyperpod-rl"), "prompts_per_step": 12},
            "trainer": {"mini_batch_size": 6, "micro_batch_size": 2},
            "storage": {"root": "/fsx/hyperpod-rl", "shared": True},
        },
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
    "hyperpod-6gpu": "A10G",  # ml.g5.12xlarge: 4 x A10G 24 GB, 2 used per node
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
