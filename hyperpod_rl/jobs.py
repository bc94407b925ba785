"""Detached training runs as Ray Jobs, through Ray's ``JobSubmissionClient``.

A run is identified by its run id; each submission of it gets an explicit submission id
``hprl-<run_id>-<n>`` and the job metadata ``{"hyperpod_rl_run_id": <run_id>}``, and
``<run dir>/submissions.json`` lists them, so any new shell or kernel can reattach from the run
id alone (:func:`latest_job` looks in both places). Jobs outlive the process that submitted them.

Following a job polls ``get_job_logs`` and returns only the new part, instead of the websocket
``tail_job_logs``, which can stop early (ray-project/ray issue 51601); so catch-up after a
reattach is explicit and complete.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_rl.config.resources import run_resources
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import HyperpodRLError, JobError, StorageError, last_line
from hyperpod_rl.metrics.schema import MetricRecord, parse_metric_line, read_metrics
from hyperpod_rl.runs import (
    FINAL_STATUSES,
    RunPaths,
    RunSummary,
    add_submission,
    config_conflict,
    read_submissions,
    record_final_status,
    run_paths,
    submission_id_note,
    submit_lock,
    summarize,
    unsubmitted_quickstart,
    write_config,
)

__all__ = [
    "RUN_ID_METADATA",
    "NOTICE_PATTERN",
    "STAGE_METADATA",
    "JobUpdate",
    "RunProgress",
    "RunHandle",
    "RunJob",
    "RunStatus",
    "check_fits",
    "dataset_problems",
    "entrypoint_gpus",
    "error_line",
    "follow_run",
    "format_duration",
    "job_logs",
    "jobs_off_cluster",
    "latest_job",
    "latest_submission",
    "local_problems",
    "list_runs",
    "overview",
    "reconcile_statuses",
    "readable_log",
    "recorded_steps",
    "reproduce_run",
    "reproduction",
    "resubmission_note",
    "run_jobs",
    "run_status",
    "stop_and_record",
    "stop_run",
    "wait_terminal",
    "strip_ansi",
    "submit_run",
]

RUN_ID_METADATA = "hyperpod_rl_run_id"
#: Job metadata key of the run's stage (``grpo`` or ``sft``), so a follower labels its bar before any step.
STAGE_METADATA = "hyperpod_rl_stage"


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
        stage: the run's stage from the job's metadata (``grpo`` or ``sft``; None for a job
            submitted without it).
    """

    status: str
    lines: list[str] = field(default_factory=list)
    records: list[MetricRecord] = field(default_factory=list)
    terminal: bool = False
    message: str = ""
    stage: str | None = None


#: Trainer log lines a follower shows as they come (the rest stays in ``job logs``): a newer
#: checkpoint skipped as unusable (:func:`hyperpod_rl.runs.files.latest_valid_checkpoint`'s
#: warning) and the checkpoint a job resumed from (the reference trainer's line).
NOTICE_PATTERN = re.compile(r"(checkpoint \S+ is unusable \(.*\); falling back to an earlier one|resumed from \S+ \(step \d+.*\))")


@dataclass
class RunProgress:
    """A followed run's progress, fed with :func:`follow_run`'s updates: the stage, the step, the
    last figures (GRPO: reward and loss; SFT: its loss), the trainer's notices, and an ETA from
    the steps' own finish times.

    The ETA uses :attr:`MetricRecord.time_s` (when each step finished), not the time the
    follower saw it: a follower that reattaches reads a hundred steps at once, and a rate taken
    from its own clock would say the rest takes a second. It is the mean time per step over the
    last :attr:`window` steps seen, times the steps left.

    Attributes:
        total_steps: the run's ``trainer.steps``.
        step: the newest step seen (0 before any).
        values: that step's metric values.
        notices: the notice lines seen so far (:data:`NOTICE_PATTERN`), oldest first.
        window: how many recent steps the ETA averages over.
        stage: ``grpo`` or ``sft``: from the job's metadata (:data:`STAGE_METADATA`), else from
            its records (an SFT step records ``sft/loss``); None before either is seen.
    """

    total_steps: int
    step: int = 0
    values: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    window: int = 10
    stage: str | None = None
    _times: list[tuple[int, float]] = field(default_factory=list)

    def add(self, update: JobUpdate) -> list[str]:
        """Take one update in; return the notices it brought (to print now)."""
        self.stage = update.stage or self.stage
        for rec in update.records:
            if self._times and rec.step <= self._times[-1][0]:
                self._times.clear()  # steps produced again after a resume: their times start over
            self.step, self.values = rec.step, rec.values
            self._times = [*self._times, (rec.step, rec.time_s)][-(self.window + 1) :]
            if self.stage is None:
                self.stage = "sft" if "sft/loss" in rec.values else "grpo"
        new = [m.group(1) for m in (NOTICE_PATTERN.search(line) for line in update.lines) if m]
        self.notices.extend(new)
        return new

    @property
    def label(self) -> str:
        """What a bar or line is labelled with: the stage (``grpo``, ``sft``), ``train`` while unknown."""
        return self.stage or "train"

    @property
    def seconds_per_step(self) -> float | None:
        """Mean seconds per step over the window, or None before two steps are seen."""
        if len(self._times) < 2 or self._times[-1][0] <= self._times[0][0]:
            return None
        (s0, t0), (s1, t1) = self._times[0], self._times[-1]
        return max(t1 - t0, 0.0) / (s1 - s0)

    @property
    def eta_s(self) -> float | None:
        """Seconds until the last step, from :attr:`seconds_per_step` (None when unknown)."""
        per = self.seconds_per_step
        return None if per is None else per * max(self.total_steps - self.step, 0)

    def reward(self) -> str:
        """``reward/avg_raw_reward`` of the newest step, signed (``-`` before any)."""
        value = self.values.get("reward/avg_raw_reward")
        return "-" if value is None else f"{value:+.3f}"

    def loss(self) -> str:
        """The newest step's loss (``-`` before any): ``policy/policy_loss`` signed, or an SFT
        run's ``sft/loss`` (nats per target token)."""
        if self.stage == "sft":
            value = self.values.get("sft/loss")
            return "-" if value is None else f"{value:.4f}"
        value = self.values.get("policy/policy_loss")
        return "-" if value is None else f"{value:+.4f}"

    def figures(self, sep: str = " ") -> str:
        """The newest step's figures as a bar shows them: ``reward +0.120 loss -0.0153`` (GRPO),
        ``loss 0.8123`` (SFT: it has no reward); ``sep`` goes between two figures."""
        return f"loss {self.loss()}" if self.stage == "sft" else f"reward {self.reward()}{sep}loss {self.loss()}"

    def line(self) -> str:
        """One plain progress line, e.g. ``grpo 40/200 reward +0.120 loss -0.0153 · 2.1 s/step · ETA 5m36s``."""
        per, eta = self.seconds_per_step, self.eta_s
        rate = f" · {per:.1f} s/step" if per is not None else ""
        left = f" · ETA {format_duration(eta)}" if eta is not None else ""
        return f"{self.label} {self.step}/{self.total_steps} {self.figures()}{rate}{left}"


def format_duration(seconds: float) -> str:
    """A duration for a progress line: ``"42s"``, ``"3m05s"``, ``"1h02m"``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def default_job_threads() -> int:
    """The OpenMP / torch intra-op threads of a job whose ``trainer.torch_threads`` is unset: the
    submitting environment's ``OMP_NUM_THREADS`` when it is a positive integer (how a shared machine
    or a parallel test run limits every process's threads), else this machine's CPU count.

    Ray's workers, and so the job supervisor whose child the entrypoint is, force
    ``OMP_NUM_THREADS`` to their CPU reservation (1; ``ray._private.utils.set_omp_num_threads_if_unset``),
    so a job that is not given the count trains on one thread.
    """
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else os.cpu_count() or 1


def _job_env(config: RunConfig, threads: str) -> dict[str, str]:
    env = {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "false"}
    if config.backend == "skyrl":
        # SkyRL's own ray.init(runtime_env=...) conflicts with the job's (docs/references.md, SkyRL pitfalls).
        env["RAY_OVERRIDE_JOB_RUNTIME_ENV"] = "1"
    return env


@dataclass(frozen=True)
class RunJob:
    """One Ray Job of a run.

    Attributes:
        submission_id: ``hprl-<run_id>-<n>``.
        status: Ray ``JobStatus`` value, or ``LOST`` when the cluster no longer knows the job
            (it was restarted) although the run directory records it.
        message: Ray's status message.
    """

    submission_id: str
    status: str
    message: str = ""

    @property
    def alive(self) -> bool:
        """The job is pending or running."""
        return self.status in ("PENDING", "RUNNING")


def _number(submission_id: str, run_id: str) -> int | None:
    prefix = f"hprl-{run_id}-"
    tail = submission_id.removeprefix(prefix)
    return int(tail) if submission_id.startswith(prefix) and re.fullmatch(r"[0-9]+", tail) else None


def run_jobs(client: Any, run_id: str, run_dir: Path | None = None) -> list[RunJob]:
    """Every Ray Job of a run, oldest first: those the run directory records and those the cluster
    knows by the job metadata ``hyperpod_rl_run_id`` (so a wiped run directory, another storage
    root or a kernel restart between submitting and recording never hides a live job).

    Raises:
        JobError: the cluster cannot be reached.
    """
    recorded = read_submissions(RunPaths(run_dir)) if run_dir is not None else []
    found: dict[str, RunJob] = {}
    try:
        details = client.list_jobs()
    except (RuntimeError, OSError) as err:
        raise JobError(
            f"cannot list the cluster's jobs ({type(err).__name__}: {last_line(err)}); is it up? (hyperpod-rl local status)"
        ) from None
    for job in details:
        sid = job.submission_id
        if sid and ((job.metadata or {}).get(RUN_ID_METADATA) == run_id or sid in recorded):
            status = job.status.value if hasattr(job.status, "value") else str(job.status)
            found[sid] = RunJob(sid, status, job.message or "")
    for sid in recorded:
        found.setdefault(sid, RunJob(sid, "LOST", "the cluster does not know this job (restarted or another cluster)"))
    return sorted(found.values(), key=lambda j: (_number(j.submission_id, run_id) or 0, j.submission_id))


def latest_job(client: Any, run_id: str, run_dir: Path | None = None) -> RunJob:
    """The newest job of a run (:func:`run_jobs`).

    Raises:
        JobError: the run has no job, recorded or on the cluster.
    """
    root = run_dir if run_dir is not None else _default_dir(run_id)
    jobs = run_jobs(client, run_id, root)
    if not jobs:
        raise _no_job(run_id, paths=RunPaths(Path(root)))
    return jobs[-1]


def _no_job(run_id: str, why: str = "", *, paths: RunPaths | None = None) -> JobError:
    """The error for a run with no job: a submission id given for the run id says which run id to
    pass; a run whose quickstart was interrupted before it submitted the job says how to finish
    it (:func:`hyperpod_rl.runs.unsubmitted_quickstart`), since submitting it by hand is not the fix."""
    note = submission_id_note(run_id)
    if note:
        return JobError(f"run {run_id!r} has no job{why}; {note}")
    interrupted = unsubmitted_quickstart(paths) if paths is not None else None
    if interrupted:
        return JobError(interrupted)
    return JobError(f"run {run_id!r} has no job on this cluster and none recorded in its run directory{why}: submit it first")


def _default_dir(run_id: str) -> Path:
    return run_paths(run_id).root


def latest_submission(run_dir: Path) -> str:
    """The newest submission id recorded in a run directory (no cluster needed).

    Raises:
        JobError: the run directory records no submission.
    """
    subs = read_submissions(RunPaths(Path(run_dir)))
    if not subs:
        raise JobError(f"run {Path(run_dir).name!r} has no recorded submissions (no {Path(run_dir) / 'submissions.json'}): submit it first")
    return subs[-1]


def entrypoint_gpus(config: RunConfig) -> int:
    """GPUs a run's Ray job entrypoint reserves (``entrypoint_num_gpus``).

    The reference backend trains inside the entrypoint process, so a run with
    ``trainer.device='cuda'`` reserves one GPU: Ray then schedules it on a node with a free GPU
    and sets ``CUDA_VISIBLE_DEVICES`` for it. ``'auto'`` and ``'cpu'`` reserve none (``'auto'``
    still uses a GPU the process sees). A data-parallel reference run (``trainer.workers > 1``)
    reserves none: its entrypoint starts a Ray Train ``TorchTrainer`` whose workers take one GPU
    each. SkyRL's entrypoint only drives Ray actors that reserve their own GPUs, so it reserves none.
    (:func:`hyperpod_rl.config.resources.run_resources` owns these rules.)
    """
    return run_resources(config).entrypoint_gpus


def check_fits(client: Any, config: RunConfig, *, entrypoint_num_cpus: float = 0, entrypoint_num_gpus: float | None = None) -> None:
    """Refuse a run that its cluster can never start (it would stay PENDING, or wait for its
    workers, forever): its GPUs, or its ``trainer.workers`` on one node, against the cluster's
    total resources (:func:`hyperpod_rl.config.resources.fit_problems`). Skipped when the
    dashboard does not answer Ray's state API.

    Args:
        client: a connected ``JobSubmissionClient``.
        config: the run.
        entrypoint_num_cpus: CPUs the job's entrypoint reserves, as given to :func:`submit_run`.
        entrypoint_num_gpus: GPUs it reserves; None: the run's own (:func:`entrypoint_gpus`).

    Raises:
        ConfigError: the run needs more than the cluster has; the message says what the cluster
            has and what to change.
    """
    from hyperpod_rl.cluster.resources import node_resources
    from hyperpod_rl.config.resources import fit_problems
    from hyperpod_rl.errors import ConfigError

    nodes = node_resources(client)
    if nodes is None:
        return
    problems = fit_problems(config, nodes, entrypoint_num_cpus=entrypoint_num_cpus, entrypoint_num_gpus=entrypoint_num_gpus)
    if problems:
        raise ConfigError("; ".join(problems))


def _is_local(client: Any) -> bool:
    """The client talks to the local cluster recorded on this machine (its dashboard URL), so
    paths the job reads are this machine's. A port-forwarded remote cluster is on 127.0.0.1 too,
    hence the comparison with the recorded local cluster rather than with loopback."""
    from hyperpod_rl.cluster.local import current_local_cluster

    local = current_local_cluster()
    get_address = getattr(client, "get_address", None)
    if local is None or get_address is None:
        return False
    return str(get_address()).rstrip("/") == local.dashboard_url.rstrip("/")


def local_problems(config: RunConfig, python: str | None = None) -> list[str]:
    """What keeps a run from starting on this machine, checked before submitting to the local cluster.

    Args:
        config: the run.
        python: the interpreter the job would run under (``None``: this one, always present).

    Returns:
        One sentence per problem, each saying what to fix; empty when none.
    """
    import shutil

    problems = []
    for field_name in ("train_path", "heldout_path"):
        path = Path(getattr(config.data, field_name))
        if not path.is_file():
            problems.append(
                f"data.{field_name} {path} does not exist: point it at the dataset file, or generate one (hyperpod-rl tasks sample, or the quickstart)"
            )
    if python is not None and shutil.which(python) is None:
        problems.append(f"--python {python} is not an executable on this machine: pass an existing interpreter, or leave --python out")
    from hyperpod_rl.model.loading import TINY_PATH

    model = config.model.path
    # a folder on this machine (or a path-like name that should be one) is checked as the job would read it; a hub id is the job's to fetch
    if model != TINY_PATH and (Path(model).expanduser().exists() or model.startswith(("/", ".", "~"))):
        from hyperpod_rl.errors import ConfigError
        from hyperpod_rl.model.revision import check_model_dir

        try:
            check_model_dir(model, "model.path")
        except ConfigError as err:
            problems.append(str(err))
    return problems


def dataset_problems(config: RunConfig) -> list[str]:
    """What in the run's training set keeps it from training, checked before any submit.

    Only a ``data.train_path`` this machine can read is checked (a remote cluster's own path
    is checked by the job). Counted from the parquet footer (:func:`hyperpod_rl.tasks.count_rows`).

    Returns:
        One sentence per problem, each saying what to fix; empty when none: a training set with
        fewer rows than ``data.prompts_per_step`` (one step draws that many distinct rows).
    """
    from hyperpod_rl.errors import TaskError
    from hyperpod_rl.tasks import count_rows

    path = Path(config.data.train_path)
    per_step = config.data.prompts_per_step
    try:
        rows = count_rows(path) if path.is_file() else None
    except (TaskError, OSError):
        return []  # the local checks and the job report an unreadable file with its own fix
    if rows is not None and rows < per_step:
        return [
            f"data.prompts_per_step={per_step} is more than the {rows} rows of data.train_path {path} (each step draws "
            f"{per_step} distinct rows): set data.prompts_per_step to at most {rows}, or generate a larger training set"
        ]
    return []


class _IdTaken(Exception):
    """The cluster already holds the submission id we chose (raced by a submitter we cannot lock out)."""


def submit_run(
    client: Any,
    config: RunConfig,
    run_dir: Path | None = None,
    *,
    python: str | None = None,
    fresh: bool = False,
    env_vars: dict[str, str] | None = None,
    entrypoint_num_cpus: float = 0,
    entrypoint_num_gpus: float | None = None,
) -> RunHandle:
    """Submit a run as a detached Ray Job running ``python -m hyperpod_rl.train``.

    Resubmitting a run id resumes it from its latest valid checkpoint; ``fresh=True`` starts it
    over, so a run is never overwritten by accident. Submission ids never dead-end: a live job
    of the run (found in the run directory or through the cluster's job metadata) is reported
    as already running; otherwise the next free ``hprl-<run_id>-<n>`` is used. The submit
    holds the run's submit lock and writes ``config.json`` only once it owns the submission,
    and the job checks that the config it reads is the one submitted (``--config-hash``), so
    the config a job trains with never changes after it was submitted.

    Example:
        >>> handle = submit_run(cluster.job_client(), config)  # doctest: +SKIP
        >>> handle.submission_id  # doctest: +SKIP
        'hprl-quickstart-1'

    Args:
        client: a ``ray.job_submission.JobSubmissionClient`` (authenticated), an access object, or a
            cluster address such as ``sagemaker_ray://maze/hyperpod-ns-team-a`` (``cluster.access.job_client_of``).
        config: the validated run config (validation happens before anything is submitted).
        run_dir: the run directory as this process sees it; default
            ``<storage root>/runs/<run_id>`` (:func:`hyperpod_rl.runs.run_paths`). It must be
            the directory the cluster sees (shared storage).
        python: the interpreter the job runs under; default ``sys.executable`` (the local
            cluster shares this environment). On a cluster pass the image's python.
        fresh: discard existing checkpoints and start from step 0.
        env_vars: extra environment variables for the job.
        entrypoint_num_cpus: CPUs reserved for the entrypoint (Ray default 0).
        entrypoint_num_gpus: GPUs reserved for the entrypoint; default
            :func:`entrypoint_gpus` of the config (1 for a one-process reference-backend run with
            ``trainer.device='cuda'``, else 0: SkyRL and a ``trainer.workers > 1`` run place their
            own GPU workers).

    Returns:
        The :class:`RunHandle`.

    Warns:
        UserWarning: with the planner's verdicts, when a SkyRL run is predicted not to fit
            its GPUs (:func:`hyperpod_rl.run_plan.fit_warnings`); when the notebook's Ray or Python
            major.minor differs from the cluster's, with the fix (:mod:`hyperpod_rl.cluster.versions`).

    Raises:
        ConfigError: the config fails validation (checked again here), or the cluster can never
            hold the run: fewer GPUs than it needs, or too few CPUs/GPUs on one node for its
            ``trainer.workers`` (:func:`check_fits`; the message says what the cluster has).
        ConfigError: on the local cluster (this machine), ``data.train_path`` /
            ``data.heldout_path`` or ``python`` do not exist, or ``model.path`` is a folder here that
            is not a Qwen3-VL checkpoint (:func:`local_problems`; a remote
            cluster's paths are its own and are not checked here).
        ConfigError: ``data.train_path`` (when this machine can read it) has fewer rows than
            ``data.prompts_per_step`` (:func:`dataset_problems`).
        JobError: a job of the run is alive (the message names it), the run already finished
            (without ``fresh``), its run directory holds the run trained with another config
            (without ``fresh``; :func:`hyperpod_rl.runs.config_conflict`), another submit held
            the run for 60 s, or the cluster refused.
    """
    import warnings

    from hyperpod_rl.cluster.versions import checked_job_client
    from hyperpod_rl.run_plan import fit_warnings

    client, versions = checked_job_client(client)
    for check in (c for c in versions if c.status == "warn"):
        warnings.warn(f"{check.detail}; fix: {check.fix}", UserWarning, stacklevel=2)
    config = config.validated()  # a copy edited with model_copy(update=...) is checked again
    for verdict in fit_warnings(config):
        warnings.warn(f"run {config.run_id!r} may not fit its GPUs: {verdict}", UserWarning, stacklevel=2)
    if _is_local(client):
        problems = local_problems(config, python)
        if problems:
            from hyperpod_rl.errors import ConfigError

            raise ConfigError(f"run {config.run_id!r} cannot start on the local cluster: " + "; ".join(problems))
    problems = dataset_problems(config)
    if problems:
        from hyperpod_rl.errors import ConfigError

        raise ConfigError(f"run {config.run_id!r} cannot train: " + "; ".join(problems))
    check_fits(client, config, entrypoint_num_cpus=entrypoint_num_cpus, entrypoint_num_gpus=entrypoint_num_gpus)
    paths = RunPaths(Path(run_dir)) if run_dir is not None else run_paths(config.run_id)
    conflict = None if fresh else config_conflict(paths.root, config.config_hash())
    if conflict is not None:
        raise JobError(conflict)
    with submit_lock(paths):
        jobs = run_jobs(client, config.run_id, paths.root)
        live = [j for j in jobs if j.alive]
        if live:
            raise JobError(
                f"run {config.run_id!r} is already running as {live[-1].submission_id} ({live[-1].status}): "
                f"follow it (hyperpod-rl job logs --follow {config.run_id}) or stop it first (hyperpod-rl job stop {config.run_id})"
            )
        if not fresh and (paths.adapter / "adapter_model.safetensors").exists():
            raise JobError(
                f"run {config.run_id!r} already finished (its adapter exists): pass fresh=True / --fresh to train it again, or pick a new run id"
            )
        taken = {j.submission_id for j in jobs}
        first = 1 + max((_number(s, config.run_id) or 0 for s in taken), default=0)
        gpus = entrypoint_gpus(config) if entrypoint_num_gpus is None else entrypoint_num_gpus
        submission_id = _submit_with_free_id(
            client,
            config,
            paths,
            first=first,
            python=python,
            fresh=fresh,
            env_vars=env_vars,
            entrypoint_num_cpus=entrypoint_num_cpus,
            entrypoint_num_gpus=gpus,
        )
        add_submission(paths, submission_id)
    return RunHandle(run_id=config.run_id, submission_id=submission_id, run_dir=paths.root)


def _submit_with_free_id(client: Any, config: RunConfig, paths: RunPaths, *, first: int, **kwargs: Any) -> str:
    """Submit under ``hprl-<run>-<first>``, moving to the next number while the cluster says the id exists."""
    from tenacity import retry, retry_if_exception_type, stop_after_attempt

    numbers = iter(range(first, first + 20))

    @retry(retry=retry_if_exception_type(_IdTaken), stop=stop_after_attempt(20), reraise=True)
    def attempt() -> str:
        submission_id = f"hprl-{config.run_id}-{next(numbers)}"
        _submit_once(client, config, paths, submission_id, **kwargs)
        return submission_id

    try:
        return attempt()
    except _IdTaken as err:
        raise JobError(f"20 submission ids of run {config.run_id!r} from {first} on are taken on the cluster: {last_line(err)}") from None


def _submit_once(
    client: Any,
    config: RunConfig,
    paths: RunPaths,
    submission_id: str,
    *,
    python: str | None,
    fresh: bool,
    env_vars: dict[str, str] | None,
    entrypoint_num_cpus: float,
    entrypoint_num_gpus: float,
) -> None:
    config_path = write_config(paths, config)
    interpreter = python or sys.executable
    # exec: Ray runs the entrypoint through a shell; without exec, stopping a job that is still
    # starting can kill only the shell and orphan the trainer.
    entrypoint = (
        f"exec {shlex.quote(interpreter)} -m hyperpod_rl.train --config {shlex.quote(str(config_path))} "
        f"--backend {config.backend} --config-hash {config.config_hash()}"
    )
    if fresh:
        entrypoint += " --fresh"
    threads = str(config.trainer.torch_threads or default_job_threads())
    try:
        client.submit_job(
            entrypoint=entrypoint,
            submission_id=submission_id,
            runtime_env={"env_vars": {**_job_env(config, threads), **(env_vars or {})}},
            metadata={RUN_ID_METADATA: config.run_id, STAGE_METADATA: config.stage},
            entrypoint_num_cpus=entrypoint_num_cpus,
            **({"entrypoint_num_gpus": entrypoint_num_gpus} if entrypoint_num_gpus else {}),
        )
    except RuntimeError as err:
        if "already exists" in str(err):
            raise _IdTaken(submission_id) from None
        raise JobError(f"the cluster refused submission {submission_id}: {last_line(err)}") from None


def follow_run(client: Any, submission_id: str, *, poll_s: float = 1.0, from_start: bool = True) -> Iterator[JobUpdate]:
    """Poll a job until it ends, yielding its new log lines (secrets masked, as :func:`job_logs`)
    and metric records.

    Stopping the iteration (or Ctrl-C in the caller) detaches without stopping the job.

    Yields:
        :class:`JobUpdate` after every poll that saw new lines or a status change; the last one
        has ``terminal=True``.

    Raises:
        JobError: no job with this submission id.
    """
    import requests
    from ray.job_submission import JobStatus

    from hyperpod_rl.cluster.access import job_client_of, redact

    client = job_client_of(client)
    seen = 0
    last_status = None
    while True:
        try:
            info = client.get_job_info(submission_id)
            logs = client.get_job_logs(submission_id)
        except RuntimeError as err:
            raise JobError(f"no job {submission_id!r} on this cluster ({last_line(err)})") from None
        except (ConnectionError, OSError, requests.RequestException) as err:
            raise JobError(
                f"lost contact with the cluster while following {submission_id} ({type(err).__name__}); is it still up? (hyperpod-rl local status)"
            ) from None
        lines = redact(logs).splitlines()
        if not from_start and last_status is None:
            seen = len(lines)
        new = lines[seen:]
        seen = len(lines)
        status = JobStatus(info.status)
        terminal = status.is_terminal()
        if new or status != last_status or terminal:
            records = [r for r in (parse_metric_line(x) for x in new) if r is not None]
            stage = (info.metadata or {}).get(STAGE_METADATA)
            yield JobUpdate(status=status.value, lines=new, records=records, terminal=terminal, message=info.message or "", stage=stage)
        last_status = status
        if terminal:
            return
        time.sleep(poll_s)


def job_logs(client: Any, submission_id: str) -> str:
    """The whole log of a job so far, secrets masked (:func:`hyperpod_rl.cluster.access.redact`:
    AWS credentials, presigned-URL signatures, the cluster tokens in their encodings).

    Raises:
        JobError: the cluster does not know the job (restarted, or another cluster), or cannot be reached.
    """
    import requests

    from hyperpod_rl.cluster.access import redact

    try:
        return redact(str(client.get_job_logs(submission_id)))
    except RuntimeError as err:
        raise JobError(
            f"job {submission_id} is not on this cluster ({last_line(err)}): it was restarted or the job ran elsewhere; resubmit the run to resume it"
        ) from None
    except (ConnectionError, OSError, requests.RequestException) as err:
        raise JobError(
            f"cannot reach the cluster to read {submission_id}'s log ({type(err).__name__}); is it up? (hyperpod-rl local status)"
        ) from None


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape codes (colours, cursor moves)."""
    return _ANSI.sub("", text)


def error_line(log: str) -> str | None:
    """The last ``error: ...`` line of a job log, ANSI codes stripped, or ``None``.

    The trainer prints a project error (bad input, a run it cannot resume, ...) as that one
    line before it exits, so it says what went wrong better than Ray's log tail.
    """
    found = None
    for raw in log.splitlines():
        line = strip_ansi(raw).strip()
        if line.startswith("error: "):
            found = line
    return found


#: Ray's terminal job statuses -> the run status recorded for them.
_ENDED = {"STOPPED": "stopped", "FAILED": "failed", "SUCCEEDED": "succeeded"}

#: Seconds a PENDING job gets to take the stop request (it starts, or ends) before its
#: never-started supervisor is cancelled (:func:`_cancel_pending`).
PENDING_GRACE_S = 5.0

#: The driver of the short Ray Job that cancels a job whose supervisor never started: Ray's
#: ``stop_job`` only queues a stop for it, so the job would stay PENDING until it gets its
#: resources or Ray's start timeout (``RAY_JOB_START_TIMEOUT_SECONDS``, 15 min) fails it.
#: It kills the supervisor only while it is still waiting to be created (a started job is
#: stopped by the queued request instead, so no trainer is orphaned).
_CANCEL_SCRIPT = """
import sys
import ray
from ray.dashboard.modules.job.common import JOB_ACTOR_NAME_TEMPLATE, SUPERVISOR_ACTOR_RAY_NAMESPACE
from ray.util.state import list_actors
ray.init(logging_level="ERROR")
name = JOB_ACTOR_NAME_TEMPLATE.format(job_id=sys.argv[1])
states = [a.state for a in list_actors(filters=[("name", "=", name)])]
if states and all(s in ("PENDING_CREATION", "DEPENDENCIES_UNREADY") for s in states):
    ray.kill(ray.get_actor(name, namespace=SUPERVISOR_ACTOR_RAY_NAMESPACE), no_restart=True)
    print("cancelled", sys.argv[1])
else:
    print("not pending", sys.argv[1], states)
"""


def _ray_status(client: Any, submission_id: str) -> str:
    try:
        raw = client.get_job_status(submission_id)
    except RuntimeError as err:
        raise JobError(f"no job {submission_id!r} on this cluster ({last_line(err)})") from None
    return str(raw.value if hasattr(raw, "value") else raw)


def wait_terminal(client: Any, submission_id: str, timeout_s: float) -> str | None:
    """Poll a job's Ray status every 0.5 s until it is terminal; return it (``"SUCCEEDED"``, ``"FAILED"``, ``"STOPPED"``), or None after ``timeout_s`` seconds.

    Raises:
        JobError: the cluster does not know the submission id.
    """
    from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_fixed

    @retry(retry=retry_if_result(lambda s: s not in _ENDED), stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5))
    def status() -> str:
        return _ray_status(client, submission_id)

    try:
        return status()
    except RetryError:
        return None


def _cancel_pending(client: Any, submission_id: str) -> bool:
    """Cancel a job whose supervisor actor is still waiting for its entrypoint's resources,
    through a short Ray Job that needs none (:data:`_CANCEL_SCRIPT`); True when it cancelled it.

    The helper runs under the cancelled job's own interpreter (from its entrypoint) and is deleted afterwards.
    """
    from hyperpod_rl.cluster.resources import remove_jobs, supervisor_state

    if supervisor_state(client, submission_id) not in (None, "PENDING_CREATION", "DEPENDENCIES_UNREADY"):
        return False
    try:
        words = shlex.split(client.get_job_info(submission_id).entrypoint or "")
    except (RuntimeError, ValueError):
        words = []
    words = words[1:] if words[:1] == ["exec"] else words
    python = words[0] if words and "python" in Path(words[0]).name else sys.executable
    try:
        helper = client.submit_job(
            entrypoint=f"exec {shlex.quote(python)} -c {shlex.quote(_CANCEL_SCRIPT)} {shlex.quote(submission_id)}",
            submission_id=f"hprl-cancel-{submission_id}-{int(time.time() * 1000)}",
            entrypoint_num_cpus=0,
        )
    except RuntimeError:  # the cluster refused the helper: the stop request stays queued
        return False
    ended = wait_terminal(client, helper, 120.0)
    out = str(client.get_job_logs(helper)) if ended else ""
    remove_jobs(client, helper)
    return f"cancelled {submission_id}" in out


def _stop_job(client: Any, submission_id: str, paths: RunPaths | None, timeout_s: float, *, source: str) -> tuple[str, str | None]:
    """The one stop path: ask Ray to stop a job, cancel it while it is still PENDING, wait until it
    has ended, and record the run's end in ``paths`` (when given).

    Returns:
        ``(status before the stop, run status recorded or None)``.
    """
    before = _ray_status(client, submission_id)
    cancelled = False
    if before not in _ENDED:
        try:
            client.stop_job(submission_id)
        except RuntimeError as err:
            raise JobError(f"no job {submission_id!r} on this cluster ({last_line(err)})") from None
        ray_status = wait_terminal(client, submission_id, min(PENDING_GRACE_S, timeout_s))
        if ray_status is None and _ray_status(client, submission_id) == "PENDING":
            cancelled = _cancel_pending(client, submission_id)
        ray_status = ray_status or wait_terminal(client, submission_id, timeout_s)
    else:
        ray_status = before
    if ray_status is None:
        raise JobError(
            f"job {submission_id} did not end within {timeout_s:.0f} s of the stop request: check hyperpod-rl job status, then stop it again"
        )
    status = "stopped" if cancelled else _ENDED[ray_status]
    if paths is None:
        return before, None
    wrote = record_final_status(
        paths,
        status,
        submission_id=submission_id,
        source=f"{source} (Ray job status {ray_status}{', cancelled while PENDING' if cancelled else ''})",
        only_over_running=status != "stopped",
    )
    if wrote is None:  # the run had recorded its end already (the trainer's own word): that is its status
        status = summarize(paths).status
    return before, status


def _run_dir_of(client: Any, submission_id: str) -> RunPaths | None:
    """The run directory under the storage root whose newest recorded submission is ``submission_id``, if any."""
    try:
        run_id = (client.get_job_info(submission_id).metadata or {}).get(RUN_ID_METADATA)
    except RuntimeError:
        run_id = None
    if not run_id:
        return None
    try:
        paths = run_paths(run_id)
    except HyperpodRLError:
        return None
    return paths if read_submissions(paths)[-1:] == [submission_id] else None


def stop_run(client: Any, submission_id: str, *, run_dir: Path | None = None, timeout_s: float = 120.0) -> bool:
    """Stop a job, wait until Ray reports it ended, and record ``stopped`` in its run's provenance.

    Ray's processes of the job get SIGTERM, then SIGKILL. A job still PENDING (waiting for its
    entrypoint's resources) is cancelled: Ray alone would keep it PENDING until it gets them.
    The trainer is killed before it can write its status, so this records ``stopped`` in the run
    directory (``run_dir``, else the one under the storage root that lists the submission) through
    :func:`hyperpod_rl.runs.record_final_status`, when the job is the run's newest submission; :func:`stop_and_record` (``hyperpod-rl job stop``)
    takes the same path.

    Args:
        client: the cluster's job client, an access object or a cluster address, as in :func:`submit_run`.
        submission_id: the job, ``hprl-<run_id>-<n>`` (:func:`latest_submission` finds a run's latest).
        run_dir: the run directory to record the end in; default: found from the job's run id.
        timeout_s: how long to wait for the job to end, in seconds.

    Returns:
        True if the job was pending or running and has been stopped, False if it had already ended.

    Raises:
        JobError: the cluster does not know the submission id, or the job did not end within ``timeout_s``.
        ConfigError: a malformed cluster address. ClusterError: the cluster cannot be reached.
    """
    from hyperpod_rl.cluster.access import job_client_of

    client = job_client_of(client)
    paths = RunPaths(Path(run_dir)) if run_dir is not None else _run_dir_of(client, submission_id)
    if paths is not None and read_submissions(paths)[-1:] != [submission_id]:
        paths = None  # an older submission of the run: its end says nothing about the run now
    before, _ = _stop_job(client, submission_id, paths, timeout_s, source="hyperpod_rl.stop_run")
    return before not in _ENDED


def stop_and_record(client: Any, run_id: str, run_dir: Path | None = None, *, timeout_s: float = 120.0) -> tuple[RunJob, str]:
    """Stop a run's newest job, wait until Ray reports it ended, and record the end in the run's provenance.

    The trainer is killed before it can write its status, so the run's ``manifest.json`` would
    keep ``running``; this records ``stopped`` (or ``failed`` / ``succeeded`` when the job ended
    that way first) through :func:`hyperpod_rl.runs.record_final_status`. A job still PENDING
    (waiting for resources) is cancelled and recorded ``stopped`` too. Same path as :func:`stop_run`.

    Args:
        client: the cluster's job client, an access object or a cluster address.
        run_id: the run.
        run_dir: its run directory (default: under the storage root).
        timeout_s: how long to wait for the job to end, in seconds.

    Returns:
        ``(job, status)``: the job stopped (its status as before the stop; ``job.alive`` is False
        when it had already ended, and nothing was stopped) and the run status its run directory
        records. A job the cluster no longer knows (``LOST``) whose run directory records its end
        had ended too: ``(job, that end)``.

    Raises:
        JobError: the run has no job, the cluster cannot be reached, the cluster does not know
            the job and the run directory records no end, or the job did not end in time.
    """
    from hyperpod_rl.cluster.access import job_client_of

    client = job_client_of(client)
    paths = RunPaths(Path(run_dir)) if run_dir is not None else run_paths(run_id)
    job = latest_job(client, run_id, paths.root)
    if job.status == "LOST":
        summary = summarize(paths) if paths.root.is_dir() else None
        if summary is not None and summary.submission_id == job.submission_id and summary.status in FINAL_STATUSES:
            return job, summary.status
        raise JobError(f"job {job.submission_id} of run {run_id!r} is not on this cluster: nothing to stop here")
    _, status = _stop_job(client, job.submission_id, paths, timeout_s, source="hyperpod-rl job stop")
    assert status is not None
    return job, status


def resubmission_note(run: RunPaths) -> str | None:
    """What submitting ``run`` again will do, when its newest job ended without finishing it:
    stopped (``hyperpod-rl job stop``, :func:`stop_run`, a dashboard stop) or failed; None for a
    run never submitted, still running, or finished (the caller refuses those).

    A new job resumes from the run's newest checkpoint whose checksums match (what the trainer
    does, :func:`hyperpod_rl.runs.files.latest_valid_checkpoint`), or trains from step 0 when it
    kept none; the note names the job that ended, how and when (as its run directory records
    it), the checkpoint's step and the run's last. ``hyperpod-rl quickstart --resume`` and
    ``hyperpod-rl job submit`` say it before they submit.
    """
    import warnings

    from hyperpod_rl.runs import read_provenance
    from hyperpod_rl.runs.files import latest_valid_checkpoint

    summary = summarize(run) if run.root.is_dir() else None
    if summary is None or summary.submission_id is None or summary.status not in ("stopped", "failed"):
        return None
    try:
        ended = (read_provenance(run.root) or {}).get("ended") or {}
    except HyperpodRLError:
        ended = {}
    if ended.get("submission_id") != summary.submission_id:
        ended = {}
    source, at = str(ended.get("source") or ""), str(ended.get("at") or "").replace("T", " ").rstrip("Z")
    when = f" at {at} UTC" if at else ""
    if summary.status == "stopped" and source.startswith(("hyperpod-rl job stop", "hyperpod_rl.stop_run")):
        how = f"was stopped by the user ({source.split(' (')[0]}{when})"
    elif summary.status == "stopped":
        how = f"was stopped{when} ({source or 'recorded stopped'})"
    else:
        how = f"failed{when} (hyperpod-rl job logs {run.run_id} shows why)"
    with warnings.catch_warnings():  # a damaged newer checkpoint: the trainer says so as it skips it
        warnings.simplefilter("ignore")
        checkpoint = latest_valid_checkpoint(run.checkpoints)
    total = f" of {summary.total_steps}" if summary.total_steps else ""
    if checkpoint is None:
        start = f"which trains from step 0{total}: the run kept no checkpoint"
    else:
        step = int(checkpoint.name.removeprefix("step_"))
        start = f"which resumes from the run's newest checkpoint, {checkpoint.name} (step {step}{total})"
    return f"run {run.run_id}'s job {summary.submission_id} {how}; submitting it again starts a new job, {start}"


def reconcile_statuses(
    client: Any, storage: str | Path | None = None, *, run_ids: list[str] | None = None, unrecorded: dict[str, str] | None = None
) -> dict[str, str]:
    """Record the end of every run not recorded as ended (``submitted`` or ``running``) whose newest Ray job has ended.

    A trainer killed from outside (``job stop``, a dashboard stop, an OOM kill) never writes its
    final status, and a job that failed before its trainer started (missing data, a bad
    interpreter, workers that never got resources) leaves the run ``submitted``; Ray knows
    how it ended. Runs whose job the cluster does not know are left alone (their
    status cannot be confirmed here).

    Args:
        client: the cluster's job client (or an access object or address).
        storage: storage root (default :func:`hyperpod_rl.paths.storage_root`).
        run_ids: only these runs (default: every run of the store).
        unrecorded: when given, filled with ``{run_id: the StorageError's message}`` for each run
            whose end could not be written (its run directory is read-only, full or forbidden);
            the other runs are reconciled all the same. Without it the first such error is
            raised, after the other runs are reconciled.

    A run's status is that of its newest submission (:func:`hyperpod_rl.runs.current_status`):
    after a resubmission, an end recorded for an earlier job is not the run's, so a resubmitted
    run whose new job failed is recorded ``failed``, as ``job status`` says. ``hyperpod-rl job
    status``, ``runs list``, ``runs show`` and ``runs sync`` all reconcile through here.

    Returns:
        ``{run_id: recorded status}`` for each run changed.

    Raises:
        JobError: the cluster cannot be reached.
        StorageError: a run's end could not be written (only without ``unrecorded``).
    """
    from hyperpod_rl.cluster.access import job_client_of
    from hyperpod_rl.runs import list_runs as store_runs

    client = job_client_of(client)
    try:
        details = client.list_jobs()
    except (RuntimeError, OSError) as err:
        raise JobError(
            f"cannot list the cluster's jobs ({type(err).__name__}: {last_line(err)}); is it up? (hyperpod-rl local status)"
        ) from None
    ray = {j.submission_id: str(j.status.value if hasattr(j.status, "value") else j.status) for j in details if j.submission_id}
    changed: dict[str, str] = {}
    first: StorageError | None = None
    for run in store_runs(storage):
        if run_ids is not None and run.run_id not in run_ids:
            continue
        try:
            recorded = _record_ray_end(run, ray.get(run.submission_id or ""))
        except StorageError as err:  # this run's directory: the other runs are not concerned
            if unrecorded is not None:
                unrecorded[run.run_id] = str(err)
            first = first or err
            continue
        if recorded:
            changed[run.run_id] = recorded
    if first is not None and unrecorded is None:
        raise first
    return changed


def _record_ray_end(run: RunSummary, ray_status: str | None) -> str | None:
    """Record in ``run``'s directory how its newest job ended, when Ray says it has (``ray_status``
    of ``run.submission_id``) and the run records no end yet; return the status recorded, or None."""
    if run.status in FINAL_STATUSES or run.submission_id is None or ray_status not in _ENDED:
        return None
    recorded = record_final_status(
        RunPaths(run.run_dir),
        _ENDED[ray_status],
        submission_id=run.submission_id,
        source=f"Ray job status {ray_status} (the trainer did not record its end)",
        only_over_running=True,
    )
    return _ENDED[ray_status] if recorded else None


@dataclass(frozen=True)
class RunStatus:
    """A run's status, from the one rule every front-end uses (:func:`run_status`).

    Attributes:
        run_id: the run.
        submission_id: its newest job (``hprl-<run_id>-<n>``), or None when it has none.
        status: Ray's word for the newest job: ``PENDING``, ``RUNNING``, ``SUCCEEDED``,
            ``FAILED``, ``STOPPED``; read from the run directory's recorded end when the cluster
            cannot tell (it was restarted, or none answers); ``LOST`` when the cluster answers,
            no longer knows the job and the run directory records no end; ``UNKNOWN`` when no
            cluster answers and the run directory records no end; ``CREATED`` for a run never
            submitted (:func:`overview` only).
        detail: one sentence saying where the status comes from (and what to do when unknown).
        recorded: the run directory's own status (``created``, ``submitted``, ``running``,
            ``succeeded``, ``failed``, ``stopped``; :func:`hyperpod_rl.runs.current_status`),
            None without a run directory.
    """

    run_id: str
    submission_id: str | None
    status: str
    detail: str
    recorded: str | None

    @property
    def exit_code(self) -> int:
        """``hyperpod-rl job status``'s exit code: 0 pending, running or succeeded; 1 failed,
        stopped or lost; 2 unknown (it cannot tell)."""
        if self.status == "UNKNOWN":
            return 2
        return 1 if self.status in ("FAILED", "STOPPED", "LOST") else 0


def run_status(client: Any | None, run_id: str, run_dir: Path | None = None, *, unreachable: str | None = None) -> RunStatus:
    """The status of a run's newest job: Ray's, while the cluster knows the job; else the end its
    run directory records; else ``LOST`` (the cluster answers but does not know it) or ``UNKNOWN``
    (no cluster answers). ``hyperpod-rl job status`` shows this; ``runs list`` and the notebook's
    runs table read the same recorded ends (:func:`reconcile_statuses`, :func:`overview`).

    A job that ended while no one recorded it (a kill, a dashboard stop) has its end recorded in
    the run directory here, as :func:`reconcile_statuses` does.

    Args:
        client: the cluster's job client, or None when no cluster could be reached.
        run_id: the run.
        run_dir: its run directory (default: under the storage root).
        unreachable: why no client could be made (shown in :attr:`RunStatus.detail`).

    Raises:
        JobError: the run has no job on the cluster and no run directory recording one (the
            message says why the cluster was not asked, when it was not).
    """
    paths = RunPaths(Path(run_dir)) if run_dir is not None else run_paths(run_id)
    jobs: list[RunJob] = []
    if client is not None:
        try:
            jobs = run_jobs(client, run_id, paths.root)
        except JobError as err:  # the cluster does not answer: read the run directory
            client, unreachable = None, str(err)
    summary = summarize(paths) if paths.root.is_dir() else None
    newest = jobs[-1] if jobs else None
    if newest is not None and not newest.alive and newest.status != "LOST" and summary is not None:
        if summary.submission_id == newest.submission_id and _record_ray_end(summary, newest.status):
            summary = summarize(paths)
    if newest is None and (summary is None or summary.submission_id is None):
        why = f" ({unreachable})" if unreachable else ""
        raise _no_job(run_id, why, paths=paths)
    return _decide(run_id, newest, summary, answered=client is not None, unreachable=unreachable)


def _decide(run_id: str, newest: RunJob | None, summary: RunSummary | None, *, answered: bool, unreachable: str | None = None) -> RunStatus:
    """The one status rule (:func:`run_status`, :func:`overview`): Ray's status of the newest job
    while the cluster knows it; else the end the run directory records; else ``LOST`` (the
    cluster answered) or ``UNKNOWN`` (none did); ``CREATED`` for a run never submitted."""
    recorded = summary.status if summary is not None else None
    if newest is not None and newest.status != "LOST":
        return RunStatus(run_id, newest.submission_id, newest.status, newest.message or f"Ray job status {newest.status}", recorded)
    submission_id = newest.submission_id if newest is not None else (summary.submission_id if summary is not None else None)
    if submission_id is None:
        return RunStatus(run_id, None, "CREATED", "never submitted: there is no job yet", recorded)
    if recorded in FINAL_STATUSES:
        gone = f"the cluster no longer knows job {submission_id}" if answered else "no cluster answers"
        return RunStatus(run_id, submission_id, str(recorded).upper(), f"the run directory records its end ({gone})", recorded)
    if answered:
        detail = f"the cluster does not know job {submission_id} (restarted, or another cluster) and the run directory records no end"
        return RunStatus(run_id, submission_id, "LOST", detail, recorded)
    detail = f"no cluster answers ({unreachable or 'none given'}) and the run directory records no end: start the cluster and ask again"
    return RunStatus(run_id, submission_id, "UNKNOWN", detail, recorded)


def readable_log(log: str, total_steps: int | None = None) -> str:
    """A job log with each metric line (``HPRL_METRIC {json}``, about 1.3 KB a step) replaced by
    the progress line a follower prints for that step (:meth:`RunProgress.line`, e.g.
    ``grpo 40/200 reward +0.120 loss -0.0153 · 2.1 s/step``); every other line as it is.

    Args:
        log: the job's log text (:func:`job_logs`).
        total_steps: the run's ``trainer.steps``; default: the last step in the log.
    """
    lines = log.splitlines()
    records = [parse_metric_line(line) for line in lines]
    steps = [r.step for r in records if r is not None]
    state = RunProgress(total_steps if total_steps is not None else max(steps, default=0))
    out = []
    for line, record in zip(lines, records, strict=True):
        if record is None:
            out.append(line)
            continue
        state.add(JobUpdate(status="RUNNING", records=[record]))
        out.append(state.line())
    return "".join(f"{line}\n" for line in out)


def recorded_steps(run_id: str, run_dir: Path | None = None, *, raw: bool = False) -> tuple[str, str]:
    """A finished run's steps as its run directory records them (``metrics.jsonl``), no cluster
    needed: what ``hyperpod-rl job logs`` prints when the cluster cannot give the job's log (none
    answers, or it no longer knows the job). Each step is one progress line, as :func:`readable_log`
    writes a step of a job log (``raw``: the ``HPRL_METRIC`` line the trainer logged for it).

    Args:
        run_id: the run.
        run_dir: its run directory (default: under the storage root).
        raw: the metric lines as the trainer writes them to its log, instead of progress lines.

    Returns:
        ``(text, status)``: the lines, and the end the run directory records (``succeeded``,
        ``failed`` or ``stopped``).

    Raises:
        ConfigError: ``run_id`` is not a valid run id.
        JobError: the run directory records no end (the run may still be going, so its log is
            the cluster's to give), or no step.
    """
    paths = RunPaths(Path(run_dir)) if run_dir is not None else run_paths(run_id)
    summary = summarize(paths) if paths.root.is_dir() else None
    interrupted = unsubmitted_quickstart(paths) if summary is not None and summary.submission_id is None else None
    if interrupted:
        raise JobError(interrupted)
    if summary is None or summary.status not in FINAL_STATUSES:
        recorded = f"{paths.root} does not exist" if summary is None else f"{paths.root} records it {summary.status}"
        raise JobError(f"run {run_id!r} has not finished as far as its run directory tells ({recorded}): its log is the cluster's to give")
    records = list(read_metrics(paths.metrics))
    if not records:
        raise JobError(f"run {run_id!r} ended {summary.status} before its first step: {paths.metrics} records none")
    log = "".join(f"{record.to_line()}\n" for record in records)
    return (log if raw else readable_log(log, summary.total_steps)), summary.status


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


def jobs_off_cluster(cluster_jobs: list[dict[str, Any]], storage: str | Path | None = None) -> list[dict[str, Any]]:
    """The runs of the run store whose newest job is not among ``cluster_jobs`` (:func:`list_runs`
    of a cluster that answered): submitted to a cluster since restarted, or to another one. Their
    run directories still hold them, so ``hyperpod-rl job list`` lists them beside the cluster's.

    Returns:
        Newest change first, one dict per run: ``run_id``, ``submission_id`` (its newest),
        ``status`` (the end its run directory records, upper case, else ``LOST``: the rule of
        :func:`run_status` for a cluster that answers and does not know the job), ``step``,
        ``total_steps``.
    """
    from hyperpod_rl.runs import list_runs as store_runs

    known = {job["submission_id"] for job in cluster_jobs}
    out = []
    for r in store_runs(storage):
        if r.submission_id is None or r.submission_id in known:
            continue
        status = _decide(r.run_id, None, r, answered=True)
        out.append(
            {"run_id": r.run_id, "submission_id": r.submission_id, "status": status.status, "step": r.step, "total_steps": r.total_steps}
        )
    return out


def reproduction(run_id: str, *, new_run_id: str | None = None) -> tuple[RunConfig, list[str]]:
    """The config that re-runs a recorded run exactly under a new run id, after checking its inputs.

    Args:
        run_id: the recorded run (its directory holds the provenance record).
        new_run_id: the reproduction's run id; default ``<run_id>-r<N>``, the first unused N.

    Returns:
        ``(config, warnings)``: warnings say what differs from the original (code commit,
        package versions) without changing the inputs.

    Raises:
        CheckpointError: the run has no provenance record.
        ConfigError: a dataset or the base model changed or is missing; ``new_run_id`` exists.
    """
    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.runs import reproduce_config

    source = run_paths(run_id)
    if new_run_id is None:
        n = 1
        while run_paths(f"{run_id}-r{n}").root.exists():
            n += 1
        new_run_id = f"{run_id}-r{n}"
    target = run_paths(new_run_id)
    if target.config.exists() or target.submissions.exists():
        raise ConfigError(f"run {new_run_id!r} already exists at {target.root}: pick another new run id")
    return reproduce_config(source.root, run_id=new_run_id)


def reproduce_run(client: Any, run_id: str, *, new_run_id: str | None = None) -> tuple[RunHandle, list[str]]:
    """Resubmit a recorded run exactly (same resolved config, data and base model) under a new run id.

    :func:`reproduction` checks the inputs, then :func:`submit_run` submits.

    Returns:
        ``(handle, warnings)``.

    Raises:
        CheckpointError, ConfigError: see :func:`reproduction`.
        JobError: see :func:`submit_run`.
    """
    config, warns = reproduction(run_id, new_run_id=new_run_id)
    return submit_run(client, config), warns


def overview(client: Any | None, storage: str | Path | None = None) -> list[dict[str, Any]]:
    """Every run of the run store and every hyperpod-rl job of the cluster, newest first.

    Args:
        client: the cluster's job client, or ``None`` for the run store alone.
        storage: storage root (default :func:`hyperpod_rl.paths.storage_root`).

    Returns:
        One dict per run: ``run_id``, ``submission_id`` (or ``None``), ``status`` (the rule of
        :func:`run_status`, which ``hyperpod-rl job status`` shows: the Ray job's status while
        the cluster knows the run's newest job, else the end its run directory records
        (``SUCCEEDED``, ``FAILED``, ``STOPPED``), else ``LOST`` (the cluster does not know the job)
        or ``UNKNOWN`` (no client); ``CREATED`` when never submitted), ``where`` (``cluster`` or
        ``run store``: where the status comes from), ``step``, ``total_steps``, ``last_reward``.

    Raises:
        JobError: the cluster cannot be reached (only when ``client`` is given).
    """
    from hyperpod_rl.runs import list_runs as store_runs

    on_cluster: dict[str, dict[str, Any]] = {}
    if client is not None:
        for job in list_runs(client):  # newest first: the first job of a run is its newest
            on_cluster.setdefault(job["run_id"], job)
    rows: dict[str, dict[str, Any]] = {}
    for r in store_runs(storage):
        job = on_cluster.pop(r.run_id, None)
        newest = RunJob(job["submission_id"], job["status"], job["message"]) if job else None
        status = _decide(r.run_id, newest, r, answered=client is not None)
        rows[r.run_id] = {
            "run_id": r.run_id,
            "submission_id": status.submission_id,
            "status": status.status,
            "where": "cluster" if job else "run store",
            "step": r.step,
            "total_steps": r.total_steps,
            "last_reward": r.last_reward,
        }
    for run_id, job in on_cluster.items():  # jobs whose run directory is not in this store
        rows[run_id] = {
            "run_id": run_id,
            "submission_id": job["submission_id"],
            "status": job["status"],
            "where": "cluster",
            "step": 0,
            "total_steps": None,
            "last_reward": None,
        }
    return list(rows.values())
