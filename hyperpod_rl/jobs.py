"""Detached training runs as Ray Jobs, through Ray's ``JobSubmissionClient``.

A run is identified by its run id; each submission of it gets an explicit submission id
``hprl-<run_id>-<n>`` and the job metadata ``{"hyperpod_rl_run_id": <run_id>}``, and
``<run dir>/submissions.json`` lists them, so any new shell or kernel can reattach from the run
id alone (:func:`latest_submission`). Jobs outlive the process that submitted them.

Following a job polls ``get_job_logs`` and returns only the new part, instead of the websocket
``tail_job_logs``, which can stop early (ray-project/ray issue 51601); so catch-up after a
reattach is explicit and complete.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import JobError
from hyperpod_rl.metrics.schema import MetricRecord, parse_metric_line

__all__ = ["JobUpdate", "RunHandle", "follow_run", "latest_submission", "list_runs", "stop_run", "submit_run", "write_config"]

RUN_ID_METADATA = "hyperpod_rl_run_id"


@dataclass(frozen=True)
class RunHandle:
    """What identifies a submitted run: the run id, its submission id and its run directory."""

    run_id: str
    submission_id: str
    run_dir: Path


@dataclass
class JobUpdate:
    """What changed since the last poll of a job.

    Attributes:
        status: Ray ``JobStatus`` value (``PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``, ``STOPPED``).
        lines: new log lines (metric lines included).
        records: metric records parsed from the new lines.
        terminal: the job has ended.
        message: Ray's status message (e.g. the error of a failed job).
    """

    status: str
    lines: list[str] = field(default_factory=list)
    records: list[MetricRecord] = field(default_factory=list)
    terminal: bool = False
    message: str = ""


def write_config(config: RunConfig, run_dir: Path) -> Path:
    """Write ``config.json`` atomically into the run directory."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "config.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(config.model_dump_json(indent=1))
    os.replace(tmp, path)
    return path


def _submissions(run_dir: Path) -> list[str]:
    path = run_dir / "submissions.json"
    return json.loads(path.read_text()) if path.exists() else []


def latest_submission(run_dir: Path) -> str:
    """The newest submission id recorded for a run.

    Raises:
        JobError: the run has never been submitted.
    """
    subs = _submissions(run_dir)
    if not subs:
        raise JobError(f"run {run_dir.name!r} has no submissions (no {run_dir / 'submissions.json'}): submit it first")
    return subs[-1]


def _job_env(config: RunConfig, threads: str) -> dict[str, str]:
    env = {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "false"}
    if config.backend == "skyrl":
        # SkyRL's own ray.init(runtime_env=...) conflicts with the job's (REFERENCE.md §1 pitfalls).
        env["RAY_OVERRIDE_JOB_RUNTIME_ENV"] = "1"
    return env


def submit_run(
    client: Any,
    config: RunConfig,
    run_dir: Path,
    *,
    python: str | None = None,
    fresh: bool = False,
    env_vars: dict[str, str] | None = None,
    entrypoint_num_cpus: float = 0,
) -> RunHandle:
    """Submit a run as a detached Ray Job running ``python -m hyperpod_rl.train``.

    Resubmitting a run id resumes it from its latest valid checkpoint; ``fresh=True`` starts it
    over, so a run is never overwritten by accident.

    Example:
        >>> handle = submit_run(cluster.job_client(), config, run_dir)  # doctest: +SKIP
        >>> handle.submission_id  # doctest: +SKIP
        'hprl-quickstart-1'

    Args:
        client: a ``ray.job_submission.JobSubmissionClient`` (authenticated), an access object, or a
            cluster address such as ``sagemaker_ray://maze/hyperpod-ns-team-a`` (``cluster.access.job_client_of``).
        config: the validated run config (validation happens before anything is submitted).
        run_dir: ``<storage root>/runs/<run_id>``, visible to the cluster (shared storage).
        python: the interpreter the job runs under; default ``sys.executable`` (the local
            cluster shares this environment). On a cluster pass the image's python.
        fresh: discard existing checkpoints and start from step 0.
        env_vars: extra environment variables for the job.
        entrypoint_num_cpus: CPUs reserved for the entrypoint (Ray default 0).

    Returns:
        The :class:`RunHandle`.

    Warns:
        UserWarning: with the planner's verdicts, when a SkyRL run is predicted not to fit
            its GPUs (:func:`hyperpod_rl.run_plan.fit_warnings`); when the notebook's Ray or Python
            major.minor differs from the cluster's, with the fix (:mod:`hyperpod_rl.cluster.versions`).

    Raises:
        ConfigError: the config fails validation (checked again here).
        JobError: the run is already running, or the cluster refused the submission.
    """
    import warnings

    from ray.job_submission import JobStatus

    from hyperpod_rl.cluster.versions import checked_job_client
    from hyperpod_rl.run_plan import fit_warnings

    client, versions = checked_job_client(client)
    for check in (c for c in versions if c.status == "warn"):
        warnings.warn(f"{check.detail}; fix: {check.fix}", UserWarning, stacklevel=2)
    config = config.validated()  # a copy edited with model_copy(update=...) is checked again
    for verdict in fit_warnings(config):
        warnings.warn(f"run {config.run_id!r} may not fit its GPUs: {verdict}", UserWarning, stacklevel=2)
    subs = _submissions(run_dir)
    for sub in subs[-1:]:
        try:
            status = client.get_job_status(sub)
        except RuntimeError:
            continue
        if not JobStatus(status).is_terminal():
            raise JobError(f"run {config.run_id!r} is already running as {sub}: stop it first (hyperpod-rl job stop {config.run_id})")
    if not fresh and (run_dir / "adapter" / "adapter_model.safetensors").exists():
        raise JobError(
            f"run {config.run_id!r} already finished (its adapter exists): pass fresh=True / --fresh to train it again, or pick a new run id"
        )
    config_path = write_config(config, run_dir)
    submission_id = f"hprl-{config.run_id}-{len(subs) + 1}"
    interpreter = python or sys.executable
    # exec: Ray runs the entrypoint through a shell; without exec, stopping a job that is still
    # starting can kill only the shell and orphan the trainer.
    entrypoint = f"exec {shlex.quote(interpreter)} -m hyperpod_rl.train --config {shlex.quote(str(config_path))} --backend {config.backend}"
    if fresh:
        entrypoint += " --fresh"
    threads = str(config.trainer.torch_threads or os.cpu_count() or 1)
    try:
        client.submit_job(
            entrypoint=entrypoint,
            submission_id=submission_id,
            runtime_env={"env_vars": {**_job_env(config, threads), **(env_vars or {})}},
            metadata={RUN_ID_METADATA: config.run_id},
            entrypoint_num_cpus=entrypoint_num_cpus,
        )
    except RuntimeError as err:
        raise JobError(f"the cluster refused submission {submission_id}: {err}") from None
    tmp = run_dir / "submissions.json.tmp"
    tmp.write_text(json.dumps(subs + [submission_id]))
    os.replace(tmp, run_dir / "submissions.json")
    return RunHandle(run_id=config.run_id, submission_id=submission_id, run_dir=run_dir)


def follow_run(client: Any, submission_id: str, *, poll_s: float = 1.0, from_start: bool = True) -> Iterator[JobUpdate]:
    """Poll a job until it ends, yielding its new log lines and metric records.

    Stopping the iteration (or Ctrl-C in the caller) detaches without stopping the job.

    Yields:
        :class:`JobUpdate` after every poll that saw new lines or a status change; the last one
        has ``terminal=True``.

    Raises:
        JobError: no job with this submission id.
    """
    import requests
    from ray.job_submission import JobStatus

    from hyperpod_rl.cluster.access import job_client_of

    client = job_client_of(client)
    seen = 0
    last_status = None
    while True:
        try:
            info = client.get_job_info(submission_id)
            logs = client.get_job_logs(submission_id)
        except RuntimeError as err:
            raise JobError(f"no job {submission_id!r} on this cluster ({err})") from None
        except (ConnectionError, OSError, requests.RequestException) as err:
            raise JobError(
                f"lost contact with the cluster while following {submission_id} ({type(err).__name__}); is it still up? (hyperpod-rl local status)"
            ) from None
        lines = logs.splitlines()
        if not from_start and last_status is None:
            seen = len(lines)
        new = lines[seen:]
        seen = len(lines)
        status = JobStatus(info.status)
        terminal = status.is_terminal()
        if new or status != last_status or terminal:
            records = [r for r in (parse_metric_line(x) for x in new) if r is not None]
            yield JobUpdate(status=status.value, lines=new, records=records, terminal=terminal, message=info.message or "")
        last_status = status
        if terminal:
            return
        time.sleep(poll_s)


def stop_run(client: Any, submission_id: str) -> bool:
    """Ask Ray to stop a job; True if it was running (``client`` as in :func:`submit_run`)."""
    from hyperpod_rl.cluster.access import job_client_of

    client = job_client_of(client)
    try:
        return bool(client.stop_job(submission_id))
    except RuntimeError as err:
        raise JobError(f"no job {submission_id!r} on this cluster ({err})") from None


def list_runs(client: Any) -> list[dict[str, Any]]:
    """hyperpod-rl jobs on the cluster, newest first: run id, submission id, status, times (ms)."""
    from hyperpod_rl.cluster.access import job_client_of

    client = job_client_of(client)
    out = []
    for job in client.list_jobs():
        run_id = (job.metadata or {}).get(RUN_ID_METADATA)
        if run_id is None or job.submission_id is None:
            continue
        out.append(
            {
                "run_id": run_id,
                "submission_id": job.submission_id,
                "status": str(job.status.value if hasattr(job.status, "value") else job.status),
                "start_time_ms": job.start_time,
                "end_time_ms": job.end_time,
                "message": job.message or "",
            }
        )
    out.sort(key=lambda r: r["start_time_ms"] or 0, reverse=True)
    return out
