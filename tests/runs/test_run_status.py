"""A run killed from outside gets its end recorded: ``job stop`` waits for the job and records
``stopped``; ``runs list`` / ``runs sync`` reconcile ``running`` with Ray, and say
``unknown (cluster not reachable)`` rather than ``running`` when no cluster answers.

The Ray tests run real jobs on the session's local cluster (a ``sleep`` stands in for the
trainer: like a killed trainer, it never writes its status).
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.jobs import RUN_ID_METADATA, reconcile_statuses
from hyperpod_rl.runs import add_submission, read_provenance, record_final_status, run_paths, update_provenance

runner = CliRunner()


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """One table row per run: the CLI's console is created once per process (80 columns when not a terminal)."""
    from hyperpod_rl.cli._common import console

    monkeypatch.setattr(console, "width", 300)


def _running_run(run_id: str) -> Path:
    """A run directory whose provenance says ``running``, as a trainer leaves it when killed."""
    paths = run_paths(run_id)
    update_provenance(paths.root, lambda _: {"run_id": run_id, "status": "running"})
    return paths.root


def _submit_sleeper(client, run_id: str) -> str:
    paths = run_paths(run_id)
    sid = f"hprl-{run_id}-1"
    add_submission(paths, sid)
    sleeper = f"exec {shlex.quote(sys.executable)} -c 'import time; time.sleep(600)'"
    client.submit_job(entrypoint=sleeper, submission_id=sid, metadata={RUN_ID_METADATA: run_id})
    return sid


def _list(tmp_path: Path, *extra: str) -> str:
    result = runner.invoke(app, ["runs", "list", "--ledger", str(tmp_path / "ledger.sqlite"), *extra], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.output


def _row(output: str, run_id: str) -> str:
    return next(line for line in output.splitlines() if run_id in line)


def test_record_final_status_keeps_what_the_trainer_wrote(tmp_path: Path) -> None:
    run_id = "status-kept"
    paths = run_paths(run_id)
    update_provenance(paths.root, lambda _: {"run_id": run_id, "status": "succeeded"})
    assert record_final_status(paths, "failed", submission_id="hprl-status-kept-1", source="test", only_over_running=True) is None
    assert read_provenance(paths.root)["status"] == "succeeded"
    with pytest.raises(ConfigError, match="not a final run status"):
        record_final_status(paths, "running", submission_id="x", source="test")


def test_unreachable_cluster_says_unknown_not_running(tmp_path: Path) -> None:
    _running_run("status-unreachable")
    out = _list(tmp_path, "--address", "http://127.0.0.1:9")  # nothing listens on port 9
    assert "unknown (cluster not reachable)" in _row(out, "status-unreachable")
    sync = runner.invoke(app, ["runs", "sync", "--ledger", str(tmp_path / "ledger.sqlite"), "--address", "http://127.0.0.1:9"])
    assert sync.exit_code == 0, sync.output
    assert "unknown (cluster not reachable)" in sync.output and "status-unreachable" in sync.output
    assert read_provenance(run_paths("status-unreachable").root)["status"] == "running"  # nothing guessed


@pytest.mark.ray
def test_job_stop_waits_and_records_stopped(local_cluster, tmp_path: Path) -> None:
    run_id = "status-stop"
    _running_run(run_id)
    client = local_cluster.job_client()
    sid = _submit_sleeper(client, run_id)
    result = runner.invoke(app, ["job", "stop", run_id, "--address", local_cluster.dashboard_url])
    assert result.exit_code == 0, result.output
    assert f"run {run_id} recorded stopped" in result.output
    assert str(client.get_job_status(sid).value) == "STOPPED"  # it waited for the end
    record = read_provenance(run_paths(run_id).root)
    assert record["status"] == "stopped" and record["ended"]["submission_id"] == sid
    assert " stopped " in _row(_list(tmp_path, "--address", local_cluster.dashboard_url), run_id)


@pytest.mark.ray
def test_runs_list_reconciles_a_job_stopped_elsewhere(local_cluster, tmp_path: Path) -> None:
    """A job stopped from the dashboard (or killed) leaves ``running``; the next list records its end."""
    run_id = "status-reconcile"
    _running_run(run_id)
    client = local_cluster.job_client()
    sid = _submit_sleeper(client, run_id)
    assert " running " in _row(_list(tmp_path, "--address", local_cluster.dashboard_url), run_id)
    client.stop_job(sid)
    for _ in range(240):  # a hang guard, not a timing target
        if str(client.get_job_status(sid).value) == "STOPPED":
            break
        time.sleep(0.5)
    assert " stopped " in _row(_list(tmp_path, "--address", local_cluster.dashboard_url), run_id)
    record = read_provenance(run_paths(run_id).root)
    assert record["status"] == "stopped" and "Ray job status STOPPED" in record["ended"]["source"]
    assert reconcile_statuses(client) == {}  # nothing left to reconcile
