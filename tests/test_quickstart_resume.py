"""Ctrl-C in the quickstart says what was not done, and ``--resume`` finishes it (issue 44 item 2).

Field report: interrupted during GRPO, the job finished but the adapter evaluation, the table
and serving never happened and nothing said how to get them; interrupted during SFT, GRPO was
never submitted. A real quickstart (tiny sizes) is interrupted with SIGINT, as a terminal's
Ctrl-C sends it, once while its SFT job trains and once while its GRPO job trains; each resume
follows the job that kept running (no second submission) and the last one ends the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hyperpod_rl.jobs import stop_run
from hyperpod_rl.runs import read_submissions, run_paths

RUN = "qs-resume"
SIZES = [
    *("--train-rows", "24", "--heldout-rows", "4", "--min-size", "3", "--max-size", "3", "--max-turns", "3"),
    *("--group-size", "2", "--prompts-per-step", "2", "--sft-rows-per-step", "2", "--no-serve"),
]


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hyperpod_rl.cli", "quickstart", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "250", "TERM": "dumb"},
        # a shell running the tests in the background ignores SIGINT and a child inherits that:
        # give the quickstart the default disposition a user's terminal gives it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _interrupt_at(proc: subprocess.Popen[str], prefix: str) -> str:
    """Read the quickstart's output until a progress line starting with ``prefix``, send SIGINT, return all it printed."""
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if line.startswith(prefix):
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    return "".join(seen) + rest


def test_the_interrupt_names_what_is_left_in_order() -> None:
    """What each interrupt leaves, serving included (the real runs below are --no-serve)."""
    from hyperpod_rl.quickstart import PHASES, _Flow

    flow = _Flow("r1", list(PHASES), lambda _phase: None, "doc_read", resume=False)
    for name in ("dataset", "cluster", "base_model", "eval_base", "sft", "eval_sft"):
        flow.done.add(name)
    flow.phase, flow.job = "train", "hprl-r1-1"
    stop = flow.interrupted()
    assert isinstance(stop, KeyboardInterrupt) and stop.left == ["the adapter's evaluation and the comparison table", "serving"]
    assert str(stop) == (
        "interrupted during the GRPO job; its job hprl-r1-1 keeps running. Not done: the adapter's evaluation and the comparison "
        "table, serving. Finish it: hyperpod-rl quickstart --resume r1 (in Python: hp.quickstart.resume('r1'))"
    )
    early = _Flow("r2", [p for p in PHASES if p not in ("sft", "eval_sft")], lambda _phase: None, "maze", resume=False)
    early.phase = "cluster"  # interrupted while the cluster starts: nothing submitted, no job
    assert early.interrupted().left == [
        "the dataset",
        "the local cluster",
        "the base model",
        "the base model's evaluation",
        "the GRPO job (not submitted)",
        "the adapter's evaluation and the comparison table",
        "serving",
    ]


def test_sigterm_says_what_is_left_as_ctrl_c_does(tmp_path, monkeypatch) -> None:
    """Reported: ``kill PID`` of a quickstart while its SFT job trained printed nothing about what
    was not done (Ctrl-C did). SIGTERM now stops :func:`run` as Ctrl-C does, with exit code 143,
    and its own handler is put back after; the steps are faked, so no cluster is needed."""
    import time

    from hyperpod_rl import quickstart as qs

    def steps(flow, *args):
        flow.done.update({"dataset", "cluster", "base_model", "eval_base"})
        flow.phase, flow.job = "sft", "hprl-qs-term-sft-1"
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler raises in here
        raise AssertionError("SIGTERM did not stop the quickstart")

    monkeypatch.setattr(qs, "_run", steps)
    before = signal.getsignal(signal.SIGTERM)
    opts = qs.QuickstartOptions.build(run_id="qs-term", serve=False)
    with pytest.raises(qs.QuickstartInterrupted) as caught:
        qs.run(opts, client=object(), storage=tmp_path, on_phase=lambda _phase: None)
    stop = caught.value
    assert (stop.signum, stop.exit_code) == (signal.SIGTERM, 143)
    assert str(stop) == (
        "interrupted during the SFT warm start; its job hprl-qs-term-sft-1 keeps running. Not done: the SFT adapter's evaluation, "
        "the GRPO job (not submitted), the adapter's evaluation and the comparison table. "
        "Finish it: hyperpod-rl quickstart --resume qs-term (in Python: hp.quickstart.resume('qs-term'))"
    )
    assert signal.getsignal(signal.SIGTERM) is before
    assert qs._Flow("r4", ["dataset"], lambda _phase: None, "maze", resume=False).interrupted().exit_code == 130  # Ctrl-C


def test_the_cli_exits_143_after_sigterm_with_the_message(monkeypatch) -> None:
    """The CLI prints the interrupt's message and exits with its code (143 after SIGTERM, 130 after Ctrl-C)."""
    from typer.testing import CliRunner

    from hyperpod_rl import quickstart as qs
    from hyperpod_rl.cli import app

    for signum, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):

        def stopped(opts, signum=signum, **_kw):
            raise qs.QuickstartInterrupted(opts.run_id, "sft", ["the GRPO job (not submitted)"], "hprl-qs-cli-sft-1", signum)

        monkeypatch.setattr(qs, "run", stopped)
        result = CliRunner().invoke(app, ["quickstart", "--run-id", "qs-cli", "--no-serve"])
        assert result.exit_code == code, result.output
        assert (
            "interrupted during the SFT warm start; its job hprl-qs-cli-sft-1 keeps running. Not done: the GRPO job (not submitted). "
            "Finish it: hyperpod-rl quickstart --resume qs-cli" in " ".join(result.output.split())
        ), result.output


@pytest.mark.ray
def test_ctrl_c_says_what_is_left_and_resume_finishes_the_run(local_cluster, tmp_path: Path) -> None:
    """Interrupted in SFT, resumed and interrupted in GRPO, resumed to the end.

    Slow: three real quickstart processes and two training jobs (SFT, GRPO) on the local cluster."""
    client = local_cluster.job_client()
    procs: list[subprocess.Popen[str]] = []
    try:
        # 1. interrupted while the SFT job trains: GRPO is not submitted, the SFT job keeps running
        # 20 steps each (about 0.35 s an SFT step and 0.7 s a GRPO step here): each job still trains when
        # it is interrupted and when the next resume starts following it, which is what is checked
        procs.append(_start("--run-id", RUN, "--sft-steps", "20", "--steps", "20", *SIZES))
        out = _interrupt_at(procs[-1], "sft ")
        flat = " ".join(out.split())
        assert procs[-1].returncode == 130, out
        assert f"interrupted during the SFT warm start; its job hprl-{RUN}-sft-1 keeps running." in flat, out
        assert (
            "Not done: the SFT adapter's evaluation, the GRPO job (not submitted), the adapter's evaluation and the comparison table."
            in flat
        ), out
        assert f"Finish it: hyperpod-rl quickstart --resume {RUN}" in flat, out
        assert read_submissions(run_paths(RUN)) == []  # GRPO was not submitted
        assert str(client.get_job_status(f"hprl-{RUN}-sft-1").value) in ("PENDING", "RUNNING", "SUCCEEDED")

        # 2. the resume follows that SFT job (or keeps its adapter), then is interrupted while GRPO trains
        procs.append(_start("--resume", RUN))
        out = _interrupt_at(procs[-1], "grpo ")
        flat = " ".join(out.split())
        assert procs[-1].returncode == 130, out
        assert "base model: optimal-move rate" in flat and "(kept from the earlier quickstart)" in flat, out  # the base eval was kept
        assert f"interrupted during the GRPO job; its job hprl-{RUN}-1 keeps running." in flat, out
        assert "Not done: the adapter's evaluation and the comparison table." in flat, out
        assert read_submissions(run_paths(f"{RUN}-sft")) == [f"hprl-{RUN}-sft-1"]  # followed, not submitted again

        # 3. the last resume follows the GRPO job to its end and does the rest
        summary_path = tmp_path / "summary.json"
        procs.append(_start("--resume", RUN, "--summary-json", str(summary_path)))
        out, _ = procs[-1].communicate(timeout=600)
        assert procs[-1].returncode == 0, out
        assert read_submissions(run_paths(RUN)) == [f"hprl-{RUN}-1"]
        summary = json.loads(summary_path.read_text())
        assert summary["sft_run_id"] == f"{RUN}-sft" and summary["comparison"]["base_label"] == "sft"
        assert "SFT → GRPO" in out and "held-out mazes: 4" in out
        assert json.loads((run_paths(RUN).root / "quickstart.json").read_text())["adapter"] == summary["adapter"]
    finally:
        for proc in procs:
            proc.kill()
        for run_id in (RUN, f"{RUN}-sft"):  # a job a failed assertion left running
            for sid in read_submissions(run_paths(run_id)):
                if str(client.get_job_status(sid).value) in ("PENDING", "RUNNING"):
                    stop_run(client, sid)
