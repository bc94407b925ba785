"""Submitting a stopped (or failed) run again says so first, and where the new job starts.

New-user report: ``hyperpod-rl quickstart --resume <run>`` after an explicit ``hyperpod-rl job
stop <run>`` started a new job without a line saying so. What it does: no job of the run is
alive and it has no adapter, so it submits the run again, and the trainer resumes from the
run's newest checkpoint whose checksums match (step 0 when it kept none). Now a note says that
the run's job was stopped by the user and that a new job starts from that checkpoint, before
the job is submitted; ``hyperpod-rl job submit`` of such a run says the same. No cluster: the
job calls are faked.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from hyperpod_rl import jobs
from hyperpod_rl import quickstart as qs
from hyperpod_rl.runs import add_submission, record_final_status, run_paths, update_provenance
from hyperpod_rl.runs.files import write_checksums

RUN = "qs-stopped"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    return tmp_path / "home"


def _stopped_run(
    run_id: str = RUN, *, checkpoints: tuple[int, ...] = (2, 4), source: str = "hyperpod-rl job stop (Ray job status STOPPED)"
) -> Any:
    """A run whose first job trained ``checkpoints`` of its 8 steps and was then stopped (``source``)."""
    paths = run_paths(run_id)
    add_submission(paths, f"hprl-{run_id}-1")
    config = {"run_id": run_id, "trainer": {"steps": 8}}
    update_provenance(paths.root, lambda _: {"run_id": run_id, "status": "running", "config": config})
    for step in checkpoints:
        ckpt = paths.checkpoints / f"step_{step:06d}"
        ckpt.mkdir(parents=True)
        (ckpt / "trainer_state.json").write_text(f'{{"step": {step}}}')
        write_checksums(ckpt)
    record_final_status(paths, "stopped", submission_id=f"hprl-{run_id}-1", source=source)
    return paths


def test_the_resume_says_the_run_was_stopped_and_where_the_new_job_starts(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    paths = _stopped_run()
    events: list[Any] = []
    monkeypatch.setattr(jobs, "run_jobs", lambda *_a, **_k: [])  # the stopped job is not alive

    def submit(client: Any, config: Any, run_dir: Path) -> jobs.RunHandle:
        events.append("submitted")
        return jobs.RunHandle(config.run_id, f"hprl-{config.run_id}-2", run_dir)

    monkeypatch.setattr(jobs, "submit_run", submit)
    flow = qs._Flow(RUN, list(qs.PHASES), events.append, "maze", resume=True)
    config = SimpleNamespace(run_id=RUN, trainer=SimpleNamespace(steps=8))
    assert qs._train_job(flow, object(), lambda *_a: "SUCCEEDED", config, paths, "train") == f"hprl-{RUN}-2"  # type: ignore[arg-type]
    note = events[0]
    assert isinstance(note, qs.Phase) and note.note and not note.done, events
    assert events[1] == "submitted" and events[2].note == "" and not events[2].done, events  # said before it is submitted
    assert note.note.startswith(f"run {RUN}'s job hprl-{RUN}-1 was stopped by the user (hyperpod-rl job stop at "), note.note
    assert note.note.endswith(
        "UTC); submitting it again starts a new job, which resumes from the run's newest checkpoint, step_000004 (step 4 of 8)"
    ), note.note
    # each front-end shows it as a note line: the library's default and the CLI's
    qs.print_phase(note)
    from hyperpod_rl.cli.quickstart import _Phases

    _Phases()(note)
    out = " ".join(capsys.readouterr().out.split())
    assert out.count(f"note: run {RUN}'s job hprl-{RUN}-1 was stopped by the user") == 2, out


def test_no_note_when_the_job_keeps_running_or_nothing_ended() -> None:
    """A run that never ended (a Ctrl-C'd quickstart whose job kept running) or never ran gets no note."""
    paths = run_paths("never-stopped")
    add_submission(paths, "hprl-never-stopped-1")
    update_provenance(paths.root, lambda _: {"run_id": "never-stopped", "status": "running"})
    assert jobs.resubmission_note(paths) is None
    assert jobs.resubmission_note(run_paths("not-there")) is None


def test_other_ends_and_a_run_without_checkpoints() -> None:
    dashboard = _stopped_run("dash-stopped", checkpoints=(), source="Ray job status STOPPED (the trainer did not record its end)")
    said = jobs.resubmission_note(dashboard)
    assert said is not None and "stopped by the user" not in said and "which trains from step 0 of 8: the run kept no checkpoint" in said
    failed = run_paths("failed-run")
    add_submission(failed, "hprl-failed-run-1")
    update_provenance(failed.root, lambda _: {"run_id": "failed-run", "status": "failed", "config": {"trainer": {"steps": 3}}})
    said = jobs.resubmission_note(failed)
    assert said is not None and said.startswith("run failed-run's job hprl-failed-run-1 failed (hyperpod-rl job logs failed-run"), said


def test_job_submit_of_a_stopped_run_says_it_before_submitting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hyperpod_rl import cli

    paths = _stopped_run()
    config = {"run_id": RUN, "data": {"train_path": "/d/train.parquet", "heldout_path": "/d/heldout.parquet"}, "trainer": {"steps": 8}}
    file = tmp_path / "run.yaml"
    file.write_text(yaml.safe_dump(config))
    said: list[str] = []

    def submit(client: Any, config: Any, **_kw: Any) -> jobs.RunHandle:
        said.append("submitted")
        return jobs.RunHandle(config.run_id, f"hprl-{config.run_id}-2", paths.root)

    monkeypatch.setattr(cli, "job_client", lambda _address: object())
    monkeypatch.setattr(jobs, "submit_run", submit)
    result = CliRunner().invoke(cli.app, ["job", "submit", str(file)], env={"COLUMNS": "300"})
    assert result.exit_code == 0 and said == ["submitted"], result.output
    assert f"note: run {RUN}'s job hprl-{RUN}-1 was stopped by the user" in result.stderr, result.output
    assert "resumes from the run's newest checkpoint, step_000004 (step 4 of 8)" in result.stderr, result.output
    assert f"submitted hprl-{RUN}-2" in result.stdout, result.output
