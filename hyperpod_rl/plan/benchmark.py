"""The GPU harness's configs and variants in the planner's terms, and its result files.

``benchmarks/gpu/policy_update.py`` records, per config, several variants of the
same LoRA policy update. This module says which :class:`PlanInput` each variant is,
so that predictions can be recomputed from the JSON alone (the CPU tests do this).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hyperpod_rl.base import listed, load_user_data
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan.inputs import PlanInput

__all__ = ["CHECKPOINTING", "VARIANTS", "bench_plan_input", "load_records"]

#: variant name -> (FSDP2?, log-prob path, adapter compute dtype)
VARIANTS: dict[str, tuple[bool, str, str]] = {
    "naive": (False, "naive", "fp32"),  # HF + peft as shipped, full-vocabulary float32 log_softmax
    "chunked": (False, "chunked", "fp32"),  # same model, response_logprobs
    "improved": (True, "chunked", "bf16"),  # FSDP2 mixed precision + response_logprobs
    "fsdp_naive": (True, "naive", "bf16"),  # FSDP2 mixed precision + full logits
    "autocast_bf16": (False, "chunked", "bf16"),  # one process, float32 adapters computed in bf16 (autocast)
    # the "ckpt" suite: autocast_bf16 with compiled layers and checkpointing placed by hyperpod_rl.model.layers
    "autocast_bf16_compile": (False, "chunked", "bf16"),
    "compile_ckpt_inside": (False, "chunked", "bf16"),
    "compile_ckpt_half": (False, "chunked", "bf16"),
    "compile_ckpt_quarter": (False, "chunked", "bf16"),
    "compile_sac": (False, "chunked", "bf16"),
    "sac": (False, "chunked", "bf16"),
}
#: variant -> (checkpoint_layers, checkpoint_policy) where it is not (1.0, "full")
CHECKPOINTING: dict[str, tuple[float, str]] = {
    "compile_ckpt_half": (0.5, "full"),
    "compile_ckpt_quarter": (0.25, "full"),
    "compile_sac": (1.0, "save_matmuls"),
    "sac": (1.0, "save_matmuls"),
}


def bench_plan_input(config: Mapping[str, Any], *, gpus: int, variant: str) -> PlanInput:
    """PlanInput for one harness config (``record["config"]``) run as ``variant`` on ``gpus`` GPUs.

    Raises:
        ConfigError: unknown variant.
    """
    if variant not in VARIANTS:
        raise ConfigError(f"unknown harness variant {variant!r}; use one of {listed(sorted(VARIANTS))}")
    fsdp, logprob, adapter = VARIANTS[variant]
    layers, policy = CHECKPOINTING.get(variant, (1.0, "full"))
    px = int(config["image_px"])
    b = int(config["batch"])
    return PlanInput(
        model=str(config.get("model", "Qwen/Qwen3-VL-8B-Instruct")),
        lora_rank=32,
        micro_train_batch_size_per_gpu=b,
        mini_batch_size=b * gpus,
        train_batch_size=b * gpus,
        group_size=1,
        max_prompt_tokens=int(config["prompt_text_tokens"]),
        max_response_tokens=int(config["response_tokens"]),
        image_px=(px, px),
        gpus_per_node=gpus,
        nodes=1,
        gradient_checkpointing=bool(config["gradient_checkpointing"]),
        checkpoint_layers=layers,
        checkpoint_policy=policy,
        fsdp=fsdp,
        logprob_impl=logprob,
        adapter_compute_dtype=adapter,
        placement="split",
        gpu="H200",
    )


def load_records(path: Path) -> list[dict[str, Any]]:
    """The measurement records of one harness result file.

    The file is the envelope every benchmark writes (``benchmarks/_record.py``): provenance
    fields plus ``results``, the JSON list of records.

    Raises:
        ConfigError: the file is not a harness result file.
    """
    data = load_user_data(path, "harness result file", syntax="json", max_bytes=None)
    records = data.get("results") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise ConfigError(f"{path} is not a harness result file (expected a JSON object whose 'results' is a list of records)")
    return records
