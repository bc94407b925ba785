"""``hyperpod-rl``: a thin typer + rich layer over the public API.

Commands: ``quickstart``, ``doctor``, ``local start|status|stop``, ``job status|logs|stop|list``, ``runs ...``,
``serve up|down|ask|solve|preflight|cluster-config|promote``, ``maze ...``, ``cluster ...``. No logic lives here that the library
does not expose: each command calls the same functions a notebook calls.
"""

from __future__ import annotations

import sys
import time

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from hyperpod_rl.errors import HyperpodRLError

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Train Qwen3-VL with GRPO + LoRA on Ray: locally or on SageMaker HyperPod."
)
local_app = typer.Typer(no_args_is_help=True, help="The embedded local Ray cluster.")
job_app = typer.Typer(no_args_is_help=True, help="Detached training jobs: reattach from any shell by run id.")
app.add_typer(local_app, name="local")
app.add_typer(job_app, name="job")

console = Console()


def _fail(err: Exception) -> None:
    console.print(f"[bold red]error:[/] {err}")
    raise typer.Exit(code=2)


# ---------------------------------------------------------------------------- local cluster
@local_app.command("start")
def local_start(
    dashboard_port: int | None = typer.Option(None, help="dashboard / job API port on 127.0.0.1 (default 8265 or a free one)"),
    num_cpus: int | None = typer.Option(None, help="logical CPUs of the head node (default: all cores)"),
    restart: bool = typer.Option(False, help="stop a running local cluster first"),
) -> None:
    """Start the local Ray cluster (token auth, dashboard on 127.0.0.1), or reuse the running one."""
    from hyperpod_rl.cluster.local import start_local_cluster

    try:
        with console.status("starting the local Ray cluster"):
            cluster = start_local_cluster(dashboard_port=dashboard_port, num_cpus=num_cpus, restart=restart)
    except HyperpodRLError as err:
        _fail(err)
    if getattr(cluster, "restarted_stale", False):
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
    alive = cluster.is_alive()
    console.print(
        f"{cluster.dashboard_url}: {'[green]up[/]' if alive else '[red]not answering (stale): hyperpod-rl local start restarts it[/]'}"
    )
    raise typer.Exit(code=0 if alive else 1)


@local_app.command("stop")
def local_stop() -> None:
    """Stop the local cluster (only its own Ray processes)."""
    from hyperpod_rl.cluster.local import current_local_cluster

    cluster = current_local_cluster()
    if cluster is None:
        console.print("no local cluster recorded")
        return
    cluster.stop()
    console.print("local Ray cluster stopped")


# ---------------------------------------------------------------------------- jobs
Address = typer.Option(
    None,
    "--address",
    envvar="HYPERPOD_RL_ADDRESS",
    help="cluster address: sagemaker_ray://<raycluster>/<namespace> (HyperPod), a dashboard URL, or local (default)",
)


def _client(address: str | None = None):
    from hyperpod_rl.cluster.local import current_local_cluster

    if address:
        from hyperpod_rl.cluster.access import job_client_of

        try:
            return job_client_of(address)
        except HyperpodRLError as err:
            _fail(err)
    cluster = current_local_cluster()
    if cluster is None or not cluster.is_alive():
        _fail(HyperpodRLError("no local Ray cluster is running: hyperpod-rl local start"))
    return cluster.job_client()


def _submission(run_id: str) -> str:
    from hyperpod_rl.jobs import latest_submission
    from hyperpod_rl.paths import run_dir

    try:
        return latest_submission(run_dir(run_id))
    except HyperpodRLError as err:
        _fail(err)
        raise


def follow_with_progress(client, submission_id: str, total_steps: int, *, from_start: bool = True) -> str:
    """Show a rich progress bar with reward and loss until the job ends; return its final status.

    Ctrl-C detaches: the job keeps running.
    """
    from hyperpod_rl.jobs import follow_run

    columns = [
        TextColumn("[bold]train"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("reward {task.fields[reward]}"),
        TextColumn("loss {task.fields[loss]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    status = "PENDING"
    if not console.is_terminal:  # e.g. CI logs: a plain line every 10% instead of a live bar
        return _follow_plain(client, submission_id, total_steps, from_start=from_start)
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("train", total=total_steps, reward="-", loss="-")
            for update in follow_run(client, submission_id, from_start=from_start):
                status = update.status
                for rec in update.records:
                    progress.update(
                        task,
                        completed=rec.step,
                        reward=f"{rec.values.get('reward/avg_raw_reward', float('nan')):+.3f}",
                        loss=f"{rec.values.get('policy/policy_loss', float('nan')):+.4f}",
                    )
                if update.terminal:
                    if status != "SUCCEEDED":
                        tail = "\n".join(client.get_job_logs(submission_id).splitlines()[-25:])
                        console.print(f"[red]job {submission_id} ended {status}[/]: {update.message}\n{tail}")
                    break
    except KeyboardInterrupt:
        console.print(
            f"\ndetached; the job keeps running. Reattach: hyperpod-rl job logs --follow {submission_id.split('-', 1)[1].rsplit('-', 1)[0]}"
        )
        raise typer.Exit(code=130) from None
    return status


def _follow_plain(client, submission_id: str, total_steps: int, *, from_start: bool) -> str:
    from hyperpod_rl.jobs import follow_run

    status, shown = "PENDING", -1
    try:
        for update in follow_run(client, submission_id, from_start=from_start):
            status = update.status
            for rec in update.records:
                decile = rec.step * 10 // max(total_steps, 1)
                if decile > shown:
                    shown = decile
                    console.print(
                        f"train {rec.step}/{total_steps} reward {rec.values.get('reward/avg_raw_reward', float('nan')):+.3f} loss {rec.values.get('policy/policy_loss', float('nan')):+.4f}"
                    )
            if update.terminal and status != "SUCCEEDED":
                console.print(f"job {submission_id} ended {status}: {update.message}")
    except KeyboardInterrupt:
        console.print("detached; the job keeps running")
        raise typer.Exit(code=130) from None
    return status


@job_app.command("status")
def job_status(run_id: str, address: str | None = Address) -> None:
    """Status of a run's latest submission."""
    client = _client(address)
    sub = _submission(run_id)
    try:
        info = client.get_job_info(sub)
    except RuntimeError:
        _fail(
            HyperpodRLError(
                f"job {sub} of run {run_id!r} is not on the running cluster (it was restarted or stopped): resubmit the run to resume it"
            )
        )
        raise
    console.print(f"{run_id} ({sub}): {info.status} {info.message or ''}")


@job_app.command("logs")
def job_logs(
    run_id: str,
    follow: bool = typer.Option(False, "--follow", "-f", help="stream until the job ends (Ctrl-C detaches)"),
    address: str | None = Address,
) -> None:
    """Print a run's job log; with --follow, show progress until it ends."""
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.paths import run_dir

    client = _client(address)
    sub = _submission(run_id)
    if not follow:
        sys.stdout.write(client.get_job_logs(sub))
        return
    config = RunConfig.model_validate_json((run_dir(run_id) / "config.json").read_text())
    status = follow_with_progress(client, sub, config.trainer.steps)
    raise typer.Exit(code=0 if status == "SUCCEEDED" else 1)


@job_app.command("stop")
def job_stop(run_id: str, address: str | None = Address) -> None:
    """Stop a run's job (its checkpoints stay; resubmitting resumes)."""
    from hyperpod_rl.jobs import stop_run

    client = _client(address)
    sub = _submission(run_id)
    stopped = stop_run(client, sub)
    console.print(f"{sub}: {'stop requested' if stopped else 'was not running'}")


@job_app.command("list")
def job_list(address: str | None = Address) -> None:
    """hyperpod-rl jobs on the cluster (the local one unless --address)."""
    from hyperpod_rl.jobs import list_runs

    table = Table("run id", "submission id", "status", "started")
    for row in list_runs(_client(address)):
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["start_time_ms"] / 1000)) if row["start_time_ms"] else "-"
        table.add_row(row["run_id"], row["submission_id"], row["status"], started)
    console.print(table)


from hyperpod_rl.cli import cluster as _cluster
from hyperpod_rl.cli import maze as _maze
from hyperpod_rl.cli import runs as _runs
from hyperpod_rl.cli import serve as _serve
from hyperpod_rl.cli.doctor import doctor_command
from hyperpod_rl.cli.quickstart import quickstart

app.command("quickstart")(quickstart)
app.command("doctor")(doctor_command)
app.add_typer(_maze.app, name="maze")
app.add_typer(_cluster.app, name="cluster")
app.add_typer(_runs.app, name="runs")
app.add_typer(_serve.app, name="serve")

__all__ = ["app", "follow_with_progress"]

if __name__ == "__main__":
    app()
