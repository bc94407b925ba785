"""Reading and writing a run directory: config, submissions, evaluations, and the run store scan.

The one owner of the files listed in :mod:`hyperpod_rl.runs.layout` (checkpoint directories
and the provenance record have their own modules beside this one). Every write is atomic
(written to a temporary file, fsynced, renamed), so a reader never sees half a file.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_rl.base import listed, load_user_data
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import CheckpointError, ConfigError, JobError
from hyperpod_rl.metrics.schema import MetricRecord, read_metrics
from hyperpod_rl.runs.files import canonical_json, write_json_atomic
from hyperpod_rl.runs.layout import RunPaths, run_paths, runs_root, sft_run_id
from hyperpod_rl.runs.provenance import eval_summaries, read_provenance, update_provenance
from hyperpod_rl.tasks import Row, get_task, read_rows

__all__ = [
    "RunSummary",
    "add_submission",
    "current_status",
    "dataset_rows",
    "invalid_saved_file",
    "last_record",
    "list_runs",
    "read_config",
    "read_eval",
    "read_json",
    "read_submissions",
    "FINAL_STATUSES",
    "RUN_STATUSES",
    "record_eval",
    "record_final_status",
    "record_promotion",
    "submit_lock",
    "summarize",
    "unsubmitted_quickstart",
    "write_config",
    "write_json",
]


def read_json(path: Path) -> Any:
    """The JSON content of a run file, or ``None`` when it does not exist.

    Raises:
        CheckpointError: the file exists but is not valid JSON (the message names it).
    """
    if not path.exists():
        return None
    return load_user_data(path, "run file", syntax="json", error=CheckpointError, max_bytes=None, repair=_run_file_recovery(path))


def _run_file_recovery(path: Path) -> str:
    """What to do about a damaged file of a run directory (``path``), nothing deleted: set it aside
    and let what it holds come back from where else the run keeps it, or from the command that
    writes it."""
    eval_file = path.parent.name == "eval"
    run = path.parent.parent if eval_file else path.parent
    rid = run.name
    aside = f"move it aside (mv {path} {path}.damaged; nothing is deleted)"
    if eval_file:
        again = (
            f"hyperpod-rl quickstart --resume {rid} evaluates again"
            if (run / "quickstart-options.json").is_file()
            else f"evaluating the run again writes it (in Python: hp.evaluate_run({rid!r}))"
        )
        return f"{aside}; {again}"
    if path.name == "config.json":
        if (run / "manifest.json").is_file():
            return f"{aside}: the run's config is then read from its provenance record {run / 'manifest.json'}, which holds it too"
        return f"restore it from a backup, or {aside} and submit the run's config file again (hyperpod-rl job submit FILE writes it)"
    if path.name == "submissions.json":
        return (
            f"{aside} and write the run's submission ids there again, oldest first, as a JSON list "
            f'(["hprl-{rid}-1", ...]; hyperpod-rl job list shows those the cluster knows)'
        )
    if path.name == "quickstart-options.json":
        return (
            f"fix its syntax, or restore it from a backup: it holds the options quickstart {rid!r} started with, "
            f"which hyperpod-rl quickstart --resume {rid} needs; keep it (or a copy) whatever you do"
        )
    if path.name == "quickstart.json":
        return f"{aside}; hyperpod-rl quickstart --resume {rid} --no-serve writes the quickstart's summary again"
    if path.name == "promotion.json":
        return f"{aside}; hyperpod-rl serve promote {rid} decides again and writes it"
    return f"restore it from a backup, or {aside}"


def _holds(path: Path, data: Any) -> bool:
    """Whether ``path`` holds ``data`` already, as :func:`write_json` writes it (canonical JSON)."""
    try:
        return path.read_text(encoding="utf-8") == canonical_json(data)
    except (OSError, UnicodeDecodeError, TypeError, ValueError):
        return False


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as canonical JSON (sorted keys, so identical inputs give identical bytes), atomically."""
    return write_json_atomic(path, data)


# ------------------------------------------------------------------------------------ config
def write_config(paths: RunPaths, config: RunConfig) -> Path:
    """Write the run's ``config.json`` atomically (canonical JSON: sorted keys).

    Call it only while owning the run's submission (:func:`submit_lock`), so the config of a job
    that was submitted never changes under it.

    Raises:
        ConfigError: ``config.run_id`` is not this run directory's name.
    """
    if config.run_id != paths.run_id:
        raise ConfigError(f"config.run_id={config.run_id!r} does not match the run directory {paths.root}")
    paths.root.mkdir(parents=True, exist_ok=True)
    return write_json(paths.config, config.model_dump(mode="json"))


def read_config(run: str | Path | RunPaths) -> RunConfig:
    """The run's config (``config.json``, else the one in its provenance record).

    Raises:
        CheckpointError: the run directory has neither (not a run, or never submitted).
        ConfigError: the stored config no longer validates (the message lists every field).
    """
    paths = run if isinstance(run, RunPaths) else run_paths(run)
    data = read_json(paths.config)
    if data is None:
        record = read_provenance(paths.root)
        data = record.get("config") if record else None
    if data is None:
        raise CheckpointError(f"{paths.root} has no config.json: is {paths.run_id!r} a run? (hyperpod-rl runs list)")
    try:
        return RunConfig.build(data)
    except ConfigError as err:
        saved = paths.config if paths.config.exists() else paths.provenance
        where = "" if saved == paths.config else " (its 'config' entry)"
        raise invalid_saved_file(
            err,
            saved,
            what=f"the config run {paths.run_id!r} was submitted with",
            fix=f"edit that file{where}: fix each key named above (a value: put back the one the run was submitted with)",
        ) from None


def invalid_saved_file(err: Exception, path: Path, *, what: str, fix: str) -> ConfigError:
    """The error for a file this package saved in a run directory whose values no longer validate
    (edited or damaged since): it names the file and each key (``err``, a
    :meth:`hyperpod_rl.base.Model.build` error, lists them), says ``fix``, and that nothing else
    was changed, so it is never read as a value the user just typed (``--steps: must be > 0``).

    Args:
        err: the validation error; its first line (``invalid <what>:``) is replaced.
        path: the saved file.
        what: what the file holds, e.g. ``the options quickstart 'x' started with``.
        fix: what to do, e.g. ``edit that file: ...``.
    """
    lines = str(err).splitlines()
    problems = "\n".join(lines[1:] if len(lines) > 1 and lines[0].rstrip().endswith(":") else lines)
    return ConfigError(
        f"the file {path}, which holds {what}, is not valid (it was edited or damaged since it was written):\n{problems}\n"
        f"{fix}; nothing else in the run directory was changed"
    )


# ------------------------------------------------------------------------------- submissions
def read_submissions(paths: RunPaths) -> list[str]:
    """The run's Ray submission ids, oldest first (empty when never submitted)."""
    subs = read_json(paths.submissions)
    return [str(s) for s in subs] if isinstance(subs, list) else []


def unsubmitted_quickstart(paths: RunPaths) -> str | None:
    """What to say of a run that has no job because the quickstart that started it was stopped
    (Ctrl-C, SIGTERM) before it submitted one, and the command that finishes it; None for any
    other run.

    Such a run is the quickstart's own (GRPO) run, whose directory holds the options the quickstart
    started with (``quickstart-options.json``) but no summary (``quickstart.json``), or that
    quickstart's SFT warm start (``<run id>-sft``, :func:`sft_run_id`); either records no
    submission. ``hyperpod-rl job status|logs|stop`` and the other commands that take a run id
    say this instead of "submit it first"; for the quickstart's run interrupted in its SFT warm
    start, it also names that run, whose job may still be running.
    """
    try:
        if read_submissions(paths):
            return None
    except CheckpointError:  # a damaged submissions.json: the command's own error names it
        return None
    sft_of = [d for d in _siblings(paths.root.parent) if sft_run_id(d.name) == paths.run_id] if paths.run_id.endswith("-sft") else []
    for candidate in (paths.root, *sft_of):
        started = RunPaths(candidate)
        if not started.quickstart_options.is_file() or started.quickstart.exists():
            continue
        rid = started.run_id
        if candidate == paths.root:
            what = "the quickstart that started it was interrupted before it submitted its GRPO job"
            sft = RunPaths(paths.root.parent / sft_run_id(rid))
            try:
                sft_job = bool(sft.submissions.is_file() and read_submissions(sft))
            except CheckpointError:
                sft_job = False
            if sft_job:  # interrupted in its SFT warm start, whose job may still run: say where it is
                what += (
                    f"; its SFT warm start, run {sft.run_id!r}, has a job (hyperpod-rl job status {sft.run_id}; "
                    f"hyperpod-rl job stop {sft.run_id} stops it)"
                )
        else:
            what = f"it is the SFT warm start of quickstart {rid!r}, which was interrupted before it submitted this job"
        return f"run {paths.run_id!r} has no job yet: {what}; hyperpod-rl quickstart --resume {rid} finishes it"
    return None


def _siblings(runs_dir: Path) -> list[Path]:
    """The run directories beside one (none when the folder cannot be listed)."""
    try:
        return [d for d in runs_dir.iterdir() if d.is_dir()]
    except OSError:
        return []


def add_submission(paths: RunPaths, submission_id: str) -> list[str]:
    """Append a submission id (call under :func:`submit_lock`); returns the new list.

    A run's status describes its newest submission: a final status recorded for an earlier one
    (``stopped``, ``failed``, ``succeeded``) becomes ``submitted`` until the new job's trainer
    writes ``running`` or its end is recorded (:func:`record_final_status`); ``ended`` keeps
    how the earlier submission ended.
    """
    subs = [s for s in read_submissions(paths) if s != submission_id] + [submission_id]
    write_json(paths.submissions, subs)
    if paths.provenance.is_file():

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            out = dict(current or {"run_id": paths.run_id})
            if out.get("status") in FINAL_STATUSES:
                out["status"] = "submitted"
            return out

        update_provenance(paths.root, change)
    return subs


def current_status(record: dict[str, Any], submissions: list[str]) -> str:
    """The status of a run's newest submission from its provenance record and submission ids.

    The record's ``status``, except that an end recorded for an older submission (``ended``
    naming another submission id) is not this one's: then ``submitted`` (its end is not known
    yet; :func:`hyperpod_rl.jobs.reconcile_statuses` records it from Ray). Without a record:
    ``submitted`` when submitted, else ``created``.
    """
    status = record.get("status")
    ended = (record.get("ended") or {}).get("submission_id")
    if status in FINAL_STATUSES and ended and submissions and ended != submissions[-1]:
        return "submitted"
    return str(status or ("submitted" if submissions else "created"))


@contextmanager
def submit_lock(paths: RunPaths, *, timeout_s: float = 60.0) -> Iterator[None]:
    """Hold the run's submit lock (``fcntl``, released when the process dies).

    Two submitters of one run on one host (or on hosts sharing a POSIX-locking file system)
    take turns: the second sees what the first submitted.

    Raises:
        JobError: the lock was not free within ``timeout_s`` seconds.
    """
    paths.root.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    with open(paths.submit_lock, "a+") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise JobError(
                        f"another submit of run {paths.run_id!r} has held {paths.submit_lock} for {timeout_s:.0f} s: wait for it, or check for a hung process"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# -------------------------------------------------------------------------------- evaluations
def record_eval(paths: RunPaths, name: str, data: dict[str, Any]) -> Path:
    """Save an evaluation as ``eval/<name>.json`` and add its summary to the provenance record.

    Args:
        paths: the run.
        name: e.g. ``"base"``, ``"adapter"``, ``"comparison"``.
        data: the evaluation's JSON form (``EvalResult.to_json()``, ``Comparison.to_json()``).

    Returns:
        The file written (left as it was when it holds ``data`` already: recording an
        evaluation again, as a resumed quickstart does, does not change the run's updated time).
    """
    path = paths.eval_file(name)
    if not _holds(path, data):
        write_json(path, data)
    if paths.provenance.is_file():

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            out = dict(current or {"run_id": paths.run_id})
            out["eval"] = {**(out.get("eval") or {}), **eval_summaries(paths.root)}
            return out

        update_provenance(paths.root, change)
    return path


def record_promotion(paths: RunPaths, decision: dict[str, Any]) -> Path:
    """Save a promotion decision as ``promotion.json`` and under ``promotion`` in the provenance record.

    Args:
        paths: the run.
        decision: ``PromotionDecision.to_json()`` (the comparison it rests on is kept only in
            ``promotion.json``).

    Returns:
        The file written.
    """
    path = write_json(paths.promotion, decision)
    if paths.provenance.is_file():
        entry = {k: v for k, v in decision.items() if k != "comparison"}

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            return {**(current or {"run_id": paths.run_id}), "promotion": entry}

        update_provenance(paths.root, change)
    return path


#: Provenance statuses of a run that has ended.
FINAL_STATUSES = ("succeeded", "failed", "stopped")

#: Every status a run of the store can have (:attr:`RunSummary.status`).
RUN_STATUSES = ("created", "submitted", "running", *FINAL_STATUSES)


def record_final_status(
    paths: RunPaths, status: str, *, submission_id: str, source: str, only_over_running: bool = False
) -> dict[str, Any] | None:
    """Record how a run ended in its provenance record (``status``, plus ``ended``).

    The trainer writes ``succeeded`` / ``failed`` itself; a job stopped (or killed) from outside
    never gets to, so :func:`hyperpod_rl.jobs.stop_and_record` and
    :func:`hyperpod_rl.jobs.reconcile_statuses` record it here from Ray's job status.

    Args:
        paths: the run.
        status: one of :data:`FINAL_STATUSES`.
        submission_id: the Ray job whose end this is.
        source: who decided, e.g. ``"hyperpod-rl job stop"`` or ``"Ray job status STOPPED"``.
        only_over_running: change nothing unless the record says ``running`` or ``submitted``
            (or has no status), or holds the end of another submission (:func:`current_status`),
            so a status the trainer wrote for this submission is never overwritten.

    Returns:
        The record written, or ``None`` when nothing changed.

    Raises:
        ConfigError: ``status`` is not a final status.
    """
    if status not in FINAL_STATUSES:
        raise ConfigError(f"{status!r} is not a final run status: use one of {listed(FINAL_STATUSES)}")
    changed = False

    def change(current: dict[str, Any] | None) -> dict[str, Any]:
        nonlocal changed
        out = dict(current or {"run_id": paths.run_id})
        subs = read_submissions(paths)
        if only_over_running and current_status(out, subs or [submission_id]) not in ("created", "submitted", "running"):
            return out
        changed = True
        out["status"] = status
        out["ended"] = {
            "status": status,
            "submission_id": submission_id,
            "source": source,
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        return out

    record = update_provenance(paths.root, change)
    return record if changed else None


def dataset_rows(run: str | Path | RunPaths, split: str = "heldout") -> list[Row]:
    """The dataset rows of a run's ``train`` or ``heldout`` split (the paths in its config).

    Raises:
        ConfigError: ``split`` is neither.
        CheckpointError: the run has no config.
        TaskError: the dataset file is missing or unreadable, or lacks the columns of the run's task.
    """
    if split not in ("train", "heldout"):
        raise ConfigError(f"split {split!r} is not a run's dataset split: use 'train' or 'heldout'")
    config = read_config(run)
    required = ("prompt", "env_class", get_task(config.task.name).hash_column)
    return read_rows(config.data.train_path if split == "train" else config.data.heldout_path, required=required)


def read_eval(paths: RunPaths, name: str) -> dict[str, Any] | None:
    """The saved evaluation ``eval/<name>.json``, or ``None``."""
    data = read_json(paths.eval_file(name))
    return data if isinstance(data, dict) else None


# --------------------------------------------------------------------------------- run store
@dataclass(frozen=True)
class RunSummary:
    """One run of the store, as a list shows it.

    Attributes:
        run_id: the run id.
        run_dir: its directory.
        status: the provenance record's status (``running`` / ``succeeded`` / ``failed`` /
            ``stopped``), or
            ``submitted`` (submitted, trainer not started) or ``created`` (never submitted).
            The Ray job's own status is the cluster's to tell (:func:`hyperpod_rl.jobs.run_status`).
        submission_id: the newest submission id, or ``None``.
        step: the last step in ``metrics.jsonl`` (0 when none).
        total_steps: ``trainer.steps`` of its config (``None`` when unreadable).
        last_reward: ``reward/avg_raw_reward`` of the last step, or ``None``.
        base_model: the base model id or path.
        has_adapter: ``adapter/adapter_model.safetensors`` exists.
        promoted: the latest promotion decision (``None``: never decided).
        updated_s: Unix time (seconds) of the newest change among the run's files.
    """

    run_id: str
    run_dir: Path
    status: str
    submission_id: str | None
    step: int
    total_steps: int | None
    last_reward: float | None
    base_model: str | None
    has_adapter: bool
    promoted: bool | None
    updated_s: float


def last_record(paths: RunPaths) -> MetricRecord | None:
    """The newest metric record of the run, or ``None``."""
    last = None
    for last in read_metrics(paths.metrics):  # noqa: B007 - only the last one is wanted
        pass
    return last


def summarize(paths: RunPaths) -> RunSummary:
    """The :class:`RunSummary` of one run directory (unreadable files count as absent)."""
    try:
        record = read_provenance(paths.root) or {}
    except CheckpointError:
        record = {}
    try:
        config = read_json(paths.config) or record.get("config") or {}
    except CheckpointError:
        config = {}
    subs = read_submissions(paths)
    last = last_record(paths)
    try:
        promotion = read_json(paths.promotion)
    except CheckpointError:
        promotion = None
    mtimes = [p.stat().st_mtime for p in (paths.root, paths.metrics, paths.provenance, paths.submissions) if p.exists()]
    status = current_status(record, subs)
    base = (
        (record.get("base_model") or {}).get("id") or (config.get("model") or {}).get("model_id") or (config.get("model") or {}).get("path")
    )
    return RunSummary(
        run_id=paths.run_id,
        run_dir=paths.root,
        status=status,
        submission_id=subs[-1] if subs else None,
        step=last.step if last else 0,
        total_steps=(config.get("trainer") or {}).get("steps"),
        last_reward=last.values.get("reward/avg_raw_reward") if last else None,
        base_model=base,
        has_adapter=(paths.adapter / "adapter_model.safetensors").is_file(),
        promoted=bool(promotion.get("promoted")) if isinstance(promotion, dict) else None,
        updated_s=max(mtimes, default=0.0),
    )


def list_runs(storage: str | Path | None = None) -> list[RunSummary]:
    """Every run under ``<storage>/runs``, newest change first.

    A directory counts as a run when it holds ``config.json`` or ``manifest.json``.
    """
    root = runs_root(storage)
    if not root.is_dir():
        return []
    runs = [
        summarize(RunPaths(d)) for d in root.iterdir() if d.is_dir() and ((d / "config.json").is_file() or (d / "manifest.json").is_file())
    ]
    return sorted(runs, key=lambda r: r.updated_s, reverse=True)
