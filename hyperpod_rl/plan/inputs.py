"""What the planner is asked: one GRPO + LoRA run's shape on its cluster."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from hyperpod_rl.base import RaisesOnInit, listed
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan.hardware import GPUS, GPUSpec, gpu_spec
from hyperpod_rl.plan.images import image_tokens
from hyperpod_rl.plan.shapes import ModelShape, model_shape, shape_from_hf_config

__all__ = ["ALL_LINEAR", "PlanInput"]

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class PlanInput(RaisesOnInit):
    """Inputs of :func:`hyperpod_rl.plan.plan` (construction raises :class:`ConfigError` listing every bad field). Token counts are per sequence, sizes in pixels.

    A sequence is ``max_prompt_tokens`` of prompt text, ``images_per_prompt`` images
    (each ``image_tokens + 2`` tokens), then ``turns`` turns of at most
    ``max_response_tokens`` each (generated text plus the environment's reply).
    """

    error_what = "planner input"

    model: str | dict[str, Any] = Field(default="Qwen/Qwen3-VL-8B-Instruct", description="hub id / short name ('8B') or a config.json dict")
    lora_rank: int = Field(default=32, gt=0)
    lora_target_modules: tuple[str, ...] = Field(default=ALL_LINEAR, description="language-model linears with adapters")
    micro_train_batch_size_per_gpu: int = Field(default=4, gt=0, description="sequences per forward/backward on one GPU")
    mini_batch_size: int = Field(default=64, gt=0, description="sequences per optimizer step (policy_mini_batch_size x group_size)")
    train_batch_size: int = Field(default=64, gt=0, description="prompts per training step")
    group_size: int = Field(default=8, gt=0, description="samples per prompt (n_samples_per_prompt)")
    turns: int = Field(default=1, gt=0)
    max_prompt_tokens: int = Field(default=128, ge=0, description="prompt text tokens, image tokens excluded")
    max_response_tokens: int = Field(default=512, gt=0, description="tokens per turn (generation + environment reply)")
    image_px: tuple[int, int] = Field(default=(448, 448), description="(height, width) of each image, pixels")
    images_per_prompt: int = Field(default=1, ge=0)
    gpus_per_node: int = Field(default=8, gt=0)
    nodes: int = Field(default=1, gt=0)
    placement: Literal["colocated", "split"] = "colocated"
    inference_gpus: int = Field(default=0, ge=0, description="GPUs for vLLM when placement='split' (0: same count as training)")
    inference_tensor_parallel_size: int = Field(default=1, gt=0)
    gpu_memory_utilization: float = Field(default=0.6, gt=0, le=1.0, description="vLLM's fraction of GPU memory")
    engine_sleeps: bool = Field(
        default=True,
        description="a colocated vLLM engine sleeps during the update (False: it stays awake and keeps its whole "
        "gpu_memory_utilization share beside the update; rollout.engine_sleep)",
    )
    gradient_checkpointing: bool = True
    checkpoint_layers: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="share of the decoder layers checkpointed, with gradient_checkpointing (trainer.checkpoint_layers)",
    )
    checkpoint_policy: Literal["full", "save_matmuls"] = Field(
        default="full", description="what a checkpointed layer keeps: its input only, or also matmul and attention outputs"
    )
    use_kl: bool = Field(default=False, description="KL to a reference model (a second, frozen copy of the base model)")
    offload_reference: bool = Field(default=True, description="reference model sits on the CPU during the policy update")
    fsdp: bool = Field(default=True, description="FSDP2 policy (False: one plain process, the benchmark baseline)")
    rollout_engine: Literal["vllm", "hf_compiled"] = Field(
        default="vllm",
        description="who generates: vLLM engines (SkyRL) or the reference backend's compiled transformers decoding, in-process",
    )
    generated_tokens_per_turn: int | None = Field(
        default=None, gt=0, description="generated tokens per turn (rollout.max_new_tokens); None: max_response_tokens"
    )
    logprob_impl: Literal["chunked", "naive"] = "chunked"
    adapter_compute_dtype: Literal["bf16", "fp32"] = Field(default="bf16", description="bf16: FSDP2 mixed precision; fp32: peft default")
    chunk_tokens: int = Field(default=1024, gt=0, description="response_logprobs chunk size")
    gpu: str | GPUSpec = Field(default="H200", description="a short name of GPUS (case-insensitive) or the GPU's figures")

    @field_validator("gpu")
    @classmethod
    def _canonical_gpu(cls, value: str | GPUSpec) -> str | GPUSpec:
        """``"h200"`` -> ``"H200"``; an unknown name is left for :meth:`gpu_spec` to reject with the list of known GPUs."""
        if isinstance(value, str):
            return next((key for key in GPUS if key.casefold() == value.strip().casefold()), value)
        return value

    def model_post_init(self, context: Any, /) -> None:
        """Cross-field checks; raises :class:`ConfigError` naming the field (not wrapped by pydantic)."""
        self.shape()  # resolves or raises ConfigError naming the model
        self.gpu_spec()
        unknown = set(self.lora_target_modules) - set(ALL_LINEAR)
        if unknown:
            raise ConfigError(
                f"lora_target_modules has {listed(sorted(unknown))}, which are not Qwen3-VL language linears; use a subset of {listed(ALL_LINEAR)}"
            )
        if self.placement == "colocated" and self.inference_gpus:
            raise ConfigError("inference_gpus is only for placement='split'; colocated engines share the training GPUs, so leave it 0")
        if not self.engine_sleeps and (self.placement != "colocated" or self.fsdp):
            raise ConfigError(
                "engine_sleeps=False is the reference backend's awake colocated engine (one process, no FSDP2): "
                "leave it True with fsdp=True or placement='split'"
            )
        if self.gpu_memory_utilization > 0.95:
            raise ConfigError(
                f"gpu_memory_utilization={self.gpu_memory_utilization} leaves no room for CUDA context and graphs; use 0.9 or less"
            )
        h, w = self.image_px
        if h <= 0 or w <= 0:
            raise ConfigError(f"image_px must be positive (height, width), got {self.image_px}")

    def shape(self) -> ModelShape:
        return shape_from_hf_config(self.model) if isinstance(self.model, dict) else model_shape(self.model)

    def gpu_spec(self) -> GPUSpec:
        return self.gpu if isinstance(self.gpu, GPUSpec) else gpu_spec(self.gpu)

    @property
    def world_size(self) -> int:
        """Policy (training) GPUs."""
        return self.gpus_per_node * self.nodes

    @property
    def image_tokens_per_image(self) -> int:
        return image_tokens(*self.image_px) if self.images_per_prompt else 0

    @property
    def seq_len(self) -> int:
        """Tokens of one full trajectory: prompt text, images with their start/end tokens, all turns."""
        return self.max_prompt_tokens + self.images_per_prompt * (self.image_tokens_per_image + 2) + self.turns * self.max_response_tokens

    @property
    def response_len(self) -> int:
        """Tokens whose log-probs the update needs."""
        return self.turns * self.max_response_tokens
