"""The SFT stage on the SkyRL backend: the demonstrations as a chat dataset, trained by SkyRL 0.3.0's own SFT trainer.

``python -m hyperpod_rl.train --backend skyrl`` with ``stage='sft'`` lands here. The job

1. replays every train row's demonstration through the task's env
   (:func:`hyperpod_rl.train.sft.demonstration_episode`, the rollout code the reference SFT and
   GRPO use) and writes one chat example per turn to ``<run dir>/sft-data/train.parquet``
   (:func:`write_sft_dataset`): the turn's context (system + observation with its image) and the
   demonstration's completion as the last assistant message;
2. loads :func:`hyperpod_rl.config.skyrl_sft.to_skyrl_sft_overrides` with
   ``SFTConfig.from_cli_overrides``, validates it (``validate_sft_cfg``) and runs
   ``skyrl.train.main_sft.sft_entrypoint`` as SkyRL's own CLI does;
3. exports the adapter as the GRPO path does (:func:`hyperpod_rl.train.skyrl_backend.export_adapter`).

Images: SkyRL's SFT tokenizer recognises image parts of type ``image`` only (``sft_trainer.
tokenize_chat_example``), so the rollout's ``image_url`` parts are rewritten to
``{"type": "image", "image": <data URL>}`` (transformers' ``load_image`` decodes data URLs).

Status: steps 1-2 are tested on CPU (the dataset through SkyRL's own tokenizer function with the
tiny model's processor; the overrides through SkyRL's loader and validator); the GPU job itself
has not run here (no GPU).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.config.skyrl_sft import SFT_DATA_DIR, to_skyrl_sft_overrides
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.runs import RunPaths, read_config
from hyperpod_rl.tasks import get_task, read_rows
from hyperpod_rl.train.sft import demonstration_episode

__all__ = ["sft_messages", "write_sft_dataset"]


def _image_part(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("type") == "image_url":
        url = part["image_url"]["url"] if isinstance(part.get("image_url"), dict) else part.get("image_url")
        return {"type": "image", "image": url}
    return dict(part)


def sft_messages(context: list[dict[str, Any]], completion: str) -> list[dict[str, Any]]:
    """One SkyRL SFT example: ``context`` with image parts as ``{"type": "image", "image": url}``,
    then the assistant's ``completion``; every content is a list of parts (parquet needs one type per column)."""
    out = []
    for msg in context:
        content = msg["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else [_image_part(p) for p in content]
        out.append({"role": msg["role"], "content": parts})
    return [*out, {"role": "assistant", "content": [{"type": "text", "text": completion}]}]


def write_sft_dataset(task_name: str, rows: Iterable[dict[str, Any]], out_dir: str | Path, *, max_turns: int | None) -> dict[str, int]:
    """Write ``<out_dir>/train.parquet``: one ``messages`` example per demonstration turn.

    Returns:
        ``{"rows": rows with a usable demonstration, "skipped": rows without, "examples": turns written}``.

    Raises:
        ConfigError: no row has a demonstration that succeeds within ``max_turns``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    task = get_task(task_name)
    examples: list[list[dict[str, Any]]] = []
    used = skipped = 0
    for row in rows:
        episode = demonstration_episode(None, task, row, max_turns=max_turns)
        if episode is None:
            skipped += 1
            continue
        used += 1
        examples.extend(sft_messages(t.context, t.action.text) for t in episode.turns)
    if not examples:
        raise ConfigError(
            f"no train row of task {task_name!r} has a demonstration that succeeds within {max_turns} turns: raise rollout.max_turns"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = pa.table({"messages": examples})
    pq.write_table(table, out / "train.parquet")
    return {"rows": used, "skipped": skipped, "examples": len(examples)}


def main(config_path: str, *, fresh: bool = False) -> Path:
    """Entry for ``stage='sft'`` under ``--backend skyrl`` (GPU cluster; see the module docstring).

    Raises:
        ConfigError: the config is not a SkyRL SFT config, or no demonstration succeeds.
    """
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    run_dir = Path(config_path).resolve().parent
    config: RunConfig = read_config(RunPaths(run_dir))
    overrides = to_skyrl_sft_overrides(config, run_dir)
    if fresh:
        import shutil

        for sub in ("checkpoints", "skyrl-export", SFT_DATA_DIR):
            shutil.rmtree(run_dir / sub, ignore_errors=True)
    stats = write_sft_dataset(
        config.task.name, read_rows(config.data.train_path), run_dir / SFT_DATA_DIR, max_turns=config.rollout.max_turns
    )
    print(f"SFT demonstrations: {stats['examples']} turns from {stats['rows']} rows ({stats['skipped']} rows skipped)", flush=True)

    import ray
    from skyrl.train.config.sft_config import SFTConfig, build_skyrl_config_for_sft, validate_sft_cfg
    from skyrl.train.main_sft import sft_entrypoint
    from skyrl.train.utils.utils import initialize_ray

    from hyperpod_rl.train.skyrl_backend import base_model_revision, export_adapter

    sft_cfg = SFTConfig.from_cli_overrides(overrides)
    validate_sft_cfg(sft_cfg)
    skyrl_cfg = build_skyrl_config_for_sft(sft_cfg)
    initialize_ray(skyrl_cfg)
    ray.get(sft_entrypoint.remote(sft_cfg, skyrl_cfg))
    adapter = export_adapter(config, run_dir, base_revision=base_model_revision(config))
    print(f"adapter written to {adapter}", flush=True)
    return adapter
