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

    def __init__(self, server: FakeHTTPServer, log: str, *, first_step: int, end: str = "SUCCEEDED", message: str = "") -> None:
        self.lines = log.splitlines()
        self.end, self.message = end, message
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
        status = self.end if done else "RUNNING"
        return Response(200, {"type": "SUBMISSION", "submission_id": SID, "status": status, "message": self.message, "entrypoint": "x"})

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
    lines = [line for line in out.splitlines() if line.startswith("grpo ")]
    assert lines and all(" s/step" in line and " · ETA " in line for line in lines[:-1]), out
    first = lines[0]  # the line at the reattach: three steps (7-9) seen at once
    steps = _steps()
    per_step = (steps[9] - steps[7]) / 2
    assert first.startswith("grpo 9/12 ") and f"ETA {format_duration(per_step * 3)}" in first, (first, per_step)
    left = steps[12] - steps[9]  # what it really took
    assert 0.5 * left <= per_step * 3 <= 2 * left, (per_step, left)  # not "1 s"


def test_a_piped_log_gets_a_line_at_least_every_period(replay: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.cli import _common

    monkeypatch.setattr(_common, "_warn_if_never_valid", lambda *_a: None)
    monkeypatch.setattr(_common, "PLAIN_LINE_EVERY_S", 0.0)  # every poll is "due"
    with _common.console.capture() as captured:
        _common.follow_with_progress(replay, SID, 120)  # 12 of 120 steps: no 10 % mark passed after the first
    shown = [int(m.group(1)) for m in re.finditer(r"^grpo (\d+)/120 ", captured.get(), re.M)]
    assert shown == [9, 10, 11, 12], captured.get()


@pytest.mark.parametrize(
    ("end", "message"), [("STOPPED", "Job was intentionally stopped."), ("FAILED", "Job entrypoint command failed with exit code 137")]
)
def test_a_job_that_did_not_succeed_ends_in_readable_lines(end: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reported: ``job logs -f`` of a stopped run printed the log's last 25 lines raw after the end, metric
    JSON (about 1 KB a line) included. A stopped job now ends with Ray's message alone; a failed one without
    an ``error:`` line shows its last lines with each metric line as the progress line it stands for."""
    from ray.job_submission import JobSubmissionClient

    from hyperpod_rl.cli import _common

    monkeypatch.setattr(_common, "_warn_if_never_valid", lambda *_a: None)
    with FakeHTTPServer() as server:
        ReplayDashboard(server, RECORDED.read_text(), first_step=REATTACH_STEP, end=end, message=message)
        with _common.console.capture() as captured:
            status = _common.follow_with_progress(JobSubmissionClient(server.url), SID, 12)
    out = captured.get()
    assert status == end
    assert "HPRL_METRIC" not in out and '"values"' not in out, out
    ended = out[out.index(f"job {SID} ended {end}: {message}") :]
    assert ended.rstrip().endswith("the whole log: hyperpod-rl job logs recorded-follow"), ended
    after = ended.splitlines()[1:-1]  # between the end line and the pointer to the whole log
    if end == "STOPPED":
        assert after == [], ended
    else:
        assert any(re.fullmatch(r"grpo 12/12 reward [+-]\d\.\d{3} loss .*", line) for line in after), ended
        assert after[-1].startswith("adapter written to "), ended  # the log's own last line, as it is


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
    assert out == [f"1/{len(PHASES)} {PHASES['dataset']} ...", f"✓ 1/{len(PHASES)} mazes written (2 s)"]


def _sft_records(n: int) -> list[Any]:
    from hyperpod_rl.metrics.schema import MetricRecord

    return [
        MetricRecord(
            run_id="sft-bar-sft", step=s, total_steps=n, time_s=100.0 + 2 * s, values={"sft/loss": 2.0 / s, "sft/target_prob": 0.1 * s}
        )
        for s in range(1, n + 1)
    ]


def test_an_sft_run_shows_its_loss_and_both_stages_their_own_label() -> None:
    """Field report: the SFT stage's bar showed ``reward - loss -`` for all its steps although its
    loss is recorded, and both stages' bars read ``train``."""
    from hyperpod_rl.jobs import JobUpdate, RunProgress

    sft = RunProgress(4)
    sft.add(JobUpdate(status="PENDING", stage="sft"))  # the job's metadata names the stage before any step
    assert sft.label == "sft" and sft.line().startswith("sft 0/4 loss -")
    sft.add(JobUpdate(status="RUNNING", records=_sft_records(2)))
    assert sft.line().startswith("sft 2/4 loss 1.0000 · 2.0 s/step"), sft.line()
    assert "reward" not in sft.figures()
    inferred = RunProgress(4)  # a job submitted without the metadata: its records tell
    inferred.add(JobUpdate(status="RUNNING", records=_sft_records(1)))
    assert inferred.label == "sft" and inferred.loss() == "2.0000"
    grpo = RunProgress(12)
    records = [r for r in map(parse_metric_line, RECORDED.read_text().splitlines()) if r is not None]
    grpo.add(JobUpdate(status="RUNNING", records=records[:1]))
    assert re.fullmatch(r"grpo 7/12 reward [+-]\d\.\d{3} loss [+-]\d\.\d{4}", grpo.line()), grpo.line()


def test_job_logs_prints_one_readable_line_per_step() -> None:
    """Field report: ``job logs`` without ``--follow`` printed raw metric JSON, about 1.3 KB a step."""
    from hyperpod_rl.jobs import RunProgress, readable_log

    log = RECORDED.read_text()
    shown = readable_log(log, 12)
    raw_lines, lines = log.splitlines(), shown.splitlines()
    assert len(lines) == len(raw_lines) and "HPRL_METRIC" not in shown
    steps = [line for line in lines if line.startswith("grpo ")]
    assert [int(line.split()[1].split("/")[0]) for line in steps] == list(range(7, 13))
    assert all(len(line) < 120 for line in steps), steps
    assert "resumed from step_000006" in shown  # the trainer's own lines stay
    # the same line the follow path prints for that step
    state = RunProgress(12)
    from hyperpod_rl.jobs import JobUpdate

    for record in [r for r in map(parse_metric_line, raw_lines) if r is not None]:
        state.add(JobUpdate(status="RUNNING", records=[record]))
    assert steps[-1] == state.line()
    assert readable_log(log).splitlines()[-len(lines) :] == lines  # without a config: the log's last step is the total
    sft_log = "\n".join(["loading", *(r.to_line() for r in _sft_records(3))])
    assert readable_log(sft_log).splitlines()[1:] == [
        "sft 1/3 loss 2.0000",
        "sft 2/3 loss 1.0000 · 2.0 s/step · ETA 2s",
        "sft 3/3 loss 0.6667 · 2.0 s/step · ETA 0s",
    ]


def test_the_tqdm_bar_of_an_sft_job_shows_its_loss(capsys: pytest.CaptureFixture[str]) -> None:
    """The notebook's bar (``follow_with_tqdm``): labelled ``sft`` with ``sft/loss``, through Ray's own client."""
    from ray.job_submission import JobSubmissionClient

    from hyperpod_rl.jobs import follow_run
    from hyperpod_rl.quickstart import follow_with_tqdm

    sid = "hprl-sft-bar-sft-1"
    log = "\n".join(["loading", *(r.to_line() for r in _sft_records(3))]) + "\n"
    with FakeHTTPServer() as server:
        info = {
            "type": "SUBMISSION",
            "submission_id": sid,
            "status": "SUCCEEDED",
            "entrypoint": "x",
            "metadata": {"hyperpod_rl_stage": "sft"},
        }
        server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.57.0", "ray_commit": "x"}))
        server.route("GET", f"/api/jobs/{sid}", Response(200, info))
        server.route("GET", f"/api/jobs/{sid}/logs", Response(200, {"logs": log}))
        client = JobSubmissionClient(server.url)
        assert next(follow_run(client, sid)).stage == "sft"  # from the job's metadata, which submit_run sets
        assert follow_with_tqdm(client, sid, 3) == "SUCCEEDED"
    err = capsys.readouterr().err
    assert re.search(r"sft: .*3/3 \[.*loss 0\.6667", err) and "reward" not in err, err
