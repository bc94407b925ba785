"""The SkyRL backend: ``python -m hyperpod_rl.train --backend skyrl --config <run dir>/config.json``.

Runs SkyRL 0.3.0's GRPO trainer (FSDP2 policy shards colocated with vLLM rollout engines) on the
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
5. the task also registers the tie-safe GRPO advantage estimator (:mod:`hyperpod_rl.train.skyrl_advantage`;
   the driver registers it too, before ``validate_cfg``) and adds its tied-group share to each
   step's metrics (``reward/tied_group_share``);
6. before SkyRL reads the datasets, the task drops the rows whose real prompt (text + image tokens,
   counted with the base model's processor) exceeds ``rollout.max_prompt_tokens`` and points
   ``data.train_data`` / ``data.val_data`` at the filtered copies in ``<run dir>/skyrl-data/``
   (SkyRL's own length filter counts text tokens only); how many rows were dropped goes to the job
   log and the adapter's provenance (``prompt_filter``);
7. with ``model.init_adapter`` (e.g. GRPO from an SFT warm start) the adapter is checked against the
   run (base model revision, rank, checksums) and SkyRL's trainer builds its policy with
   :func:`hyperpod_rl.train.skyrl_init_adapter.policy_worker_class`, which loads the adapter into the
   sharded LoRA before the first weight sync, so rollouts and updates both start from it;
8. still inside the task (on a GPU worker, where rank 0 wrote it), the PEFT adapter of the final
   checkpoint (``global_step_N/policy/lora_adapter/``) is copied to ``<run dir>/adapter/`` with
   ``provenance.json`` and ``checksums.json``, the reference layout; ``adapter_config.json`` is
   rewritten with sorted lists and keys (byte-identical for identical runs), and every
   ``lora.target_modules`` entry must have wrapped a module (counted from the adapter's weight
   names, recorded as ``lora_matched_modules``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from hyperpod_rl.base import listed
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
    "FILTERED_DATA_SUBDIR",
    "JOB_ENV_VARS",
    "base_model_revision",
    "export_adapter",
    "filter_datasets",
    "final_adapter_dir",
    "flash_attn_installed",
    "main",
    "prepare_run",
]

log = logging.getLogger(__name__)

#: Environment the job needs before Ray starts (also worth passing as the Ray Job's env_vars).
JOB_ENV_VARS = {"RAY_OVERRIDE_JOB_RUNTIME_ENV": "1"}

#: PEFT files SkyRL's FSDP strategy writes into ``lora_adapter/`` (``fsdp_strategy._save_lora_adapters``).
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json")

_HASH_FILE = "hprl_config_hash.txt"

#: Sub-directory of the run directory with the prompt-length-filtered datasets SkyRL reads.
FILTERED_DATA_SUBDIR = "skyrl-data"
_FILTER_REPORT = "prompt_filter.json"


def filter_datasets(config: RunConfig, run_dir: str | Path, processor: Any) -> dict[str, str]:
    """Write the rows whose real prompt fits ``rollout.max_prompt_tokens`` to ``<run dir>/skyrl-data/``.

    Each row's prompt is counted with the base model's processor, image tokens included
    (:func:`hyperpod_rl.model.prompts.filter_rows`); the kept rows are copied unchanged (the
    parquet table's own rows), and ``prompt_filter.json`` records limit, kept and dropped per split.

    Args:
        config: the run's config.
        run_dir: the run directory.
        processor: the base model's processor (:func:`hyperpod_rl.model.loading.load_processor`).

    Returns:
        ``{"train": path, "heldout": path}`` of the filtered parquet files.

    Raises:
        ConfigError: every row of a split is too long, or fewer train rows than
            ``data.prompts_per_step`` are left.
        TaskError: a dataset file is missing or unreadable, or lacks the run's task's columns.
    """
    import pyarrow.parquet as pq

    from hyperpod_rl.model.prompts import filter_rows
    from hyperpod_rl.tasks import get_task, read_rows

    required = ("prompt", "env_class", get_task(config.task.name).hash_column)

    out_dir = Path(run_dir) / FILTERED_DATA_SUBDIR
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    report: dict[str, dict[str, int]] = {}
    limit = config.rollout.max_prompt_tokens
    for split, source in (("train", config.data.train_path), ("heldout", config.data.heldout_path)):
        rows = read_rows(source, required=required)
        if split == "train" and len(rows) < config.data.prompts_per_step:
            raise ConfigError(
                f"data.prompts_per_step={config.data.prompts_per_step} is more than the {len(rows)} rows of data.train_path "
                f"{source}: set data.prompts_per_step to at most {len(rows)}, or generate a larger training set"
            )
        result = filter_rows(rows, processor, limit, what=split)
        print(result.summary(split), flush=True)
        if split == "train" and len(result.kept) < config.data.prompts_per_step:
            raise ConfigError(
                f"{result.summary(split)}: {len(result.kept)} rows are left, fewer than data.prompts_per_step="
                f"{config.data.prompts_per_step}; raise rollout.max_prompt_tokens or use smaller mazes"
            )
        target = out_dir / f"{split}.parquet"
        tmp = target.with_suffix(".parquet.tmp")
        pq.write_table(pq.read_table(Path(source).expanduser()).take(result.kept), tmp, compression="zstd")
        os.replace(tmp, target)
        paths[split] = str(target)
        report[split] = {"limit": limit, "kept": len(result.kept), "dropped": len(result.dropped)}
    write_json_atomic(out_dir / _FILTER_REPORT, report)
    return paths


def _prompt_filter_report(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / FILTERED_DATA_SUBDIR / _FILTER_REPORT
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def prepare_run(config: RunConfig, run_dir: str | Path, *, fresh: bool = False) -> dict[str, object]:
    """Make the run directory ready and return the SkyRL overrides for it in this environment.

    With ``rollout.action_constraint='directions'`` the sampling parameters allow only the task's answer
    tokens (:func:`_constrain_answers`; the base model's tokenizer is read here, on the cluster).
    Without flash-attn installed (:func:`flash_attn_installed`) the overrides add
    ``trainer.flash_attn=false`` (sdpa attention): SkyRL's default would fail to load the policy.
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
    overrides = to_skyrl_overrides(config, rd)
    if config.rollout.action_constraint == "directions":
        _constrain_answers(overrides, config)
    if not flash_attn_installed():
        overrides["trainer.flash_attn"] = False
        print("flash-attn is not installed here: SkyRL's policy uses sdpa attention (trainer.flash_attn=false)", flush=True)
    return overrides


def _constrain_answers(overrides: dict[str, object], config: RunConfig) -> None:
    """``rollout.action_constraint='directions'`` on SkyRL: rollouts (and greedy eval) sample only the task's answer
    tokens (:func:`hyperpod_rl.model.policy.answer_vocabulary`, vLLM's ``allowed_token_ids``), so each turn's text
    tokenizes back to what was sampled, as SkyRL's VLM generator needs. Unlike the reference backend's
    constraint, the response's structure (``<answer>DIR</answer>``) is not forced: the policy learns it, the
    env's reward scores it. Log-probs stay over the whole vocabulary in both vLLM and the trainer."""
    from hyperpod_rl.model.loading import load_processor
    from hyperpod_rl.model.policy import answer_vocabulary

    allowed = answer_vocabulary(load_processor(config.model.path).tokenizer, get_task(config.task.name).answer_words)
    for key in ("generator.sampling_params.additional_kwargs", "generator.eval_sampling_params.additional_kwargs"):
        overrides[key] = {**dict(overrides[key]), "allowed_token_ids": allowed}  # type: ignore[arg-type]
    print(f"rollout.action_constraint='directions': vLLM samples only the answer tokens {allowed}", flush=True)


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


def flash_attn_installed() -> bool:
    """Whether flash-attn 2 is installed: its distribution and its compiled ``flash_attn_2_cuda`` extension.

    SkyRL 0.3.0's ``trainer.flash_attn`` (default true) loads the policy with
    ``attn_implementation="flash_attention_2"`` (``skyrl/backends/skyrl_train/workers/model_wrapper.py``),
    which transformers refuses without flash-attn; the production image pins flash-attn 2.8.3,
    an image without it trains with sdpa attention instead (:func:`main`).
    """
    import importlib.util
    from importlib import metadata

    try:
        metadata.version("flash-attn")
    except metadata.PackageNotFoundError:
        return False
    return importlib.util.find_spec("flash_attn_2_cuda") is not None


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


def _lora_counts(source: Path, config: RunConfig) -> dict[str, int]:
    """Modules wrapped per ``lora.target_modules`` entry, from the adapter's weight names.

    Raises:
        CheckpointError: an entry wrapped no module.
    """
    from safetensors import safe_open

    from hyperpod_rl.model.lora import count_from_weight_names

    with safe_open(str(source / "adapter_model.safetensors"), framework="pt") as fh:
        keys = list(fh.keys())
    counts = count_from_weight_names(keys, config.lora.target_modules)
    missing = [entry for entry, n in counts.items() if n == 0]
    if missing:
        wrapped = sorted({k.split(".lora_")[0].rsplit(".", 1)[-1] for k in keys if ".lora_" in k})
        raise CheckpointError(
            f"the adapter wraps no module for lora.target_modules entries {listed(missing)} (it wraps {listed(wrapped)}): "
            "fix lora.target_modules and train again"
        )
    return counts


def _lineage_fields(config: RunConfig, prov: dict[str, Any]) -> dict[str, Any]:
    """``stage``, ``init_adapter`` and ``lineage`` of the exported adapter, as the reference backend records them."""

    from hyperpod_rl.runs.lineage import adapter_lineage

    init = config.model.init_adapter
    record = None
    if init is not None and (Path(init) / "provenance.json").is_file():
        record = json.loads((Path(init) / "provenance.json").read_text())
    entry = {k: prov.get(k) for k in ("run_id", "steps", "adapter_sha256", "config_hash")}
    return {
        "stage": config.stage,
        "init_adapter": None if init is None else {"path": str(init)},
        "lineage": adapter_lineage(
            base_model_id=prov["base_model_id"],
            base_model_revision=prov["base_model_revision"],
            init_record=record,
            run={"stage": config.stage, **entry},
        ),
    }


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
    counts = _lora_counts(source, config)
    revision = base_revision or base_model_revision(config)

    def write(tmp: Path) -> None:
        from hyperpod_rl.model.lora import canonicalize_adapter_config

        for name in ADAPTER_FILES:
            shutil.copyfile(source / name, tmp / name)
        canonicalize_adapter_config(tmp / "adapter_config.json")
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
        prov["lora_matched_modules"] = counts
        prov["prompt_filter"] = _prompt_filter_report(rd)
        prov["workers"] = config.placement.policy_gpus  # the training processes (FSDP2 ranks)
        prov.update(_lineage_fields(config, prov))
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

    from hyperpod_rl.model.loading import load_processor
    from hyperpod_rl.model.sampling import report_generation_config
    from hyperpod_rl.tasks import register_env
    from hyperpod_rl.train.grpo import TIED_GROUP_METRIC
    from hyperpod_rl.train.skyrl_advantage import last_tied_share, register_tie_safe_estimator

    config = RunConfig.model_validate_json(config_json)
    register_env(config.task.name)  # skyrl_gym's registry is per process: register inside the trainer task
    register_tie_safe_estimator()  # so is SkyRL's estimator registry
    if Path(config.model.path).is_dir():
        report_generation_config(config.model.path)  # SkyRL's vLLM servers ignore it (--generation-config vllm)
    data = filter_datasets(config, run_dir, load_processor(config.model.path))
    skyrl_cfg.data.train_data = [data["train"]]
    skyrl_cfg.data.val_data = [data["heldout"]]
    sink = MetricRecordSink(config.run_id, config.trainer.steps, RunPaths(Path(run_dir)).metrics)

    class _RecordTracking(Tracking):
        def log(self, data: dict[str, Any], step: int, commit: bool = False) -> None:
            super().log(data, step, commit=commit)
            sink.write(data, step)

    init_worker = None
    if config.model.init_adapter is not None:
        from hyperpod_rl.train.init_adapter import check_init_adapter
        from hyperpod_rl.train.skyrl_init_adapter import policy_worker_class

        check_init_adapter(config.model.init_adapter, base_revision=base_model_revision(config), lora=config.lora)
        init_worker = policy_worker_class(str(Path(config.model.init_adapter).expanduser()), run_dir)

    class _Exp(BasePPOExp):
        def get_trainer(self, *args: Any, **kwargs: Any) -> Any:
            trainer = super().get_trainer(*args, **kwargs)
            if init_worker is not None:
                build = trainer.build_models

                def build_models(policy_worker: Any, critic_worker: Any, ref_worker: Any) -> Any:
                    return build(init_worker, critic_worker, ref_worker)  # SkyRL's worker + the starting adapter

                trainer.build_models = build_models
            compute = trainer.compute_advantages_and_returns

            def with_tied_share(batch: Any) -> Any:
                out = compute(batch)
                share = last_tied_share()
                if share is not None:
                    trainer.all_metrics[TIED_GROUP_METRIC] = share
                return out

            trainer.compute_advantages_and_returns = with_tied_share
            return trainer

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

    from hyperpod_rl.train.skyrl_advantage import register_tie_safe_estimator

    register_tie_safe_estimator()  # validate_cfg checks the estimator name against the registry
    skyrl_cfg = SkyRLTrainConfig.from_cli_overrides(overrides)
    validate_cfg(skyrl_cfg)
    initialize_ray(skyrl_cfg)
    task = ray.remote(num_cpus=1)(_trainer_task)
    adapter = Path(ray.get(task.remote(skyrl_cfg, config.model_dump_json(), str(run_dir))))
    print(f"adapter written to {adapter}", flush=True)
    return adapter
