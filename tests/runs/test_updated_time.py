"""A finished run's updated time changes only when the run changes.

New-user report: in ``hyperpod-rl runs list``, a finished run's ``updated`` time changed when
another run resumed. Why: ``hyperpod-rl quickstart --resume X`` records the base evaluation in
X's SFT warm start's run directory again (``X-sft``, finished), and every provenance write
rewrote ``manifest.json`` with a new ``updated_at`` even when nothing changed; the manifest's
modification time is the run's updated time in the ledger (``Ledger.sync_storage``) and in
``hyperpod_rl.runs.list_runs``. ``job stop`` of a run that had already ended rewrote it the same
way. Now a change that changes nothing writes nothing (``update_provenance``), nor does an
evaluation recorded again (``record_eval``); a real change still updates both.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hyperpod_rl.ledger import Ledger
from hyperpod_rl.runs import (
    add_submission,
    list_runs,
    read_provenance,
    record_eval,
    record_final_status,
    run_paths,
    runs_root,
    update_provenance,
)

RUN = "quickstart-x-sft"
BASE = {"label": "base", "num_mazes": 4, "metrics": {"solve_rate": 0.25}, "ci": {"solve_rate": [0.0, 0.75]}}
LONG_AGO = 1_700_000_000.0


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A finished run (an SFT warm start) whose files were last written long ago."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    paths = run_paths(RUN)
    add_submission(paths, f"hprl-{RUN}-1")
    update_provenance(paths.root, lambda _: {"run_id": RUN, "status": "running", "config": {"run_id": RUN}})
    record_eval(paths, "base", BASE)
    record_final_status(paths, "succeeded", submission_id=f"hprl-{RUN}-1", source="the trainer")
    for path in [*paths.root.rglob("*"), paths.root]:
        os.utime(path, (LONG_AGO, LONG_AGO))
    return paths


def _updated(paths) -> tuple[float, float, str]:  # noqa: ANN001
    """The run's updated time as ``runs list`` reads it (the ledger's, after a sync), the run
    store's, and the manifest's ``updated_at``."""
    with Ledger() as led:
        led.sync_storage(runs_root())
        row = led.get_run(RUN)
    assert row is not None
    summary = next(r for r in list_runs() if r.run_id == RUN)
    return row.updated_at, summary.updated_s, read_provenance(paths.root)["updated_at"]  # type: ignore[index]


def test_recording_what_a_finished_run_holds_already_changes_nothing(finished) -> None:  # noqa: ANN001
    before = _updated(finished)
    assert before[:2] == (LONG_AGO, LONG_AGO), before
    manifest = finished.provenance.read_bytes()
    record_eval(finished, "base", dict(BASE))  # what a resumed quickstart does to its SFT run
    record_final_status(finished, "stopped", submission_id=f"hprl-{RUN}-1", source="hyperpod-rl job stop", only_over_running=True)
    update_provenance(finished.root, lambda current: current or {})  # any change that changes nothing
    assert finished.provenance.read_bytes() == manifest
    assert _updated(finished) == before


def test_a_real_change_still_updates_it(finished) -> None:  # noqa: ANN001
    before = _updated(finished)
    record_eval(finished, "base", {**BASE, "metrics": {"solve_rate": 0.5}})
    after = _updated(finished)
    assert after[0] > before[0] and after[1] > before[1], (before, after)
    assert read_provenance(finished.root)["eval"]["base"]["metrics"] == {"solve_rate": 0.5}  # type: ignore[index]


def test_a_change_made_in_place_is_written(finished) -> None:  # noqa: ANN001
    """``change`` gets a copy: changing the manifest it is given in place is still a change."""

    def add_resume(current: dict) -> dict:
        current.setdefault("resumes", []).append({"from_step": 2})
        return current

    update_provenance(finished.root, add_resume)
    assert read_provenance(finished.root)["resumes"] == [{"from_step": 2}]  # type: ignore[index]
