"""``RunConfig``: the typed configuration of one GRPO + LoRA training run.

The tree mirrors SkyRL 0.4's config groups (``trainer.policy.model``, ``trainer.algorithm``,
``generator``, ``trainer.*`` batch and checkpoint keys), so the SkyRL backend can translate it
key for key. Every field says its unit and what its default means. Validation collects every
bad field into one :class:`~hyperpod_rl.errors.ConfigError`, one line per field, each naming
the dotted path, the bad value and the fix.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hyperpod_rl.errors import ConfigError

__all__ = [
    "CheckpointConfig",
    "DataConfig",
    "GRPOConfig",
    "LoRAConfig",
    "ModelConfig",
    "RolloutConfig",
    "RunConfig",
    "TrainerConfig",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class ModelConfig(_Section):
    """The base model (SkyRL: ``trainer.policy.model.path``)."""

    path: str = Field("tiny", description="'tiny' builds the embedded random-init Qwen3-VL; otherwise a local Qwen3-VL checkpoint directory")
    model_id: str | None = Field(None, description="id recorded in provenance; defaults to the path or the tiny model id")
    revision: str | None = Field(None, description="base model revision; filled with the directory's content hash when the run starts")
    tiny_hidden_size: int = Field(128, gt=0, description="text hidden size of the tiny model (multiple of 32)")
    tiny_layers: int = Field(2, gt=0, description="decoder layers of the tiny model")

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if self.path != "tiny" and not Path(self.path).expanduser().is_dir():
            raise ValueError(
                f"model.path={self.path!r} is not a directory: pass a local Qwen3-VL checkpoint "
                "directory (config.json + weights + processor files), or 'tiny'"
            )
        if self.tiny_hidden_size % 32:
            raise ValueError(f"model.tiny_hidden_size must be a multiple of 32, got {self.tiny_hidden_size}")
        if "thinking" in self.path.lower():
            raise ValueError(
                "model.path names a Thinking variant: use an Instruct model (multi-turn image-token "
                "mismatch, SkyRL issue #2075)"
            )
        return self


class LoRAConfig(_Section):
    """LoRA adapter (SkyRL: ``trainer.policy.model.lora.*``; peft ``LoraConfig``)."""

    rank: int = Field(16, gt=0, le=256, description="LoRA rank r")
    alpha: float = Field(32.0, gt=0, description="LoRA alpha (scaling = alpha / rank)")
    dropout: float = Field(0.0, ge=0, lt=1, description="LoRA dropout probability")
    target_modules: list[str] | Literal["all-linear"] = Field(
        "all-linear", description="peft target_modules; 'all-linear' as SkyRL's default"
    )
    exclude_modules: str | None = Field(
        r".*visual.*",
        description="regex of modules left without LoRA; the vision tower by default so rollout "
        "(vLLM: LoRA on the language model only) and training policies match",
    )


class GRPOConfig(_Section):
    """GRPO (Shao et al. 2024, DeepSeekMath, arXiv:2402.03300) with a PPO-clipped loss.

    SkyRL keys: ``trainer.algorithm.{advantage_estimator=grpo, use_kl_loss, kl_loss_coef,
    eps_clip_low, eps_clip_high}``, ``generator.n_samples_per_prompt``.
    """

    group_size: int = Field(8, description="samples per maze (the group), SkyRL generator.n_samples_per_prompt")
    clip_eps: float = Field(0.2, gt=0, lt=1, description="PPO ratio clip epsilon")
    kl_coef: float = Field(0.0, ge=0, description="KL-to-reference-model loss coefficient; 0 turns the reference model off")
    entropy_coef: float = Field(0.01, ge=0, description="entropy bonus coefficient (keeps a tiny policy from collapsing)")
    normalize_std: bool = Field(True, description="divide group-relative advantages by the group std")
    advantage: Literal["outcome", "process"] = Field(
        "outcome",
        description="'outcome': every turn gets its episode's group-normalised return (SkyRL's grpo); "
        "'process': step rewards normalised over the group, advantage = sum of later normalised rewards "
        "(DeepSeekMath §4.1.3 process supervision)",
    )
    gamma: float = Field(1.0, ge=0, le=1, description="discount over turns for advantage='process'")
    lr: float = Field(5e-4, gt=0, description="AdamW learning rate (3e-3 made the tiny policy collapse to one answer)")
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0, description="gradient clipping (L2 norm)")

    @field_validator("group_size")
    @classmethod
    def _group_size(cls, value: int) -> int:
        if value < 2:
            raise ValueError("group_size must be >= 2 (group-relative advantages need at least two samples per maze)")
        return value


class RolloutConfig(_Section):
    """Multi-turn rollouts through the maze env."""

    max_turns: int = Field(6, gt=0, description="turn limit per episode")
    temperature: float = Field(1.0, gt=0, description="sampling temperature during training rollouts")
    action_constraint: Literal["directions", "none"] = Field(
        "directions",
        description="'directions': the answer is <answer>DIR</answer> with DIR sampled from the four "
        "direction tokens (constrained decoding, needed for tiny random models); 'none': free generation",
    )
    max_new_tokens: int = Field(32, gt=0, description="response token limit when action_constraint='none'")


class DataConfig(_Section):
    """Dataset paths (SkyRL: ``data.train_data`` / ``data.val_data``)."""

    train_path: str = Field(..., description="parquet of train rows (SkyRL dataset format)")
    heldout_path: str = Field(..., description="parquet of held-out rows")
    mazes_per_step: int = Field(8, gt=0, description="mazes per GRPO step (train batch = mazes_per_step * group_size episodes)")


class TrainerConfig(_Section):
    """Optimisation schedule."""

    steps: int = Field(120, gt=0, description="GRPO steps (SkyRL trainer.max_training_steps)")
    seed: int = Field(0, description="seed for Python, NumPy and torch")
    eval_mazes: int = Field(200, gt=0, description="held-out mazes evaluated before and after training")
    micro_batch_size: int = Field(64, gt=0, description="samples per forward/backward chunk")
    torch_threads: int | None = Field(None, description="torch intra-op threads (default: torch's choice)")


class CheckpointConfig(_Section):
    """Checkpoints (SkyRL: ``trainer.ckpt_interval``, ``trainer.ckpt_path``)."""

    interval: int = Field(40, ge=0, description="steps between checkpoints; 0 turns them off")
    keep: int = Field(2, gt=0, description="checkpoints kept on disk")


class RunConfig(_Section):
    """Everything one run needs. ``RunConfig.model_validate_json(text)`` round-trips it."""

    run_id: str = Field(..., pattern=r"^[a-z0-9][a-z0-9-]{2,62}$", description="run id: lower-case letters, digits, '-'")
    backend: Literal["reference", "skyrl"] = "reference"
    model: ModelConfig = ModelConfig()
    lora: LoRAConfig = LoRAConfig()
    grpo: GRPOConfig = GRPOConfig()
    rollout: RolloutConfig = RolloutConfig()
    data: DataConfig
    trainer: TrainerConfig = TrainerConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()

    @classmethod
    def build(cls, data: dict[str, Any]) -> RunConfig:
        """Validate a plain dict, turning pydantic's errors into one :class:`ConfigError`.

        Raises:
            ConfigError: one line per bad field: ``<dotted.path>: <problem>``.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise ConfigError(_format_errors(err)) from None

    def config_hash(self) -> str:
        """sha256 (16 hex chars) of the canonical JSON of the config, without the run id."""
        payload = self.model_dump(mode="json", exclude={"run_id"})
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _format_errors(err: ValidationError) -> str:
    lines = []
    for item in err.errors():
        path = ".".join(str(p) for p in item["loc"]) or "config"
        msg = item["msg"].removeprefix("Value error, ")
        lines.append(f"{path}: {msg} (got {item.get('input')!r})" if "input" in item and not isinstance(item.get("input"), dict) else f"{path}: {msg}")
    return "invalid run config:\n  " + "\n  ".join(lines)
