"""The SkyRL backend: ``python -m hyperpod_rl.train --backend skyrl --config <run dir>/config.json``.

Runs SkyRL 0.4's GRPO trainer (FSDP2 policy shards colocated with vLLM rollout engines) on the
Ray cluster the job runs in, then writes the same artifacts as the reference backend:

1. ``RAY_OVERRIDE_JOB_RUNTIME_ENV=1`` is set before Ray starts (SkyRL's own ``ray.init(runtime_env=...)``
   otherwise conflicts with the Ray Job's runtime env);
2. the run's SkyRL paths are unique to the run: ``ckpt_path`` = ``<run dir>/checkpoints`` (so
   ``resume_mode=latest`` only ever resumes this run), ``export_path``, ``lora_sync_path`` and
   ``log_path`` beside it (:mod:`hyperpod_rl.config.skyrl`). A checkpoint directory written with
   another config is refused, as in the reference backend, and on resume the metric records after
   the checkpoint's step are dropped (SkyRL produces those steps again);
3. the trainer runs in a Ray task that first registers the run's task env (``RunConfig.task``) with skyrl_gym (the registry
   is per process, so it must happen inside the task: SkyRL's visgym ``entrypoint.py`` pattern);
4. SkyRL's tracker is wrapped so each committed step also goes to ``metrics.jsonl`` and the job
   log as a :class:`~hyperpod_rl.metrics.schema.MetricRecord` (:mod:`hyperpod_rl.train.skyrl_metrics`);
5. still inside the task (on a GPU worker, where rank 0 wrote it), the PEFT adapter of the final
   checkpoint (``global_step_N/policy/lora_adapter/``) is copied to ``<run dir>/adapter/`` with
   ``provenance.json`` and ``checksums.json``, the reference layout.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.config.skyrl import RUN_SUBDIRS, to_skyrl_overrides
from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.runs import RunPaths, read_config
from hyperpod_rl.runs.files import file_sha256, write_dir_atomically, write_json_atomic
from hyperpod_rl.runs.versions import provenance_record
from hyperpod_rl.tasks import get_task
from hyperpod_rl.train.skyrl_metrics import MetricRecordSink

__all__ = [
    "ADAPTER_FILES",
    "JOB_ENV_VARS",
    "base_model_revision",
    "export_adapter",
    "final_adapter_dir",
    "main",
    "prepare_run",
]

log = logging.getLogger(__name__)

#: Environment the job needs before Ray starts (also worth passing as the Ray Job's env_vars).
JOB_ENV_VARS = {"RAY_OVERRIDE_JOB_RUNTIME_ENV": "1"}

#: PEFT files SkyRL's FSDP strategy writes into ``lora_adapter/`` (``fsdp_strategy._save_lora_adapters``).
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json")

_HASH_FILE = "hprl_config_hash.txt"


def prepare_run(config: RunConfig, run_dir: str | Path, *, fresh: bool = False) -> dict[str, object]:
    """Make the run directory ready and return the SkyRL overrides for it.

    ``fresh`` deletes this run's checkpoints and metrics first. Otherwise an existing checkpoint
    directory must have been written with the same config (``config_hash``), so a resubmission
    resumes only its own run.

    Raises:
        ConfigError: ``config.backend`` is not ``'skyrl'``.
        CheckpointError: the checkpoints belong to a different config.
    """
    if config.backend != "skyrl":
        raise ConfigError(f"backend={config.backend!r} in the run's config.json: the SkyRL entrypoint needs backend='skyrl'")
    rd = Path(run_dir)
    ckpt = rd / RUN_SUBDIRS["ckpt_path"]
    if fresh:
        for name in (RUN_SUBDIRS["ckpt_path"], RUN_SUBDIRS["lora_sync_path"]):
            shutil.rmtree(rd / name, ignore_errors=True)
        RunPaths(rd).metrics.unlink(missing_ok=True)
    ckpt.mkdir(parents=True, exist_ok=True)
    marker = ckpt / _HASH_FILE
    if marker.exists() and marker.read_text().strip() != config.config_hash():
        raise CheckpointError(
            f"checkpoints under {ckpt} were written with a different config (hash {marker.read_text().strip()}); "
            "resubmit with --fresh or the original config"
        )
    marker.write_text(config.config_hash())
    _trim_metrics(RunPaths(rd).metrics, _latest_step(ckpt))
    return to_skyrl_overrides(config, rd)


def _latest_step(ckpt: Path) -> int:
    """The step SkyRL resumes from (``latest_ckpt_global_step.txt``), 0 without a checkpoint."""
    latest = ckpt / "latest_ckpt_global_step.txt"
    try:
        return int(latest.read_text().strip())
    except (OSError, ValueError):
        return 0


def _trim_metrics(path: Path, step: int) -> None:
    """Drop metric records after ``step``: SkyRL produces those steps again when it resumes."""
    if not path.exists():
        return
    kept = [line for line in path.read_text().splitlines(keepends=True) if (rec := _step_of(line)) is not None and rec <= step]
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(kept))
    os.replace(tmp, path)


def _step_of(line: str) -> int | None:
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return None


def base_model_revision(config: RunConfig) -> str:
    """The base model revision recorded in provenance.

    ``model.revision`` when set; for a local directory its content hash; for a hub id the commit
    of the cached snapshot (``huggingface_hub``), else ``'<id>@unresolved'``.
    """
    if config.model.revision:
        return config.model.revision
    path = Path(config.model.path)
    if path.is_dir():
        from hyperpod_rl.model.loading import revision_of

        return revision_of(path)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(config.model.path, local_files_only=True)).name
    except Exception:  # noqa: BLE001 - any hub/cache failure means "not resolvable here"
        return f"{config.model.path}@unresolved"


def final_adapter_dir(ckpt_path: str | Path) -> tuple[Path, int]:
    """``(global_step_N/policy/lora_adapter, N)`` of the newest complete SkyRL checkpoint.

    SkyRL writes ``latest_ckpt_global_step.txt`` last, after every file of the step.

    Raises:
        CheckpointError: no finished checkpoint, or its adapter files are missing.
    """
    root = Path(ckpt_path)
    latest = root / "latest_ckpt_global_step.txt"
    if not latest.is_file():
        raise CheckpointError(f"no finished SkyRL checkpoint under {root} ({latest.name} is missing): the run did not save one")
    try:
        step = int(latest.read_text().strip())
    except ValueError:
        raise CheckpointError(f"{latest} is corrupt: {latest.read_text()[:40]!r}") from None
    adapter = root / f"global_step_{step}" / "policy" / "lora_adapter"
    missing = [name for name in ADAPTER_FILES if not (adapter / name).is_file()]
    if missing:
        raise CheckpointError(f"checkpoint {adapter} lacks {', '.join(missing)}: was lora.rank 0, or the save cut off?")
    return adapter, step


def _check_adapter(source: Path) -> None:
    """Refuse adapters vLLM would not serve as trained: vision-tower LoRA or extra saved modules."""
    from safetensors import safe_open

    with safe_open(str(source / "adapter_model.safetensors"), framework="pt") as fh:
        keys = list(fh.keys())
    vision = [k for k in keys if ".visual." in k or k.startswith("visual.")]
    if vision:
        raise CheckpointError(
            f"adapter has {len(vision)} vision-tower tensors (e.g. {vision[0]}): vLLM drops them, set lora.exclude_modules='.*visual.*'"
        )
    cfg = json.loads((source / "adapter_config.json").read_text())
    if cfg.get("modules_to_save"):
        raise CheckpointError(f"adapter_config.json has modules_to_save={cfg['modules_to_save']}: vLLM rejects such adapters")


def export_adapter(config: RunConfig, run_dir: str | Path, *, base_revision: str | None = None) -> Path:
    """Copy the final checkpoint's adapter to ``<run dir>/adapter`` with ``provenance.json``.

    Same layout as :meth:`hyperpod_rl.train.reference.ReferenceTrainer.export_adapter`:
    ``adapter_model.safetensors``, ``adapter_config.json``, ``provenance.json``, ``checksums.json``,
    written atomically.

    Raises:
        CheckpointError: no finished checkpoint, or its adapter would not serve as trained.
    """
    rd = Path(run_dir)
    source, step = final_adapter_dir(rd / RUN_SUBDIRS["ckpt_path"])
    _check_adapter(source)
    revision = base_revision or base_model_revision(config)

    def write(tmp: Path) -> None:
        for name in ADAPTER_FILES:
            shutil.copyfile(source / name, tmp / name)
        prov = provenance_record(
            run_id=config.run_id,
            backend=config.backend,
            base_model_id=config.model.model_id or config.model.path,
            base_model_revision=revision,
            config_hash=config.config_hash(),
            dataset_hashes={
                "train": file_sha256(config.data.train_path),
                "heldout": file_sha256(config.data.heldout_path),
            },
            reward_version=get_task(config.task.name).reward_version,
            seeds={"trainer": config.trainer.seed},
            lora=config.lora.model_dump(mode="json"),
            adapter_sha256=file_sha256(tmp / "adapter_model.safetensors"),
            steps=step,
        )
        prov["action_constraint"] = config.rollout.action_constraint
        prov["task"] = config.task.name
        write_json_atomic(tmp / "provenance.json", prov)

    return write_dir_atomically(RunPaths(rd).adapter, write)


def _trainer_task(skyrl_cfg: Any, config_json: str, run_dir: str) -> str:
    """Body of the Ray task that runs SkyRL's trainer, then exports the adapter.

    It runs on a GPU worker (``num_cpus=1``; the head has none), so the export reads the final
    checkpoint where it was written even when the run directory is not shared with the head.

    Returns:
        The adapter directory.
    """
    from skyrl.train.entrypoints.main_base import BasePPOExp
    from skyrl.train.utils.tracking import Tracking

    from hyperpod_rl.tasks import register_env

    config = RunConfig.model_validate_json(config_json)
    register_env(config.task.name)  # skyrl_gym's registry is per process: register inside the trainer task
    sink = MetricRecordSink(config.run_id, config.trainer.steps, RunPaths(Path(run_dir)).metrics)

    class _RecordTracking(Tracking):
        def log(self, data: dict[str, Any], step: int, commit: bool = False) -> None:
            super().log(data, step, commit=commit)
            sink.write(data, step)

    class _Exp(BasePPOExp):
        def get_tracker(self) -> Tracking:
            t = self.cfg.trainer
            return _RecordTracking(
                project_name=t.project_name,
                experiment_name=t.run_name,
                backend=t.logger,
                config=self.cfg,
                tags=t.tags,
            )

    _Exp(skyrl_cfg).run()
    return str(export_adapter(config, run_dir))


def main(config_path: str, *, fresh: bool = False) -> Path:
    """Entry of ``python -m hyperpod_rl.train --backend skyrl``: train with SkyRL and export the adapter.

    Raises:
        ConfigError: the config is invalid or not a SkyRL config.
        CheckpointError: see :func:`prepare_run` and :func:`export_adapter`.
    """
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    for key, value in JOB_ENV_VARS.items():
        os.environ[key] = value  # before SkyRL's ray.init
    config = read_config(RunPaths(Path(config_path).resolve().parent))
    run_dir = Path(config_path).resolve().parent
    overrides = prepare_run(config, run_dir, fresh=fresh)

    import ray
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.utils import validate_cfg
    from skyrl.train.utils.utils import initialize_ray

    skyrl_cfg = SkyRLTrainConfig.from_cli_overrides(overrides)
    validate_cfg(skyrl_cfg)
    initialize_ray(skyrl_cfg)
    task = ray.remote(num_cpus=1)(_trainer_task)
    adapter = Path(ray.get(task.remote(skyrl_cfg, config.model_dump_json(), str(run_dir))))
    print(f"adapter written to {adapter}", flush=True)
    return adapter
