"""A run killed from outside gets its end recorded: ``job stop`` waits for the job and records
``stopped``; ``runs list`` / ``runs sync`` reconcile ``running`` with Ray, and say
``unknown (cluster not reachable)`` rather than ``running`` when no cluster answers.

The Ray tests run real jobs on the session's local cluster (a ``sleep`` stands in for the
trainer: like a killed trainer, it never writes its status).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.jobs import RUN_ID_METADATA, reconcile_statuses
from hyperpod_rl.runs import add_submission, read_provenance, record_final_status, run_paths, update_provenance
from tests.ray_jobs import wait_terminal
from tests.storage_faults import on_a_full_disk, read_only

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
@pytest.mark.job
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
@pytest.mark.job
def test_runs_list_reconciles_a_job_stopped_elsewhere(local_cluster, tmp_path: Path) -> None:
    """A job stopped from the dashboard (or killed) leaves ``running``; the next list records its end."""
    run_id = "status-reconcile"
    _running_run(run_id)
    client = local_cluster.job_client()
    sid = _submit_sleeper(client, run_id)
    for _ in range(240):  # a hang guard, not a timing target: until then runs list shows Ray's PENDING, as job status does
        if str(client.get_job_status(sid).value) == "RUNNING":
            break
        time.sleep(0.5)
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


def test_a_resubmission_makes_an_earlier_end_not_the_runs(tmp_path: Path) -> None:
    """Field report: after a failed resubmission ``runs list`` said ``stopped`` while ``job status``
    said FAILED. A run's status is its newest submission's: an end recorded for an earlier one is not it."""
    from hyperpod_rl.runs import current_status, summarize

    run_id = "status-resubmitted"
    paths = run_paths(run_id)
    _running_run(run_id)
    add_submission(paths, f"hprl-{run_id}-1")
    record_final_status(paths, "stopped", submission_id=f"hprl-{run_id}-1", source="hyperpod-rl job stop")
    assert summarize(paths).status == "stopped"
    add_submission(paths, f"hprl-{run_id}-2")  # the resubmission
    record = read_provenance(paths.root)
    assert record["status"] == "submitted" and record["ended"]["submission_id"] == f"hprl-{run_id}-1"  # history kept
    assert summarize(paths).status == "submitted"
    # the new job failed before its trainer started: its end is recorded over the earlier one
    assert record_final_status(paths, "failed", submission_id=f"hprl-{run_id}-2", source="Ray", only_over_running=True)
    assert summarize(paths).status == "failed"
    # a directory left by an older version (stopped recorded for job 1, job 2 submitted since) reads the same
    assert current_status({"status": "stopped", "ended": {"submission_id": "s-1"}}, ["s-1", "s-2"]) == "submitted"
    assert current_status({"status": "stopped", "ended": {"submission_id": "s-2"}}, ["s-1", "s-2"]) == "stopped"
    assert current_status({"status": "succeeded"}, ["s-1"]) == "succeeded"  # the trainer wrote it: kept
    assert current_status({}, []) == "created"


def test_runs_list_shows_a_stale_end_as_not_known(tmp_path: Path) -> None:
    """The ledger imports the newest submission's status too (not the record's raw ``stopped``)."""
    run_id = "status-stale-end"
    paths = run_paths(run_id)
    update_provenance(
        paths.root, lambda _: {"run_id": run_id, "status": "stopped", "ended": {"submission_id": f"hprl-{run_id}-1", "status": "stopped"}}
    )
    from hyperpod_rl.runs import write_json

    write_json(paths.submissions, [f"hprl-{run_id}-1", f"hprl-{run_id}-2"])  # written before add_submission cleared the status
    out = _list(tmp_path, "--address", "http://127.0.0.1:9")
    assert "unknown (cluster not reachable)" in _row(out, run_id) and " stopped " not in _row(out, run_id)


@pytest.mark.ray
@pytest.mark.job
def test_a_failed_resubmission_reads_failed_in_runs_list_and_job_status(local_cluster, tmp_path: Path) -> None:
    run_id = "status-failed-resubmit"
    _running_run(run_id)
    client = local_cluster.job_client()
    first = _submit_sleeper(client, run_id)
    stop = runner.invoke(app, ["job", "stop", run_id, "--address", local_cluster.dashboard_url])
    assert stop.exit_code == 0 and "recorded stopped" in stop.output, stop.output
    paths = run_paths(run_id)
    second = f"hprl-{run_id}-2"
    add_submission(paths, second)  # as submit_run records a resubmission
    client.submit_job(entrypoint="exit 3", submission_id=second, metadata={RUN_ID_METADATA: run_id})  # fails before any trainer
    for _ in range(240):  # a hang guard, not a timing target
        if str(client.get_job_status(second).value) == "FAILED":
            break
        time.sleep(0.5)
    status = runner.invoke(app, ["job", "status", run_id, "--address", local_cluster.dashboard_url], env={"COLUMNS": "300"})
    assert status.exit_code == 1 and "FAILED" in status.output and "run recorded failed" in status.output, status.output
    assert " failed " in _row(_list(tmp_path, "--address", local_cluster.dashboard_url), run_id)
    record = read_provenance(paths.root)
    assert record["status"] == "failed" and record["ended"]["submission_id"] == second and first != second


@pytest.mark.ray
@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_job_status_that_cannot_record_the_end_says_so_and_leaves_nothing(local_cluster, tmp_path: Path, fault: str) -> None:
    """Issue 42 item 2: ``job status`` of an ended job whose run directory is full (a tmpfs with
    no room: the kernel's ENOSPC) or read-only: one ``error:`` line naming the manifest and the
    fix, no temporary file, the record unchanged; once the storage is back, the end is recorded."""
    run_id = f"status-storage-{fault}"
    root = _running_run(run_id)
    client = local_cluster.job_client()
    sid = f"hprl-{run_id}-1"
    add_submission(run_paths(run_id), sid)
    client.submit_job(entrypoint="exit 3", submission_id=sid, metadata={RUN_ID_METADATA: run_id})  # fails before any trainer
    assert wait_terminal(client, sid, 240) == "FAILED"
    before = (root / "manifest.json").read_bytes()
    argv = [sys.executable, "-m", "hyperpod_rl.cli", "job", "status", run_id, "--address", local_cluster.dashboard_url]
    env = {**os.environ, "COLUMNS": "300"}
    after = tmp_path / "after"
    if fault == "full":
        proc = on_a_full_disk(root, argv, free=0, copy_to=after, env=env)
    else:
        proc = subprocess.run(read_only(root, argv), capture_output=True, text=True, env=env, timeout=300, check=False)
        after = root
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and proc.stderr.count("error:") == 1, proc.stderr[-3000:]
    assert f"error: cannot write {root / 'manifest.json'}: " in proc.stderr, proc.stderr
    assert (
        "no space left on that file system: free space" if fault == "full" else "read-only: mount the storage read-write"
    ) in proc.stderr
    assert sorted(p.name for p in after.iterdir() if ".tmp-" in p.name) == []
    assert (after / "manifest.json").read_bytes() == before
    status = runner.invoke(app, ["job", "status", run_id, "--address", local_cluster.dashboard_url], env={"COLUMNS": "300"})
    assert status.exit_code == 1 and "run recorded failed" in status.output, status.output  # nothing lost


def _ended_run(run_id: str, status: str) -> str:
    """A run directory recording job 1 and, for a final ``status``, its end (as the trainer or ``job stop`` writes it)."""
    paths = run_paths(run_id)
    sid = f"hprl-{run_id}-1"
    add_submission(paths, sid)
    update_provenance(paths.root, lambda _: {"run_id": run_id, "status": "running"})
    if status != "running":
        record_final_status(paths, status, submission_id=sid, source="the trainer")
    return sid


@pytest.mark.ray
def test_a_cluster_restart_leaves_the_recorded_end_not_lost(local_cluster, tmp_path: Path) -> None:
    """Field report: after a cluster restart ``job status`` said LOST (exit 1) for a run its run
    directory records as succeeded. The cluster here has never seen these jobs, as after a restart."""
    from hyperpod_rl.jobs import overview, run_status

    sid = _ended_run("restart-succeeded", "succeeded")
    _ended_run("restart-failed", "failed")
    _ended_run("restart-running", "running")  # a trainer killed with the cluster: nothing recorded its end
    address = ["--address", local_cluster.dashboard_url]
    ok = runner.invoke(app, ["job", "status", "restart-succeeded", *address], env={"COLUMNS": "300"})
    assert ok.exit_code == 0, ok.output
    assert f"restart-succeeded ({sid}): SUCCEEDED the run directory records its end (the cluster no longer knows job {sid})" in ok.output
    failed = runner.invoke(app, ["job", "status", "restart-failed", *address], env={"COLUMNS": "300"})
    assert failed.exit_code == 1 and "FAILED" in failed.output, failed.output
    lost = runner.invoke(app, ["job", "status", "restart-running", *address], env={"COLUMNS": "300"})
    assert lost.exit_code == 1 and "LOST" in lost.output and "run recorded running" in lost.output, lost.output
    # one status everywhere: runs list, the notebook's runs table (overview) and job status agree
    listed = _list(tmp_path, *address)
    assert " succeeded " in _row(listed, "restart-succeeded") and " failed " in _row(listed, "restart-failed")
    assert " lost " in _row(listed, "restart-running"), _row(listed, "restart-running")
    rows = {r["run_id"]: r["status"] for r in overview(local_cluster.job_client())}
    for run_id in ("restart-succeeded", "restart-failed", "restart-running"):
        assert rows[run_id] == run_status(local_cluster.job_client(), run_id).status


def test_with_no_cluster_up_job_status_reads_the_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Field report: with no cluster up ``job status`` failed instead of reading the run directory."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))  # no local cluster recorded here
    sid = _ended_run("nocluster-succeeded", "succeeded")
    _ended_run("nocluster-stopped", "stopped")
    _ended_run("nocluster-running", "running")
    ok = runner.invoke(app, ["job", "status", "nocluster-succeeded"], env={"COLUMNS": "300"})
    assert ok.exit_code == 0, ok.output
    assert f"({sid}): SUCCEEDED the run directory records its end (no cluster answers)" in ok.output
    stopped = runner.invoke(app, ["job", "status", "nocluster-stopped"], env={"COLUMNS": "300"})
    assert stopped.exit_code == 1 and "STOPPED" in stopped.output, stopped.output
    unknown = runner.invoke(app, ["job", "status", "nocluster-running", "--address", "http://127.0.0.1:9"], env={"COLUMNS": "300"})
    assert unknown.exit_code == 2 and "UNKNOWN" in unknown.output and "start the cluster and ask again" in unknown.output, unknown.output
    missing = runner.invoke(app, ["job", "status", "no-such-run"], env={"COLUMNS": "300"})
    assert missing.exit_code == 2 and "error: unknown run id 'no-such-run'" in missing.output, (
        missing.output
    )  # tests/cli/test_unknown_run.py
    # a submission id where the run id belongs (the quickstart prints both): the error names the run id to pass
    sub = runner.invoke(app, ["job", "status", f"hprl-{'nocluster-succeeded'}-3"], env={"COLUMNS": "300"})
    said = " ".join(sub.output.split())
    assert sub.exit_code == 2 and "looks like a submission id (job 3 of run 'nocluster-succeeded')" in said, said
    assert "take the run id, e.g. 'nocluster-succeeded'" in said and "submit it first" not in said, said
    from hyperpod_rl.jobs import overview

    assert {r["run_id"]: r["status"] for r in overview(None)} == {
        "nocluster-succeeded": "SUCCEEDED",
        "nocluster-stopped": "STOPPED",
        "nocluster-running": "UNKNOWN",
    }


@pytest.mark.ray
@pytest.mark.job
def test_runs_list_keeps_one_runs_storage_fault_with_that_run(local_cluster, tmp_path: Path) -> None:
    """New-user report: with one run's directory read-only, ``runs list`` showed every active run
    as 'unknown (cluster not reachable)'. The run whose end cannot be recorded gets one warning
    line naming its manifest and the fix, and shows Ray's status; the other run shows its own."""
    broken, fine = "status-list-read-only", "status-list-fine"
    root = _running_run(broken)
    _running_run(fine)
    client = local_cluster.job_client()
    sid = f"hprl-{broken}-1"
    add_submission(run_paths(broken), sid)
    client.submit_job(entrypoint="exit 3", submission_id=sid, metadata={RUN_ID_METADATA: broken})
    assert wait_terminal(client, sid, 240) == "FAILED"
    running = _submit_sleeper(client, fine)
    try:
        for _ in range(240):  # a hang guard, not a timing target
            if str(client.get_job_status(running).value) == "RUNNING":
                break
            time.sleep(0.5)
        before = (root / "manifest.json").read_bytes()
        argv = [sys.executable, "-m", "hyperpod_rl.cli", "runs", "list", "--ledger", str(tmp_path / "ledger.sqlite")]
        argv += ["--address", local_cluster.dashboard_url]
        proc = subprocess.run(
            read_only(root, argv), capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"}, timeout=300, check=False
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr and "error:" not in proc.stderr, proc.stderr[-3000:]
        warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
        assert len(warnings) == 1, proc.stderr[-3000:]
        assert f"run {broken}: its end was not recorded: cannot write {root / 'manifest.json'}: " in warnings[0], warnings
        assert "read-only: mount the storage read-write" in warnings[0], warnings
        assert "not reachable" not in proc.stdout, proc.stdout
        assert " failed " in _row(proc.stdout, broken) and " running " in _row(proc.stdout, fine), proc.stdout
        assert (root / "manifest.json").read_bytes() == before
        assert sorted(p.name for p in root.iterdir() if ".tmp-" in p.name) == []
    finally:
        client.stop_job(running)
    assert " failed " in _row(_list(tmp_path, "--address", local_cluster.dashboard_url), broken)  # the storage back: recorded
    assert read_provenance(root)["status"] == "failed"
