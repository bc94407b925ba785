"""``RunConfig``: the typed configuration of one GRPO + LoRA training run.

The tree mirrors SkyRL 0.3.0's config groups (``trainer.policy.model``, ``trainer.algorithm``,
``generator``, ``trainer.*`` batch and checkpoint keys), so the SkyRL backend can translate it
key for key. Every field says its unit and what its default means. Validation collects every
bad field into one :class:`~hyperpod_rl.errors.ConfigError`, one line per field, each naming
the dotted path, the bad value and the fix.

Sections added for the SkyRL backend (placement, storage, logging, and the rollout-engine,
batch and checkpoint fields) are read only by :func:`hyperpod_rl.config.skyrl.to_skyrl_overrides`,
the one function that knows SkyRL's key names; the reference backend ignores them. Cross-field rules
(:mod:`hyperpod_rl.config.validate`) run when the config is built, so an invalid config
cannot be constructed at all, let alone submitted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from hyperpod_rl.base import load_user_data
from hyperpod_rl.config.sections import (
    CheckpointConfig,
    DataConfig,
    GRPOConfig,
    LoggingConfig,
    LoRAConfig,
    ModelConfig,
    PlacementConfig,
    RolloutConfig,
    StorageConfig,
    TaskConfig,
    TrainerConfig,
    _Section,
)
from hyperpod_rl.config.sft import SFTConfig, Stage, sft_problems
from hyperpod_rl.config.validate import cross_field_problems
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.paths import RUN_ID_PATTERN

__all__ = [
    "CheckpointConfig",
    "DataConfig",
    "GRPOConfig",
    "LoRAConfig",
    "LoggingConfig",
    "ModelConfig",
    "PlacementConfig",
    "RolloutConfig",
    "RunConfig",
    "SFTConfig",
    "StorageConfig",
    "TaskConfig",
    "TrainerConfig",
]


class RunConfig(_Section):
    """Everything one run needs. ``RunConfig.model_validate_json(text)`` round-trips it.

    Build one with :meth:`build` (a dict), :meth:`from_preset`, or the constructor; invalid input
    raises :class:`~hyperpod_rl.errors.ConfigError` listing every bad field.
    """

    error_what = "run config"

    run_id: str = Field(..., pattern=RUN_ID_PATTERN, description="run id: 3-63 lower-case letters, digits, '-'")
    backend: Literal["reference", "skyrl"] = "reference"
    stage: Stage = Field(
        "grpo",
        description="'grpo': reinforcement learning on the task's reward; 'sft': supervised fine-tuning on the task's "
        "demonstrations (its own solver), the warm start a GRPO run continues with model.init_adapter",
    )
    task: TaskConfig = TaskConfig()
    model: ModelConfig = ModelConfig()
    lora: LoRAConfig = LoRAConfig()
    grpo: GRPOConfig = GRPOConfig()
    rollout: RolloutConfig = RolloutConfig()
    data: DataConfig
    trainer: TrainerConfig = TrainerConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    placement: PlacementConfig = PlacementConfig()
    storage: StorageConfig = StorageConfig()
    logging: LoggingConfig = LoggingConfig()
    sft: SFTConfig = SFTConfig()

    @model_validator(mode="after")
    def _cross_field(self) -> RunConfig:
        problems = cross_field_problems(self) + sft_problems(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def validated(self) -> RunConfig:
        """This config re-validated from its JSON form (``model_copy(update=...)`` skips validation).

        Callers that accept a config from elsewhere (``submit_run``) call this before using it.

        Raises:
            ConfigError: one line per bad field.
        """
        return type(self).build(self.model_dump(mode="json"))

    @classmethod
    def presets(cls) -> list[str]:
        """Names of the built-in run presets (:mod:`hyperpod_rl.config.presets`)."""
        from hyperpod_rl.config.presets import preset_names

        return preset_names()

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> RunConfig:
        """A preset with overrides, validated.

        Overrides are section dicts merged into the preset (``lora={"rank": 16}``), top-level
        fields (``run_id="exp-1"``), or dotted paths passed with ``**{"lora.rank": 16}``.

        Raises:
            ConfigError: unknown preset name, or the result is invalid (one line per field).
        """
        from hyperpod_rl.config.presets import preset_dict

        return cls.build(preset_dict(name, overrides))

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> RunConfig:
        """A run config from a YAML or JSON file (the dict :meth:`build` takes), with overrides, validated.

        Overrides are as in :meth:`from_preset` (dotted paths with ``**{"trainer.micro_batch_size": 4}``).

        Raises:
            ConfigError: the file cannot be read, is not UTF-8 or is not YAML/JSON, or is too large,
                too deeply nested or an alias bomb (:func:`hyperpod_rl.base.load_user_data`), does
                not hold a mapping, or the result is invalid (one line per field).
        """
        from hyperpod_rl.config.presets import with_overrides

        path = Path(path)
        data = load_user_data(path, "run config file", fix="give an existing YAML or JSON file")  # JSON is YAML
        if not isinstance(data, dict):
            held = "nothing (it is empty)" if data is None else f"a {type(data).__name__}"
            raise ConfigError(
                f"run config file {str(path)!r} holds {held}, not a mapping: write the RunConfig fields "
                "(run_id, backend, data, trainer, ...) as keys at the top level"
            )
        return cls.build(with_overrides(data, overrides))

    def config_hash(self) -> str:
        """sha256 (16 hex chars) of the canonical JSON of the config, without the run id.

        The default task (the maze with default options) is left out too, so a maze config hashes
        as it did before configs named their task. A renamed field (a section's
        ``renamed_fields``, e.g. ``data.mazes_per_step`` -> ``data.prompts_per_step``) is hashed
        under the name the hash first saw, so a config keeps its hash across renames: a file
        written with the old names and one with the new names hash the same, and so do the
        hashes recorded in run directories before the rename (resume still matches them).
        Fields added later (:data:`ADDED_FIELDS`: the SFT stage, ``model.init_adapter``, the
        rollout engine, its sleep and its importance correction, ``checkpoint.export_interval``) are left out while at their defaults, so a
        config written before them hashes as it did.
        """
        exclude: dict[str, Any] = {"run_id": True}
        if self.task.is_default:
            exclude["task"] = True
        # the SFT stage's fields are left out at their defaults, so GRPO configs hash as before
        if self.stage == "grpo" and self.sft == SFTConfig():
            exclude.update(stage=True, sft=True)
        payload = self.model_dump(mode="json", exclude=exclude)
        for section, name in ADDED_FIELDS:
            part = payload.get(section)
            if isinstance(part, dict) and name in part and part[name] == _field_default(type(getattr(self, section)), name):
                del part[name]
        for section, value in payload.items():
            renamed = getattr(type(getattr(self, section)), "renamed_fields", None)
            if renamed and isinstance(value, dict):
                payload[section] = {_hashed_name(renamed, key): v for key, v in value.items()}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


#: (section, field) pairs added after configs were first hashed: left out of :meth:`RunConfig.config_hash`
#: while at their defaults, so configs written before them keep their hash (and their runs resume).
ADDED_FIELDS: tuple[tuple[str, str], ...] = (
    ("sft", "parameters"),
    ("model", "init_adapter"),
    ("rollout", "engine"),
    ("rollout", "engine_sleep"),
    ("grpo", "is_correction"),
    ("grpo", "is_cap"),
    ("checkpoint", "export_interval"),
)


def _field_default(model: Any, name: str) -> Any:
    return model.model_fields[name].get_default(call_default_factory=True)


def _hashed_name(renamed: Mapping[str, str], name: str) -> str:
    """The name a field is hashed under: its first name if it was renamed (``renamed``: old -> new)."""
    for old, new in renamed.items():
        if new == name:
            return old
    return name
