"""A finished run's steps without its cluster: ``job logs`` and ``job list`` read the run directory.

New-user report: ``hyperpod-rl job logs RUN`` and ``job list`` needed a running cluster even for a
finished run whose records (``metrics.jsonl``) were on disk. Now, when the cluster is not running
(or no longer knows the job), ``job logs`` prints the finished run's steps from its
``metrics.jsonl`` in the lines the follower prints (:func:`hyperpod_rl.jobs.recorded_steps`),
after a note on standard error saying it read them from disk and why; ``job list`` lists the jobs
the run directories record.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.jobs import JobUpdate, RunProgress
from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.runs import add_submission, record_final_status, run_paths, update_provenance
from tests.fakes import FakeHTTPServer, Response

runner = CliRunner()
STEPS = 4


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir with no local cluster recorded."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    return tmp_path / "home"


def _records(run_id: str, steps: int = STEPS) -> list[MetricRecord]:
    return [
        MetricRecord(
            run_id=run_id,
            step=s,
            total_steps=STEPS,
            time_s=1000.0 + 3 * s,
            values={"reward/avg_raw_reward": 0.1 * s, "policy/policy_loss": -0.01 * s},
        )
        for s in range(1, steps + 1)
    ]


def _run(run_id: str, status: str, steps: int = STEPS) -> list[MetricRecord]:
    """A run directory as the trainer leaves it: job 1, ``steps`` steps in metrics.jsonl, and (for a final ``status``) its end."""
    paths = run_paths(run_id)
    sid = f"hprl-{run_id}-1"
    add_submission(paths, sid)
    update_provenance(paths.root, lambda _: {"run_id": run_id, "status": "running", "config": {"trainer": {"steps": STEPS}}})
    records = _records(run_id, steps)
    paths.metrics.write_text("".join(f"{r.model_dump_json()}\n" for r in records))
    if status != "running":
        record_final_status(paths, status, submission_id=sid, source="the trainer")
    return records


def _follower_lines(records: list[MetricRecord]) -> list[str]:
    """The line the follower prints for each step (``RunProgress.line``)."""
    state, lines = RunProgress(STEPS), []
    for record in records:
        state.add(JobUpdate(status="RUNNING", records=[record]))
        lines.append(state.line())
    return lines


def _said(text: str) -> str:
    return " ".join(text.split())


def test_job_logs_reads_a_finished_runs_steps_from_disk_with_no_cluster(home: Path) -> None:
    records = _run("disk-done", "succeeded")
    result = runner.invoke(app, ["job", "logs", "disk-done"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == _follower_lines(records), result.stdout
    assert result.stdout.splitlines()[-1].startswith(f"grpo {STEPS}/{STEPS} reward +0.400 loss -0.0400 · 3.0 s/step")
    note = _said(result.stderr)
    metrics = run_paths("disk-done").metrics
    assert note.startswith(f"note: run disk-done ended succeeded; its steps are read from disk ({metrics})"), note
    assert "because the cluster is not running (no local Ray cluster is running" in note, note
    raw = runner.invoke(app, ["job", "logs", "disk-done", "--raw"])
    assert raw.exit_code == 0 and raw.stdout.splitlines() == [r.to_line() for r in records], raw.stdout
    followed = runner.invoke(app, ["job", "logs", "--follow", "disk-done"])
    assert followed.exit_code == 0 and followed.stdout.splitlines() == _follower_lines(records), followed.output


def test_follow_of_a_run_that_failed_exits_1_as_a_followed_failure_does() -> None:
    records = _run("disk-failed", "failed", steps=2)
    followed = runner.invoke(app, ["job", "logs", "--follow", "disk-failed"])
    assert followed.exit_code == 1 and followed.stdout.splitlines() == _follower_lines(records), followed.output
    assert "ended failed" in followed.stderr
    assert runner.invoke(app, ["job", "logs", "disk-failed"]).exit_code == 0  # printing a log is not a failure


def test_a_run_not_finished_still_needs_its_cluster() -> None:
    _run("disk-running", "running")
    result = runner.invoke(app, ["job", "logs", "disk-running"])
    said = _said(result.output)
    assert result.exit_code == 2 and said.startswith("error: no local Ray cluster is running"), said
    assert "the run directory cannot stand in for its log: run 'disk-running' has not finished" in said and "records it running" in said, (
        said
    )


def test_a_cluster_that_no_longer_knows_the_job_reads_the_disk_too() -> None:
    records = _run("disk-restarted", "stopped")
    with FakeHTTPServer() as server:
        server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.56.0", "ray_commit": "x"}))
        server.route("GET", "/api/jobs/", Response(200, []))  # a restarted cluster: it knows no job
        result = runner.invoke(app, ["job", "logs", "disk-restarted", "--address", server.url])
    assert result.exit_code == 0 and result.stdout.splitlines() == _follower_lines(records), result.output
    assert "because the cluster no longer knows job hprl-disk-restarted-1 (restarted, or another cluster)" in _said(result.stderr)


def test_job_list_with_no_cluster_lists_the_recorded_jobs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.cli._common import console

    monkeypatch.setattr(console, "width", 200)
    _run("listed-done", "succeeded")
    _run("listed-running", "running", steps=1)
    result = runner.invoke(app, ["job", "list"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line.split() for line in result.stdout.splitlines() if line.startswith("│ listed-")}
    assert rows["listed-done"][3:8:2] == ["hprl-listed-done-1", "SUCCEEDED", f"{STEPS}/{STEPS}"], rows
    assert rows["listed-running"][3:8:2] == ["hprl-listed-running-1", "UNKNOWN", f"1/{STEPS}"], rows
    note = _said(result.stderr)
    assert (
        note.startswith("note: the cluster is not running") and f"the run directories under {home / 'storage' / 'runs'} record" in note
    ), note
