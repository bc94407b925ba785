"""``hyperpod-rl``: a thin typer + rich layer over the public API.

Commands: ``quickstart``, ``doctor``, ``plan``, ``local start|status|stop``, ``job submit|status|logs|stop|list``, ``runs ...``,
``serve ...``, ``maze ...``, ``tasks list|show|audit|sample``, ``cluster ...``. No logic lives here that the library does not
expose: each command calls the same functions a notebook calls.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import NoReturn

import typer

from hyperpod_rl.cli import cluster as _cluster
from hyperpod_rl.cli import maze as _maze
from hyperpod_rl.cli import runs as _runs
from hyperpod_rl.cli import serve as _serve
from hyperpod_rl.cli import tasks as _tasks
from hyperpod_rl.cli._common import (
    Address,
    HprlGroup,
    TableColumn,
    cli_words,
    console,
    fail,
    fitted_table,
    follow_with_progress,
    handled,
    job_client,
    print_note,
    reachable_client,
)
from hyperpod_rl.cli.doctor import doctor_command
from hyperpod_rl.cli.plan import plan_command
from hyperpod_rl.cli.quickstart import quickstart
from hyperpod_rl.errors import HyperpodRLError

__all__ = ["app", "follow_with_progress"]

app = typer.Typer(
    cls=HprlGroup,
    add_completion=False,
    no_args_is_help=True,
    help="Train Qwen3-VL with GRPO + LoRA on Ray: locally or on SageMaker HyperPod.",
)
local_app = typer.Typer(cls=HprlGroup, no_args_is_help=True, help="The embedded local Ray cluster.")
job_app = typer.Typer(
    cls=HprlGroup, no_args_is_help=True, help="Detached training jobs: submit a run config file; reattach from any shell by run id."
)
app.add_typer(local_app, name="local")
app.add_typer(job_app, name="job")
app.command("quickstart")(quickstart)
app.command("doctor")(doctor_command)
app.command("plan")(plan_command)
app.add_typer(_maze.app, name="maze")
app.add_typer(_cluster.app, name="cluster")
app.add_typer(_runs.app, name="runs")
app.add_typer(_serve.app, name="serve")
app.add_typer(_tasks.app, name="tasks")


# ---------------------------------------------------------------------------- local cluster
@local_app.command("start")
def local_start(
    dashboard_port: int | None = typer.Option(None, help="dashboard / job API port on 127.0.0.1 (default 8265 or a free one)"),
    num_cpus: int | None = typer.Option(None, help="logical CPUs of the head node (default: all cores)"),
    restart: bool = typer.Option(False, help="stop a running local cluster first"),
) -> None:
    """Start the local Ray cluster (token auth, dashboard on 127.0.0.1), or reuse the running one."""
    from hyperpod_rl.cluster.local import start_local_cluster

    with handled(), console.status("starting the local Ray cluster"):
        cluster = start_local_cluster(dashboard_port=dashboard_port, num_cpus=num_cpus, restart=restart)
    if cluster.restarted_stale:
        console.print("the recorded local cluster was not answering (stale): it was stopped and started again")
    from hyperpod_rl.jupyter import browser_link

    link = browser_link(cluster.dashboard_url, "dashboard")
    via = f" (in this JupyterLab's browser tab: {link.href})" if link.href != cluster.dashboard_url else ""
    console.print(f"local Ray cluster: dashboard {cluster.dashboard_url}{via} (token in {cluster.state_path}, mode 0600)")


@local_app.command("status")
def local_status() -> None:
    """Say whether the local cluster recorded in the state file answers."""
    from hyperpod_rl.cluster.local import current_local_cluster

    cluster = current_local_cluster()
    if cluster is None:
        console.print("no local cluster recorded: hyperpod-rl local start")
        raise typer.Exit(code=1)
    from hyperpod_rl.jupyter import browser_link

    alive = cluster.is_alive()
    link = browser_link(cluster.dashboard_url, "dashboard")
    via = f" (in this JupyterLab's browser tab: {link.href})" if link.href != cluster.dashboard_url else ""
    console.print(
        f"{cluster.dashboard_url}{via}: {'[green]up[/]' if alive else '[red]not answering (stale): hyperpod-rl local start restarts it[/]'}"
    )
    raise typer.Exit(code=0 if alive else 1)


@local_app.command("stop")
def local_stop() -> None:
    """Stop the local cluster (only its own Ray processes), or what a killed start left running.

    Its Ray logs (its jobs' logs among them, a failed one's traceback too) are kept, as 'ray stop'
    keeps them, and said where; only the last cluster's: its stop removes those of the clusters
    stopped before it.
    """
    from hyperpod_rl.cluster.local import current_local_cluster, keep_last_session, local_temp_dir, stop_cluster_processes

    cluster = current_local_cluster()
    if cluster is None:
        # a start killed before it recorded its state leaves Ray processes with this data dir's temp dir
        leftover = stop_cluster_processes(local_temp_dir())
        logs = keep_last_session(local_temp_dir())
        console.print("no local cluster recorded" + (f"; stopped {leftover} Ray processes a killed start left running" if leftover else ""))
    else:
        cluster.stop()
        logs = keep_last_session(cluster.state.temp_dir)
        console.print("local Ray cluster stopped")
    if logs is not None:
        console.print(
            f"the local cluster's Ray logs (its jobs': job-driver-hprl-<run id>-<N>.log) are kept in {logs.path} ({logs.size}); "
            "the next cluster's stop replaces them",
            soft_wrap=True,
            highlight=False,
        )


# ---------------------------------------------------------------------------- jobs
@job_app.command("submit")
def job_submit(
    config: Path = typer.Argument(..., help="run config file, YAML or JSON (the RunConfig fields: run_id, backend, data, trainer, ...)"),
    follow: bool = typer.Option(False, "--follow", "-f", help="stream progress until the job ends (Ctrl-C detaches)"),
    fresh: bool = typer.Option(False, "--fresh", help="discard the run's checkpoints and train it from step 0"),
    python: str | None = typer.Option(
        None, "--python", help="the interpreter the job runs under on the cluster (default: this one; HyperPod: the image's python)"
    ),
    from_run: str | None = typer.Option(
        None,
        "--from-run",
        help="start from this finished run's adapter (sets model.init_adapter; e.g. GRPO from an SFT run); same base model required",
    ),
    address: str | None = Address,
) -> None:
    """Submit a run config file as a detached Ray Job (resubmitting a run id resumes it).

    The config is validated, and checked against the cluster's resources, before anything is
    submitted. Resubmitting a run whose job was stopped or failed first says so in a note, and
    where the new job starts (its newest checkpoint, or step 0). Exit code: 0 when submitted
    (with --follow: when the job succeeded), 1 when a followed job did not succeed, 2 on bad input.
    """
    import warnings

    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.jobs import resubmission_note, submit_run
    from hyperpod_rl.runs import run_paths

    overrides = {}
    if from_run is not None:
        from hyperpod_rl.runs.lineage import finished_adapter

        with _runs.about_run(from_run, option="--from-run"):
            overrides["model.init_adapter"] = str(finished_adapter(from_run))
    with handled():
        run = RunConfig.from_file(config, **overrides)
    client = job_client(address)
    with handled():
        note = None if fresh else resubmission_note(run_paths(run.run_id))
    if note:  # a stopped or failed run: say where the new job starts, before it is submitted
        print_note(note)
    with handled(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = submit_run(client, run, python=python, fresh=fresh)
    for w in caught:
        console.print(f"[bold yellow]warning:[/] {w.message}", soft_wrap=True, highlight=False)
    console.print(
        f"submitted {handle.submission_id}: run {handle.run_id} in {handle.run_dir}; hyperpod-rl job logs --follow {handle.run_id}",
        soft_wrap=True,
        highlight=False,
    )
    if follow:
        status = follow_with_progress(client, handle.submission_id, run.trainer.steps)
        raise typer.Exit(code=0 if status == "SUCCEEDED" else 1)


@job_app.command("status")
def job_status(run_id: str, address: str | None = Address) -> None:
    """Status of a run's newest job: Ray's while the cluster knows it, else the end its run directory records.

    Exit code: 0 when the job is PENDING, RUNNING or SUCCEEDED; 1 when it FAILED, was STOPPED
    or is LOST (the cluster no longer knows it and the run directory records no end), so a
    script can test it; 2 when the status cannot be read (no such run; no cluster answers and
    the run directory records no end). A run whose cluster was restarted, or with no cluster
    up, reads its recorded end. Unlike 'ray job status', which exits 0 whatever the job did,
    this matches 'job submit --follow' and 'job logs --follow'. A run id that matches no run
    is said to be unknown, as 'runs show' says it. Each damaged file of the run gets a warning
    on standard error with the way back, as 'runs show' gives it; the exit code stays the status's.
    """
    from hyperpod_rl.jobs import run_status

    client, unreachable = reachable_client(address)
    try:
        status = run_status(client, run_id, unreachable=unreachable)
    except HyperpodRLError as err:
        _runs.fail_if_unknown(run_id)
        said = str(err)
        fail(said if not unreachable or unreachable in said else f"{unreachable}; and the run directory cannot tell: {said}")
    run_says = f" · run recorded {status.recorded}" if status.recorded else ""
    console.print(
        f"{run_id} ({status.submission_id}): {status.status} {cli_words(status.detail)}{run_says}", soft_wrap=True, highlight=False
    )
    _runs.warn_if_damaged(run_id)  # a damaged file a later command needs: said now, with the way back
    if status.exit_code:
        raise typer.Exit(code=status.exit_code)


@job_app.command("logs")
def job_logs(
    run_id: str,
    follow: bool = typer.Option(False, "--follow", "-f", help="stream until the job ends (Ctrl-C detaches)"),
    raw: bool = typer.Option(False, "--raw", help="print the metric lines as the trainer wrote them (HPRL_METRIC JSON)"),
    address: str | None = Address,
) -> None:
    """Print a run's job log, each step as one progress line (--raw: as written); with --follow, show progress until it ends.

    When the cluster cannot give the log (it is not running, or no longer knows the job) and the
    run has finished, its steps are read from its run directory (metrics.jsonl) and printed in the
    same lines, after a note on standard error that says so; with --follow the exit code is then
    0 when the run succeeded, 1 otherwise. A run id that matches no run is said to be unknown, as
    'runs show' says it.
    """
    from hyperpod_rl.jobs import job_logs as read_logs
    from hyperpod_rl.jobs import latest_job, readable_log
    from hyperpod_rl.runs import read_config

    client, unreachable = reachable_client(address)
    if client is None:
        _runs.fail_if_unknown(run_id)
        try:
            _steps_from_disk(run_id, _not_reached(unreachable), raw=raw, follow=follow)
        except HyperpodRLError as err:
            fail(f"{unreachable}; and the run directory cannot stand in for its log: {err}")
    with _runs.about_run(run_id):
        job = latest_job(client, run_id)
    if job.status == "LOST":
        try:
            why = f"the cluster no longer knows its job {job.submission_id} (it was restarted, or is another cluster)"
            _steps_from_disk(run_id, why, raw=raw, follow=follow)
        except HyperpodRLError:
            pass  # not finished: the cluster's own answer below says what to do (resubmit)
    with handled():
        if not follow:
            log = read_logs(client, job.submission_id)
            try:
                total: int | None = read_config(run_id).trainer.steps
            except HyperpodRLError:  # the run directory is elsewhere: count the log's own steps
                total = None
            sys.stdout.write(log if raw else readable_log(log, total))
            return
        total = read_config(run_id).trainer.steps
    status = follow_with_progress(client, job.submission_id, total)
    raise typer.Exit(code=0 if status == "SUCCEEDED" else 1)


def _steps_from_disk(run_id: str, why: str, *, raw: bool, follow: bool) -> NoReturn:
    """``job logs`` without the cluster's log (``why``, e.g. ``no local Ray cluster is running``):
    print the finished run's steps from its run directory (:func:`hyperpod_rl.jobs.recorded_steps`)
    after one note saying so, in plain words, and exit.

    Raises:
        JobError: the run has not finished, or recorded no step. ConfigError: an invalid run id.
    """
    from hyperpod_rl.jobs import recorded_steps
    from hyperpod_rl.runs import run_paths

    text, status = recorded_steps(run_id, raw=raw)
    print_note(f"{why}, so run {run_id}'s steps are read from its run directory ({run_paths(run_id).metrics}); the run ended {status}")
    sys.stdout.write(text)
    raise typer.Exit(code=(0 if status == "succeeded" else 1) if follow else 0)


def _not_reached(unreachable: str | None) -> str:
    """Why no cluster answered, as the start of a note: what :func:`reachable_client` said, without
    the fix it gives for starting one (``no local Ray cluster is running``), which a run that has
    ended does not need."""
    return cli_words(unreachable or "no cluster answers").split(": ", 1)[0]


@job_app.command("stop")
def job_stop(
    run_id: str,
    address: str | None = Address,
    timeout_s: float = typer.Option(120.0, "--timeout-s", help="seconds to wait for the job to end"),
) -> None:
    """Stop a run's job (cancelling it while it is still PENDING), wait until it has ended, and record
    'stopped' in the run's provenance (its checkpoints stay; resubmitting resumes).

    A run that has already ended is said to have, with the end its run directory records, and
    nothing is stopped (exit code 0), whether or not a cluster answers.
    """
    from hyperpod_rl.jobs import run_status, stop_and_record

    client, unreachable = reachable_client(address)
    if client is None:
        _runs.fail_if_unknown(run_id)
        try:
            recorded = run_status(None, run_id, unreachable=unreachable)
        except HyperpodRLError:
            recorded = None
        if recorded is None or recorded.status == "UNKNOWN":  # not ended, as far as the run directory tells: the cluster is needed
            fail(str(unreachable))
        _said_ended(run_id, f"its run directory records it {recorded.recorded} (job {recorded.submission_id})")
        return
    with _runs.about_run(run_id), console.status(f"stopping run {run_id}'s job"):
        job, status = stop_and_record(client, run_id, timeout_s=timeout_s)
    if job.alive:
        console.print(f"{job.submission_id}: stopped; run {run_id} recorded {status}")
    elif job.status == "LOST":
        _said_ended(run_id, f"its run directory records it {status} (job {job.submission_id}, which this cluster no longer knows)")
    else:
        _said_ended(run_id, f"its job {job.submission_id} ended {job.status} and its run directory records it {status}")


def _said_ended(run_id: str, how: str) -> None:
    """``job stop``'s answer for a run that had ended before it was asked (``how``): nothing was stopped."""
    console.print(f"run {run_id} has already ended: {how}; nothing to stop", soft_wrap=True, highlight=False)


@job_app.command("list")
def job_list(address: str | None = Address) -> None:
    """hyperpod-rl jobs on the cluster (the local one unless --address), and the runs whose newest job it does not know.

    A run submitted to a cluster that was restarted since (or to another one) is still in its run
    directory: it is listed after the cluster's jobs, marked 'run dir' and with the end its run
    directory records (LOST: none), after a note on standard error that says so. When the cluster
    is not running, the jobs the run directories record are listed instead, each with the end its
    run directory records (UNKNOWN: none), after a note that says so.
    """
    from hyperpod_rl.jobs import jobs_off_cluster, list_runs, overview
    from hyperpod_rl.runs import runs_root

    client, unreachable = reachable_client(address)
    if client is None:
        with handled():
            recorded = [row for row in overview(None) if row["submission_id"]]
        print_note(
            f"{_not_reached(unreachable)}, so these are the jobs the run directories under {runs_root()} record, with the end each records"
        )
        steps = [f"{row['step']}/{row['total_steps'] or '?'}" for row in recorded]
        columns = [*_job_columns(recorded), TableColumn("recorded status", [row["status"] for row in recorded], short_header="status")]
        console.print(fitted_table([*columns, TableColumn("steps", steps, drop=1)]))
        return
    with handled():
        rows = list_runs(client)
        off = jobs_off_cluster(rows)
    started = [
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["start_time_ms"] / 1000)) if row["start_time_ms"] else "-" for row in rows
    ]
    columns = [*_job_columns([*rows, *off]), TableColumn("status", [row["status"] for row in [*rows, *off]])]
    if off:  # jobs the cluster does not know: from their run directories, and marked so
        print_note(
            f"{len(off)} run(s) below have a newest job this cluster does not know (it was restarted since, or they ran on another): "
            f"listed from their run directories under {runs_root()} (marked 'run dir'), with the end each records (LOST: none)"
        )
        columns.append(TableColumn("from", ["cluster"] * len(rows) + ["run dir"] * len(off)))
        started += ["-"] * len(off)
    console.print(fitted_table([*columns, TableColumn("started", started, narrow_cells=[s[5:] for s in started], drop=1)]))


def _job_columns(rows: list[dict]) -> list[TableColumn]:
    """``job list``'s run id and submission id columns: each id on one line, whole; where the table
    is too wide for the terminal, the submission id ``hprl-<run id>-<N>`` is shown as its job number N."""
    subs = [str(row["submission_id"]) for row in rows]
    numbers = [sub.rsplit("-", 1)[-1] if sub.startswith(f"hprl-{row['run_id']}-") else sub for sub, row in zip(subs, rows, strict=True)]
    return [
        TableColumn("run id", [str(row["run_id"]) for row in rows]),
        TableColumn(
            "submission id",
            subs,
            short_header="job",
            narrow_cells=numbers,
            narrow_note="job N: submission id hprl-<run id>-N",
            justify="left",
        ),
    ]


if __name__ == "__main__":
    app()
