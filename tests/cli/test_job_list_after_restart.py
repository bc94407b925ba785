"""``hyperpod-rl job list`` after a cluster restart lists the old cluster's runs too, from disk.

New-user report: after the local cluster was restarted, ``job list`` listed only the new
cluster's jobs, though the runs submitted to the old one are in their run directories (``job
logs`` already answers from disk without a cluster). Now each run whose newest job the cluster
does not know is listed after the cluster's jobs, marked ``run dir``, with the end its run
directory records (``LOST``: none), after a note on standard error that says so. No cluster: a
fake dashboard answers as the restarted cluster does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.runs import add_submission, record_final_status, run_paths, update_provenance
from tests.fakes import FakeHTTPServer, Response


@pytest.fixture
def restarted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Three runs on disk: ``new-run`` (its job on the restarted cluster), ``old-done`` (the old
    cluster's, recorded succeeded) and ``old-cut`` (the old cluster's, no end recorded); the
    restarted cluster's dashboard knows only ``new-run``'s job."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_ADDRESS", raising=False)
    for run_id, status in (("old-done", "succeeded"), ("old-cut", "running"), ("new-run", "running")):
        paths = run_paths(run_id)
        add_submission(paths, f"hprl-{run_id}-1")
        update_provenance(paths.root, lambda _, r=run_id: {"run_id": r, "status": "running", "config": {"trainer": {"steps": 4}}})
        if status == "succeeded":
            record_final_status(paths, "succeeded", submission_id=f"hprl-{run_id}-1", source="the trainer")
    job = {
        "type": "SUBMISSION",
        "submission_id": "hprl-new-run-1",
        "status": "RUNNING",
        "entrypoint": "x",
        "start_time": 1_796_000_000_000,
        "metadata": {"hyperpod_rl_run_id": "new-run"},
    }
    with FakeHTTPServer() as server:
        server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.56.0", "ray_commit": "x"}))
        server.route("GET", "/api/jobs/", Response(200, [job]))
        yield server.url


def _rows(out: str) -> dict[str, list[str]]:
    return {
        cells[0]: cells[1:]
        for line in out.splitlines()
        if line.startswith("│")
        for cells in [[c.strip() for c in line.strip("│").split("│")]]
    }


def test_the_old_clusters_runs_are_listed_from_their_run_directories(restarted: str) -> None:
    result = CliRunner().invoke(app, ["job", "list", "--address", restarted], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    assert list(rows)[0] == "new-run" and set(list(rows)[1:]) == {"old-done", "old-cut"}, result.stdout  # the cluster's jobs first
    assert rows["new-run"][:3] == ["hprl-new-run-1", "RUNNING", "cluster"], rows
    assert rows["old-done"][:4] == ["hprl-old-done-1", "SUCCEEDED", "run dir", "-"], rows
    assert rows["old-cut"][:3] == ["hprl-old-cut-1", "LOST", "run dir"], rows
    said = " ".join(result.stderr.split())
    assert said.startswith("note: 2 run(s) below have a newest job this cluster does not know"), said
    assert "(marked 'run dir'), with the end each records (LOST: none)" in said, said


def test_no_mark_when_the_cluster_knows_every_run(restarted: str) -> None:
    import shutil

    for run_id in ("old-done", "old-cut"):
        shutil.rmtree(run_paths(run_id).root)
    result = CliRunner().invoke(app, ["job", "list", "--address", restarted], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "run dir" not in result.output and "note:" not in result.output, result.output
    assert list(_rows(result.stdout)) == ["new-run"], result.stdout
