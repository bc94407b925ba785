"""Feedback outside a terminal: a piped log and a notebook see progress, ETA and trainer notices (issue 32 item 6).

Field report: a piped log got one line per 10 % and no ETA; a corrupt-checkpoint fallback was
reported only in ``job logs``; after a reattach the ETA read 1 s with 3.5 minutes left;
``hp.quickstart.run()`` in a notebook printed nothing for minutes.

``data/recorded_follow.log`` is a real job log, recorded (``tests/cli/data/README.md``): the
reference trainer trained a tiny run to step 9, was killed, its newest checkpoint was corrupted,
and the resumed job (this log) fell back to step 6 and trained steps 7 to 12. A dashboard replays
it to Ray's own ``JobSubmissionClient``: the follower reattaches after step 9, so its first poll
brings the notices and steps 7 to 9 at once, then one step per poll.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hyperpod_rl.metrics.schema import parse_metric_line
from tests.fakes import FakeHTTPServer, Request, Response

RECORDED = Path(__file__).parent / "data" / "recorded_follow.log"
SID = "hprl-recorded-follow-2"
REATTACH_STEP = 9  # the follower attaches once this step's line is in the log


class ReplayDashboard:
    """Ray's job API over a recorded log: each ``/logs`` read reveals one more metric line."""

    def __init__(self, server: FakeHTTPServer, log: str, *, first_step: int) -> None:
        self.lines = log.splitlines()
        metric_at = [i for i, line in enumerate(self.lines) if parse_metric_line(line)]
        steps = [parse_metric_line(self.lines[i]).step for i in metric_at]  # type: ignore[union-attr]
        first = metric_at[steps.index(first_step)] + 1
        self.cuts = [first, *(i + 1 for i in metric_at if i + 1 > first), len(self.lines)]
        self.reads = 0
        server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.56.0", "ray_commit": "x"}))
        server.route("GET", f"/api/jobs/{SID}", self.info)
        server.route("GET", f"/api/jobs/{SID}/logs", self.logs)

    def _shown(self) -> int:
        return self.cuts[min(self.reads, len(self.cuts) - 1)]

    def info(self, _req: Request, _m: Any) -> Response:
        done = self.reads >= len(self.cuts)
        return Response(200, {"type": "SUBMISSION", "submission_id": SID, "status": "SUCCEEDED" if done else "RUNNING", "entrypoint": "x"})

    def logs(self, _req: Request, _m: Any) -> Response:
        text = "\n".join(self.lines[: self._shown()]) + "\n"
        self.reads += 1
        return Response(200, {"logs": text})


@pytest.fixture
def replay() -> Iterator[Any]:
    from ray.job_submission import JobSubmissionClient

    with FakeHTTPServer() as server:
        ReplayDashboard(server, RECORDED.read_text(), first_step=REATTACH_STEP)
        yield JobSubmissionClient(server.url)


def _steps() -> dict[int, float]:
    """step -> its recorded finish time (``time_s``)."""
    return {r.step: r.time_s for r in map(parse_metric_line, RECORDED.read_text().splitlines()) if r is not None}


def test_the_recording_is_a_resume_after_a_corrupt_checkpoint() -> None:
    text, steps = RECORDED.read_text(), _steps()
    assert "is unusable" in text and "falling back to an earlier one" in text and "resumed from step_000006" in text
    assert sorted(steps) == list(range(7, 13))


def test_reattached_follow_prints_notices_and_a_true_eta(replay: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.cli import _common
    from hyperpod_rl.jobs import format_duration

    monkeypatch.setattr(_common, "_warn_if_never_valid", lambda *_a: None)  # no run directory here
    with _common.console.capture() as captured:
        status = _common.follow_with_progress(replay, SID, 12)
    out = captured.get()
    assert status == "SUCCEEDED"
    assert re.search(r"note: checkpoint step_000009 is unusable \(.*\); falling back to an earlier one", out), out
    assert "note: resumed from step_000006 (step 6, epoch 0)" in out
    lines = [line for line in out.splitlines() if line.startswith("train ")]
    assert lines and all(" s/step" in line and " · ETA " in line for line in lines[:-1]), out
    first = lines[0]  # the line at the reattach: three steps (7-9) seen at once
    steps = _steps()
    per_step = (steps[9] - steps[7]) / 2
    assert first.startswith("train 9/12 ") and f"ETA {format_duration(per_step * 3)}" in first, (first, per_step)
    left = steps[12] - steps[9]  # what it really took
    assert 0.5 * left <= per_step * 3 <= 2 * left, (per_step, left)  # not "1 s"


def test_a_piped_log_gets_a_line_at_least_every_period(replay: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.cli import _common

    monkeypatch.setattr(_common, "_warn_if_never_valid", lambda *_a: None)
    monkeypatch.setattr(_common, "PLAIN_LINE_EVERY_S", 0.0)  # every poll is "due"
    with _common.console.capture() as captured:
        _common.follow_with_progress(replay, SID, 120)  # 12 of 120 steps: no 10 % mark passed after the first
    shown = [int(m.group(1)) for m in re.finditer(r"^train (\d+)/120 ", captured.get(), re.M)]
    assert shown == [9, 10, 11, 12], captured.get()


def test_run_progress_eta_from_step_times_not_arrival() -> None:
    from hyperpod_rl.jobs import JobUpdate, RunProgress

    records = [r for r in map(parse_metric_line, RECORDED.read_text().splitlines()) if r is not None]
    state = RunProgress(12)
    assert state.eta_s is None and state.line().startswith("train 0/12 reward -")
    state.add(JobUpdate(status="RUNNING", records=records[:3], lines=[]))  # steps 7-9 at once (a reattach)
    assert state.step == 9 and state.eta_s == pytest.approx((records[2].time_s - records[0].time_s) / 2 * 3)
    state.add(JobUpdate(status="RUNNING", records=records[:1], lines=[]))  # step 7 again (a later resume): times start over
    assert state.eta_s is None and state.step == 7


def test_quickstart_follows_with_tqdm_by_default(replay: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from hyperpod_rl.quickstart import follow_with_tqdm

    assert follow_with_tqdm(replay, SID, 12) == "SUCCEEDED"
    captured = capsys.readouterr()  # the bar on standard error (a widget in a notebook), the notes above it
    err = captured.err
    notes = captured.out + captured.err
    assert "note: checkpoint step_000009 is unusable" in notes and "note: resumed from step_000006" in notes
    assert re.search(r"12/12 \[.*reward [+-]\d\.\d{3}, loss [+-]\d\.\d{4}", err), err


def test_quickstart_prints_each_phase_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    from hyperpod_rl.quickstart import PHASES, Phase, print_phase

    print_phase(Phase("dataset", done=False))
    print_phase(Phase("dataset", done=True, message="mazes written", seconds=2.4))
    out = capsys.readouterr().out.splitlines()
    assert out == [f"2/{len(PHASES)} {PHASES['dataset']} ...", f"✓ 2/{len(PHASES)} mazes written (2 s)"]
