"""Start a run from an existing LoRA adapter (``model.init_adapter``), e.g. GRPO from an SFT warm start.

The adapter must belong to this run's base model: its ``provenance.json`` records the base model
revision it was trained on, and a different revision is refused (the LoRA deltas of one
checkpoint mean nothing on another). Its files must match their checksums, its rank must be
``lora.rank``, and every tensor must land on a LoRA module of this model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyperpod_rl.base import load_user_data
from hyperpod_rl.config.sections import LoRAConfig
from hyperpod_rl.config.sft import read_adapter_record
from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.model.recovery import adapter_recovery
from hyperpod_rl.runs.files import verify_checksums
from hyperpod_rl.runs.lineage import init_adapter_entry

__all__ = ["check_init_adapter", "load_init_adapter"]


def check_init_adapter(path: str | Path, *, base_revision: str, lora: LoRAConfig) -> dict[str, Any]:
    """Check that the adapter at ``path`` can start a run on base model ``base_revision``.

    Returns:
        Its ``provenance.json`` (``{}`` when it has none and nothing contradicts).

    Raises:
        ConfigError: not an adapter directory, trained on another base model revision, or with another rank.
        CheckpointError: its files do not match their checksums.
    """
    root = Path(path).expanduser()
    if not (root / "adapter_config.json").is_file() or not (root / "adapter_model.safetensors").is_file():
        raise ConfigError(
            f"model.init_adapter={str(path)!r} is not an adapter directory (adapter_config.json + adapter_model.safetensors): "
            "give a finished run's adapter/ directory (--from-run RUN_ID)"
        )
    if (root / "checksums.json").is_file():
        problem = verify_checksums(root)
        if problem is not None:
            raise CheckpointError(f"model.init_adapter {root}: {problem}; retrain that run or pick another adapter")
    record = read_adapter_record(root) or {}
    theirs = record.get("base_model_revision")
    if theirs is None:
        raise ConfigError(
            f"model.init_adapter {root} has no provenance.json naming its base model revision, so it cannot be checked against "
            f"this run's base model (revision {base_revision}): start from an adapter this package trained (--from-run RUN_ID)"
        )
    if theirs != base_revision:
        raise ConfigError(
            f"model.init_adapter {root} was trained on base model revision {theirs}, but this run's base model is revision "
            f"{base_revision}: set model.path to that adapter's base model, or start from an adapter trained on this one"
        )
    adapter_config = load_user_data(
        root / "adapter_config.json", "model.init_adapter adapter_config.json", syntax="json", repair=adapter_recovery(root)
    )
    rank = adapter_config.get("r") if isinstance(adapter_config, dict) else None
    if rank is not None and int(rank) != lora.rank:
        raise ConfigError(f"model.init_adapter {root} has LoRA rank {rank}, but lora.rank is {lora.rank}: set lora.rank={rank}")
    return record


def load_init_adapter(model: Any, path: str | Path, *, base_revision: str, lora: LoRAConfig) -> dict[str, Any]:
    """Check (:func:`check_init_adapter`) and load the adapter's weights into the peft ``model``.

    Returns:
        The run's record of its starting adapter (:func:`hyperpod_rl.runs.lineage.init_adapter_entry`),
        with the adapter's full ``provenance.json`` under ``"record"``.

    Raises:
        ConfigError: see :func:`check_init_adapter`; or a tensor of the adapter has no LoRA module in
            this model (different ``lora.target_modules`` / ``exclude_modules``).
    """
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    record = check_init_adapter(path, base_revision=base_revision, lora=lora)
    weights = load_file(str(Path(path).expanduser() / "adapter_model.safetensors"))
    result: Any = set_peft_model_state_dict(model, weights)  # peft returns the load result (its annotation says None)
    unexpected = list(getattr(result, "unexpected_keys", []) or [])
    if unexpected:
        raise ConfigError(
            f"model.init_adapter {path}: {len(unexpected)} tensors (e.g. {unexpected[0]}) have no LoRA module in this model: "
            "use the lora.target_modules and lora.exclude_modules the adapter was trained with"
        )
    print(
        f"LoRA adapter initialised from {path} ({record.get('stage', 'grpo')} run {record.get('run_id')}, {record.get('steps')} steps)",
        flush=True,
    )
    return {**init_adapter_entry(path, record), "record": record}
