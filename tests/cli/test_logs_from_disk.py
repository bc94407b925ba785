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
    assert note == (
        f"note: no local Ray cluster is running, so run disk-done's steps are read from its run directory ({metrics}); "
        "the run ended succeeded"
    ), note
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
    assert _said(result.stderr).startswith(
        "note: the cluster no longer knows its job hprl-disk-restarted-1 (it was restarted, or is another cluster), "
        "so run disk-restarted's steps are read from its run directory"
    ), _said(result.stderr)


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
    assert note == (
        f"note: no local Ray cluster is running, so these are the jobs the run directories under {home / 'storage' / 'runs'} record, "
        "with the end each records"
    ), note


@pytest.mark.parametrize(
    "args",
    [["job", "logs"], ["job", "logs", "--raw"], ["job", "logs", "--follow"], ["job", "logs", "--follow", "--raw"], ["job", "list"]],
    ids=" ".join,
)
@pytest.mark.parametrize("status", ["succeeded", "failed"])
def test_the_note_is_said_once_before_the_steps_in_plain_words(args: list[str], status: str) -> None:
    """New-user report: the note came with a Python hint in parentheses (``(or
    hp.start_local_cluster())``, inside another parenthesis), and was reported as printed both before
    and after the steps. Standard error and standard output together, in order: one note, first,
    without the notebook's words or the fix for starting a cluster (a new cluster does not have an
    ended job's log)."""
    _run(f"once-{status}", status)
    result = runner.invoke(app, [*args, *([f"once-{status}"] if args[1] == "logs" else [])])
    lines = result.output.splitlines()
    notes = [line for line in lines if "note:" in line]
    assert len(notes) == 1 and lines[0] == notes[0], result.output
    assert "hp." not in result.output and "(or " not in result.output and "local start" not in result.output, notes
    assert "no local Ray cluster is running, so" in notes[0], notes


def test_cli_words_leave_out_the_python_alternative_only() -> None:
    from hyperpod_rl.cli._common import cli_words

    said = "no local Ray cluster is running: start one with hyperpod-rl local start (or hp.start_local_cluster())"
    assert cli_words(said) == "no local Ray cluster is running: start one with hyperpod-rl local start"
    said = "Finish it: hyperpod-rl quickstart --resume r1 (in Python: hp.quickstart.resume('r1'))"
    assert cli_words(said) == "Finish it: hyperpod-rl quickstart --resume r1"
    assert cli_words(f"x ({said}) y") == "x (Finish it: hyperpod-rl quickstart --resume r1) y"
    kept = "run 'x' (job hprl-x-1) ended (see: hyperpod-rl job logs x)"
    assert cli_words(kept) == kept
