"""An adapter's lineage: the chain of stages it was trained through, base -> SFT -> GRPO.

Every adapter's ``provenance.json`` holds ``lineage``, a list oldest first: the base model
(``{"stage": "base", "model_id", "revision"}``), then one entry per run that trained the adapter
(``{"stage": "sft"|"grpo", "run_id", "steps", "adapter_sha256", "config_hash"}``). A run that
starts from ``model.init_adapter`` copies that adapter's lineage and appends itself, so a GRPO
adapter warm-started from SFT reads ``base -> sft -> grpo``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["adapter_lineage", "finished_adapter", "init_adapter_entry", "lineage_text"]


def init_adapter_entry(path: str | Path, record: dict[str, Any] | None) -> dict[str, Any]:
    """What a run records about the adapter it started from: its path, run id, stage, steps,
    weights hash and base model revision (from its ``provenance.json`` ``record``; None: unknown)."""
    record = record or {}
    return {
        "path": str(path),
        "run_id": record.get("run_id"),
        "stage": record.get("stage", "grpo"),
        "steps": record.get("steps"),
        "adapter_sha256": record.get("adapter_sha256"),
        "base_model_revision": record.get("base_model_revision"),
    }


def adapter_lineage(
    *,
    base_model_id: str,
    base_model_revision: str,
    init_record: dict[str, Any] | None,
    run: dict[str, Any],
) -> list[dict[str, Any]]:
    """The lineage of an adapter a run exports.

    Args:
        base_model_id, base_model_revision: the run's base model.
        init_record: the ``provenance.json`` of the adapter the run started from (None: a fresh adapter).
        run: this run's entry (``stage``, ``run_id``, ``steps``, ``adapter_sha256``, ``config_hash``).

    Returns:
        The chain oldest first: ``[base, ..., run]``. An init adapter recorded without a lineage
        (written before lineages existed) contributes one entry built from its record.
    """
    base = {"stage": "base", "model_id": base_model_id, "revision": base_model_revision}
    chain: list[dict[str, Any]] = [base]
    if init_record is not None:
        earlier = init_record.get("lineage")
        if isinstance(earlier, list) and earlier:
            chain = [dict(e) for e in earlier]
        else:
            chain.append(
                {
                    "stage": init_record.get("stage", "grpo"),
                    "run_id": init_record.get("run_id"),
                    "steps": init_record.get("steps"),
                    "adapter_sha256": init_record.get("adapter_sha256"),
                    "config_hash": init_record.get("config_hash"),
                }
            )
    return [*chain, dict(run)]


def lineage_text(lineage: list[dict[str, Any]]) -> str:
    """One line, e.g. ``base tiny-qwen3-vl@ab12 -> sft qs-sft (200 steps) -> grpo qs (200 steps)``."""
    parts = []
    for e in lineage:
        if e.get("stage") == "base":
            parts.append(f"base {e.get('model_id')}@{str(e.get('revision'))[:12]}")
        else:
            parts.append(f"{e.get('stage')} {e.get('run_id')} ({e.get('steps')} steps)")
    return " -> ".join(parts)


def finished_adapter(run_id: str, *, storage: Path | None = None) -> Path:
    """The exported adapter directory of the finished run ``run_id`` (what ``--from-run RUN_ID`` starts from).

    Raises:
        ConfigError: the run id is invalid, or the run has no exported adapter (not finished, or
            not a run of this storage root).
    """
    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.runs.layout import run_paths

    paths = run_paths(run_id, storage=storage)
    adapter = paths.adapter
    if not (adapter / "adapter_config.json").is_file() or not (adapter / "provenance.json").is_file():
        raise ConfigError(
            f"--from-run {run_id}: {adapter} holds no finished adapter; wait for that run to finish "
            f"(hyperpod-rl job status {run_id}), or check HYPERPOD_RL_STORAGE points at its storage root"
        )
    return adapter
