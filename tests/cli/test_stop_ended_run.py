"""``job stop`` of a run that has already ended says so, with its final state, cluster or none.

New-user report: ``hyperpod-rl job stop <finished run>`` with no cluster running answered "no local
Ray cluster is running: start one ..." (exit 2), as if the run needed stopping. Now a run whose
run directory records its end is said to have ended, with that end, and nothing is stopped (exit
0), as with a cluster; with a cluster that knows the job, the answer names Ray's status and the
recorded end; a cluster that no longer knows the job (restarted) reads the recorded end too,
where it said "is not on this cluster: nothing to stop here" (exit 2). A run not ended still
needs its cluster, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.runs import add_submission, record_final_status, run_paths, update_provenance
from tests.fakes import FakeHTTPServer, Response

runner = CliRunner()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir with no local cluster recorded."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    return tmp_path / "home"


def _run(run_id: str, status: str) -> Path:
    """A run directory with job 1, recorded ``running`` or with its end ``status`` (as the trainer writes it)."""
    paths = run_paths(run_id)
    add_submission(paths, f"hprl-{run_id}-1")
    update_provenance(paths.root, lambda _: {"run_id": run_id, "status": "running"})
    if status != "running":
        record_final_status(paths, status, submission_id=f"hprl-{run_id}-1", source="the trainer")
    return paths.provenance


@pytest.fixture
def cluster() -> Iterator[FakeHTTPServer]:
    """A dashboard that knows each ``done-*`` run's job 1 with the status its name ends in."""
    with FakeHTTPServer() as server:
        server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.56.0", "ray_commit": "x"}))
        jobs = []
        for run_id, ray in (("done-succeeded", "SUCCEEDED"), ("done-failed", "FAILED"), ("done-stopped", "STOPPED")):
            sid = f"hprl-{run_id}-1"
            info = {
                "type": "SUBMISSION",
                "submission_id": sid,
                "status": ray,
                "entrypoint": "x",
                "metadata": {"hyperpod_rl_run_id": run_id},
            }
            jobs.append(info)
            server.route("GET", f"/api/jobs/{sid}", Response(200, info))
        server.route("GET", "/api/jobs/", Response(200, jobs))
        yield server


def _said(result) -> str:  # noqa: ANN001 - click's Result
    return " ".join(result.output.split())


@pytest.mark.parametrize("status", ["succeeded", "failed", "stopped"])
def test_with_no_cluster_a_finished_run_is_said_to_have_ended(status: str) -> None:
    record = _run(f"ended-{status}", status)
    before = record.read_bytes()
    result = runner.invoke(app, ["job", "stop", f"ended-{status}"])
    said = _said(result)
    assert result.exit_code == 0, said
    assert said == (
        f"run ended-{status} has already ended: its run directory records it {status} (job hprl-ended-{status}-1); nothing to stop"
    ), said
    assert "no local Ray cluster" not in said and "error" not in said, said
    assert record.read_bytes() == before  # nothing recorded


def test_with_no_cluster_a_run_not_ended_still_needs_its_cluster() -> None:
    _run("still-running", "running")
    result = runner.invoke(app, ["job", "stop", "still-running"])
    assert result.exit_code == 2 and _said(result).startswith("error: no local Ray cluster is running"), _said(result)


@pytest.mark.parametrize(("run_id", "ray", "recorded"), [("done-succeeded", "SUCCEEDED", "succeeded"), ("done-failed", "FAILED", "failed")])
def test_with_a_cluster_a_finished_run_names_rays_status_and_the_recorded_end(
    run_id: str, ray: str, recorded: str, cluster: FakeHTTPServer
) -> None:
    _run(run_id, recorded)
    result = runner.invoke(app, ["job", "stop", run_id, "--address", cluster.url])
    said = _said(result)
    assert result.exit_code == 0, said
    assert said == (
        f"run {run_id} has already ended: its job hprl-{run_id}-1 ended {ray} and its run directory records it {recorded}; nothing to stop"
    ), said
    assert not [r for r in cluster.requests if r.method == "POST"], "nothing is asked to stop"


def test_a_job_that_ended_unrecorded_is_recorded_and_said(cluster: FakeHTTPServer) -> None:
    """Ray says STOPPED (a dashboard stop) while the run directory still says running: job stop records it."""
    _run("done-stopped", "running")
    result = runner.invoke(app, ["job", "stop", "done-stopped", "--address", cluster.url])
    assert result.exit_code == 0, _said(result)
    assert "its job hprl-done-stopped-1 ended STOPPED and its run directory records it stopped; nothing to stop" in _said(result)


def test_a_cluster_that_no_longer_knows_the_job_reads_the_recorded_end(cluster: FakeHTTPServer) -> None:
    _run("restarted-run", "succeeded")
    result = runner.invoke(app, ["job", "stop", "restarted-run", "--address", cluster.url])
    said = _said(result)
    assert result.exit_code == 0, said
    assert said == (
        "run restarted-run has already ended: its run directory records it succeeded "
        "(job hprl-restarted-run-1, which this cluster no longer knows); nothing to stop"
    ), said
