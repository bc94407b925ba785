"""The run's provenance record (``manifest.json``): one file per run with enough to rebuild it.

Written by the trainer when a run starts, updated at every checkpoint and at the end, and by
:func:`hyperpod_rl.runs.record_eval` after each saved evaluation. (The file keeps its first
name, ``manifest.json``, so runs written before stay readable; in code it is the run's
*provenance record*, and "manifest" means only a KubeRay object.) Keys:

===================== ====================================================================
``run_id``            the run id
``status``            ``running`` / ``succeeded`` / ``failed`` written by the trainer; ``stopped`` (or
                      ``failed``) recorded from Ray's job status by ``hyperpod-rl job stop`` and
                      ``runs sync`` / ``runs list`` when the trainer could not write it (killed)
``ended``             how a run ended that the trainer could not record: ``{"status",
                      "submission_id", "source", "at"}``
``config``            the resolved :class:`~hyperpod_rl.config.run.RunConfig` (JSON form)
``config_hash``       :meth:`RunConfig.config_hash` (16 hex chars, run id excluded)
``git``               ``{"commit", "dirty"}`` of the checkout the trainer ran from
``packages``          versions of :data:`~hyperpod_rl.runs.versions.PACKAGES`, plus Python
``image``             container image and digest (env ``HYPERPOD_RL_IMAGE`` /
                      ``HYPERPOD_RL_IMAGE_DIGEST``, set by the cluster spec); ``None`` locally
``datasets``          ``{split: {"path", "sha256"}}``, plus the generator spec when a
                      ``dataset.json`` sits beside the parquet files
``task``              the task's name (``RunConfig.task.name``; a registered :mod:`hyperpod_rl.tasks` plug-in)
``reward_version``    the task's :attr:`~hyperpod_rl.tasks.Task.reward_version`
``seeds``             every seed: trainer (Python, NumPy, torch, sampler) and dataset
``base_model``        ``{"id", "revision", "path"}``
``checkpoints``       ``[{"step", "path", "files": {name: sha256}}]`` (the ones on disk)
``adapter``           ``{"path", "sha256", "steps"}`` once exported
``eval``              ``{label: {"metrics", "ci", "num_mazes", "path"}}``
``resumes``           ``[{"from_step", "at"}]``, one per resume
``workers``           the training processes: ``trainer.workers`` (reference backend; data-parallel
                      when > 1) or ``placement.policy_gpus`` (SkyRL's FSDP2 ranks)
===================== ====================================================================

Updates take an exclusive ``fcntl`` lock on ``manifest.json.lock`` and replace the file
atomically, so the trainer (in the job) and an evaluation (in a notebook) never lose each
other's keys.
"""

from __future__ import annotations

import copy
import fcntl
import json
import os
import platform
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hyperpod_rl.base import load_user_data
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import CheckpointError, ConfigError, HyperpodRLError
from hyperpod_rl.runs.files import file_sha256, storage_errors, write_json_atomic
from hyperpod_rl.runs.versions import git_state, package_versions

__all__ = [
    "PROVENANCE_FILE",
    "config_conflict",
    "config_from_provenance",
    "eval_summaries",
    "image_info",
    "new_provenance",
    "read_provenance",
    "reproduce_config",
    "update_provenance",
]

#: The provenance record's file name in the run directory.
PROVENANCE_FILE = "manifest.json"
SCHEMA_VERSION = 1


def config_conflict(run_dir: Path, config_hash: str) -> str | None:
    """Why ``run_dir`` cannot take a run with ``config_hash`` without ``--fresh``, or ``None``.

    Only a recorded config hash that differs counts: a provenance record without one (an
    attempt that failed before its trainer started writes only how it ended) holds no other
    config, so the same config resubmits and resumes.

    Args:
        run_dir: the run directory.
        config_hash: :meth:`hyperpod_rl.config.run.RunConfig.config_hash` of the run to submit.

    Returns:
        The refusal (what the directory holds and what to do), or ``None`` when it may resume.

    Raises:
        CheckpointError: ``manifest.json`` exists but is not JSON.
    """
    manifest = read_provenance(Path(run_dir))
    recorded = (manifest or {}).get("config_hash")
    if not recorded or recorded == config_hash:
        return None
    return (
        f"run directory {run_dir} holds run {manifest.get('run_id')!r} trained with another config "  # type: ignore[union-attr]
        f"(hash {recorded}, this one {config_hash}): resubmit with --fresh to overwrite it, or pick a new run id"
    )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def image_info() -> dict[str, str | None] | None:
    """The container image and its digest from ``HYPERPOD_RL_IMAGE`` / ``HYPERPOD_RL_IMAGE_DIGEST``.

    The pod spec sets these (Kubernetes' downward API cannot expose the image digest); a local
    run has neither and gets ``None``.
    """
    image, digest = os.environ.get("HYPERPOD_RL_IMAGE"), os.environ.get("HYPERPOD_RL_IMAGE_DIGEST")
    if not image and not digest:
        return None
    if digest is None and image and "@sha256:" in image:
        digest = image.split("@", 1)[1]
    return {"image": image, "digest": digest}


def eval_summaries(run_dir: Path) -> dict[str, dict[str, Any]]:
    """``{name: summary}`` of every ``<run dir>/eval/<name>.json`` (figures and intervals, no per-maze rows)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((run_dir / "eval").glob("*.json")):
        try:
            data = load_user_data(path, "evaluation", syntax="json", error=CheckpointError, max_bytes=None)
        except HyperpodRLError:  # unreadable or damaged: left out of the summary (read_eval names it)
            continue
        if isinstance(data, dict) and "metrics" in data:
            keep = ("label", "split", "observation", "num_mazes", "metrics", "ci")
            out[path.stem] = {**{k: data.get(k) for k in keep}, "path": str(path.relative_to(run_dir))}
    return out


def _dataset_entry(path: str, sha256: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": path, "sha256": sha256}
    meta = Path(path).parent / "dataset.json"
    if meta.is_file():
        try:
            record = load_user_data(meta, "dataset record", syntax="json")
        except HyperpodRLError:  # a damaged record: the dataset's hash still identifies it
            record = None
        if isinstance(record, dict):
            entry["spec"] = record.get("spec")
    return entry


def new_provenance(
    config: RunConfig,
    *,
    base_model_id: str,
    base_model_revision: str,
    dataset_hashes: dict[str, str],
    reward_version: str,
) -> dict[str, Any]:
    """The manifest of a run that starts now (status ``running``, no checkpoints yet).

    Args:
        config: the resolved run config.
        base_model_id: base model id (e.g. ``Qwen/Qwen3-VL-8B-Instruct``).
        base_model_revision: base model revision (hub commit or content hash).
        dataset_hashes: ``{"train": sha256, "heldout": sha256}`` of the parquet files.
        reward_version: the reward spec version.
    """
    paths = {"train": config.data.train_path, "heldout": config.data.heldout_path}
    datasets = {split: _dataset_entry(paths[split], sha) for split, sha in dataset_hashes.items()}
    specs = {split: d["spec"] for split, d in datasets.items() if isinstance(d.get("spec"), dict)}
    # A maze spec holds its seed; another task's spec holds {"task", "options": {... "seed"}}.
    data_seeds = {s: sp.get("seed", (sp.get("options") or {}).get("seed")) for s, sp in specs.items()}
    data_seeds = {s: v for s, v in data_seeds.items() if v is not None}
    versions = package_versions()
    versions["python"] = platform.python_version()
    return {
        "schema": SCHEMA_VERSION,
        "run_id": config.run_id,
        "status": "running",
        "created_at": _now(),
        "updated_at": _now(),
        "backend": config.backend,
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
        "git": git_state(),
        "packages": versions,
        "platform": platform.platform(),
        "image": image_info(),
        "datasets": datasets,
        "task": config.task.name,
        "stage": config.stage,
        "init_adapter": config.model.init_adapter,
        "reward_version": reward_version,
        "seeds": {"trainer": config.trainer.seed, **({"dataset": next(iter(data_seeds.values()))} if data_seeds else {})},
        "base_model": {"id": base_model_id, "revision": base_model_revision, "path": config.model.path},
        "workers": config.trainer.workers if config.backend == "reference" else config.placement.policy_gpus,
        "checkpoints": [],
        "adapter": None,
        "eval": {},
        "resumes": [],
    }


def read_provenance(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's manifest, or ``None`` when it has none.

    Raises:
        CheckpointError: ``manifest.json`` exists but is not JSON.
    """
    path = Path(run_dir) / PROVENANCE_FILE
    if not path.is_file():
        return None
    fix = _manifest_recovery(path)
    data = load_user_data(path, "run manifest", syntax="json", error=CheckpointError, max_bytes=None, repair=fix)
    if not isinstance(data, dict):
        raise CheckpointError(f"run manifest {path} holds a JSON {type(data).__name__}, not an object: {fix}")
    return data


def _manifest_recovery(path: Path) -> str:
    """What to do about a damaged ``manifest.json``, nothing deleted: the run's other files (its
    config, checkpoints, metrics and adapter) do not depend on it, and a resubmission writes a new
    record as it resumes from the checkpoints."""
    run = path.parent
    return (
        f"restore it from a backup, or move it aside (mv {path} {path}.damaged; nothing is deleted): the run's other files "
        f"are read without it, and resubmitting the run (hyperpod-rl job submit {run / 'config.json'}) resumes from its "
        "checkpoints and starts a new record"
    )


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    with open(run_dir / f"{PROVENANCE_FILE}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def update_provenance(run_dir: str | Path, change: Callable[[dict[str, Any] | None], dict[str, Any]]) -> dict[str, Any]:
    """Read, change and atomically rewrite ``manifest.json`` under an exclusive lock.

    Args:
        run_dir: the run directory.
        change: gets the current manifest (``None`` when there is none) and returns the new one.

    Returns:
        The manifest written; the current one when ``change`` changed nothing.

    A change that changes nothing (``updated_at`` aside) writes nothing: the record, its
    ``updated_at`` and the file's modification time, which is the run's updated time in ``runs
    list``, stay as they were (a resumed quickstart records its SFT run's evaluations again, and
    ``job stop`` of a run that had ended records nothing new). ``change`` gets a copy of the
    current manifest, so it may change it in place.

    Raises:
        StorageError: the run directory is full, read-only or forbidden (the manifest is left as
            it was, and no temporary file).
    """
    rdir = Path(run_dir)
    path = rdir / PROVENANCE_FILE
    with storage_errors(path):
        rdir.mkdir(parents=True, exist_ok=True)
        with _locked(rdir):
            current = read_provenance(rdir)
            new = change(copy.deepcopy(current))
            if current is not None and _without_time(new) == _without_time(current):
                return current
            new["updated_at"] = _now()
            write_json_atomic(path, new)
    return new


def _without_time(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "updated_at"}


def config_from_provenance(run_dir: str | Path, *, run_id: str | None = None) -> RunConfig:
    """The run's resolved config (from ``manifest.json``, else ``config.json``), optionally renamed.

    Raises:
        CheckpointError: the run directory has neither file.
        ConfigError: the stored config no longer validates.
    """
    rdir = Path(run_dir)
    manifest = read_provenance(rdir)
    if manifest is not None:
        data = dict(manifest["config"])
    elif (rdir / "config.json").is_file():
        data = load_user_data(rdir / "config.json", "run config", syntax="json", error=CheckpointError, max_bytes=None)
    else:
        raise CheckpointError(f"{rdir} has no manifest.json or config.json: is it a run directory? (hyperpod-rl runs list)")
    if run_id is not None:
        data["run_id"] = run_id
    return RunConfig.build(data)


def reproduce_config(run_dir: str | Path, *, run_id: str) -> tuple[RunConfig, list[str]]:
    """The config that re-runs a recorded run exactly under a new run id, after checking its inputs.

    The config hash is unchanged (it excludes the run id). The datasets must still hash to the
    recorded sha256 and the base model directory to the recorded revision; a different code
    commit, a dirty checkout or other package versions are reported as warnings (the training
    math may differ, the inputs do not).

    Args:
        run_dir: the recorded run's directory (it holds ``manifest.json``).
        run_id: the new run id.

    Returns:
        ``(config, warnings)``.

    Raises:
        CheckpointError: the run has no manifest.
        ConfigError: a dataset file or the base model changed or is missing.
    """
    from hyperpod_rl.model.loading import TINY_PATH, resolve_base_model, revision_of

    manifest = read_provenance(run_dir)
    if manifest is None:
        raise CheckpointError(f"{run_dir} has no {PROVENANCE_FILE}: only runs trained by this version can be reproduced exactly")
    config = config_from_provenance(run_dir, run_id=run_id)
    problems = []
    for split, entry in (manifest.get("datasets") or {}).items():
        path = Path(entry["path"])
        if not path.is_file():
            problems.append(f"dataset {split}: {path} is missing (regenerate it with the recorded spec: {json.dumps(entry.get('spec'))})")
        elif file_sha256(path) != entry["sha256"]:
            problems.append(f"dataset {split}: {path} changed since the run (sha256 differs); regenerate it with the recorded spec")
    base = manifest.get("base_model") or {}
    model_path = Path(str(base.get("path", config.model.path)))
    if str(model_path) == TINY_PATH:  # the embedded tiny model is rebuilt (deterministically) in the run directory
        model_path = resolve_base_model(config.model, run_dir)
    if not model_path.is_dir():
        problems.append(f"base model directory {model_path} is missing; restore revision {base.get('revision')}")
    elif re.fullmatch(r"[0-9a-f]{16}", str(base.get("revision"))) and revision_of(model_path) != base["revision"]:
        problems.append(f"base model at {model_path} is not revision {base['revision']} (its content hash differs)")
    if problems:
        raise ConfigError("cannot reproduce run {!r} exactly:\n  ".format(manifest.get("run_id")) + "\n  ".join(problems))
    warnings_out = []
    if base.get("revision") and not re.fullmatch(r"[0-9a-f]{16}", str(base["revision"])):
        warnings_out.append(
            f"base model revision {base['revision']} is not a content hash: check the checkpoint at {model_path} is that revision"
        )
    now_git, then_git = git_state(), manifest.get("git") or {}
    if then_git.get("commit") and now_git.get("commit") != then_git.get("commit"):
        warnings_out.append(f"code commit differs: run used {then_git['commit']}, this checkout is {now_git.get('commit')}")
    if then_git.get("dirty"):
        warnings_out.append("the run was trained from a dirty checkout: uncommitted changes are not recorded")
    now_pkgs = package_versions()
    drift = [f"{k} {v} -> {now_pkgs.get(k)}" for k, v in (manifest.get("packages") or {}).items() if k in now_pkgs and now_pkgs.get(k) != v]
    if drift:
        warnings_out.append("package versions differ: " + ", ".join(drift))
    return config, warnings_out
