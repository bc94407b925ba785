"""A run whose quickstart was interrupted before it submitted the run's job says so, and names the resume.

New-user report: after Ctrl-C stopped ``hyperpod-rl quickstart`` before its GRPO job was submitted,
``hyperpod-rl job status <run>`` said the run "has no job on this cluster and none recorded in its
run directory ...: submit it first". Submitting it by hand is not the fix: the quickstart's own
resume is. Every command that takes a run id (the job commands, with or without a cluster
answering, the serve commands and ``runs show``) now says the quickstart was interrupted and that
``hyperpod-rl quickstart --resume <run id>`` finishes it, for the GRPO run and for its SFT warm
start (``<run id>-sft``) alike (:func:`hyperpod_rl.runs.unsubmitted_quickstart`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.errors import JobError
from hyperpod_rl.quickstart import sft_run_id
from hyperpod_rl.runs import add_submission, record_eval, run_paths, write_json

runner = CliRunner()
RUN = "qs-stopped"

#: Every command that takes a run id and needs its job or its results (the run id goes last).
COMMANDS = (
    ["job", "status"],
    ["job", "logs"],
    ["job", "logs", "--follow"],
    ["job", "stop"],
    ["serve", "ask"],
    ["serve", "solve"],
    ["serve", "up"],
    ["runs", "show"],
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir with no local cluster, holding quickstart :data:`RUN` stopped during its SFT
    warm start's evaluation: its options written by :func:`hyperpod_rl.quickstart.run` itself, the
    base evaluation in both run directories, the SFT job never submitted."""
    from hyperpod_rl import quickstart as qs

    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)

    def steps(flow: qs._Flow, opts: qs.QuickstartOptions, client: object, storage: Path, paths, sft_paths, follow) -> None:  # noqa: ANN001
        flow.done.update({"dataset", "cluster", "base_model", "eval_base"})
        for run in (paths, sft_paths):
            record_eval(run, "base", {"label": "base", "metrics": {"solve_rate": 0.0}})
        flow.phase = "sft"
        raise KeyboardInterrupt

    monkeypatch.setattr(qs, "_run", steps)
    with pytest.raises(qs.QuickstartInterrupted):
        qs.run(qs.QuickstartOptions.build(run_id=RUN, serve=False), client=object(), on_phase=lambda _phase: None)
    assert run_paths(RUN).quickstart_options.is_file() and not run_paths(RUN).submissions.exists()
    return tmp_path / "home"


def _said(result) -> str:  # noqa: ANN001 - click's Result
    return " ".join(result.output.split())


def _assert_resume_named(result, run_id: str = RUN) -> None:  # noqa: ANN001
    said = _said(result)
    assert result.exit_code == 2, said
    assert said.count("error:") == 1 and "Traceback" not in said, said
    assert f"run '{run_id}' has no job yet:" in said and "was interrupted before it submitted" in said, said
    assert said.endswith(f"hyperpod-rl quickstart --resume {RUN} finishes it"), said
    assert "submit it first" not in said and "local start" not in said and "runs list" not in said, said


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_the_run_of_an_interrupted_quickstart_names_the_resume(command: list[str]) -> None:
    result = runner.invoke(app, [*command, RUN])
    _assert_resume_named(result)
    assert "its GRPO job" in _said(result)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c[0] == "job"], ids=" ".join)
def test_so_does_its_sft_warm_start(command: list[str]) -> None:
    result = runner.invoke(app, [*command, sft_run_id(RUN)])
    _assert_resume_named(result, sft_run_id(RUN))
    assert f"it is the SFT warm start of quickstart '{RUN}'" in _said(result)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c[0] == "job"], ids=" ".join)
def test_with_a_cluster_answering_too(command: list[str], empty_cluster: str) -> None:
    _assert_resume_named(runner.invoke(app, [*command, RUN, "--address", empty_cluster]))
    _assert_resume_named(runner.invoke(app, [*command, sft_run_id(RUN), "--address", empty_cluster]), sft_run_id(RUN))


def test_the_library_says_it_too_and_only_for_such_a_run() -> None:
    from hyperpod_rl.jobs import recorded_steps, run_status
    from hyperpod_rl.runs import unsubmitted_quickstart

    with pytest.raises(JobError, match=f"hyperpod-rl quickstart --resume {RUN} finishes it"):
        run_status(None, RUN, unreachable="no cluster")
    with pytest.raises(JobError, match="was interrupted before it submitted"):
        recorded_steps(RUN)
    # its job submitted (and running), or the quickstart finished: no longer this run's story
    add_submission(run_paths(sft_run_id(RUN)), f"hprl-{sft_run_id(RUN)}-1")
    assert unsubmitted_quickstart(run_paths(sft_run_id(RUN))) is None
    # interrupted while its SFT warm start's job ran: the quickstart's run names that run and its job (a fresh user's report)
    said = unsubmitted_quickstart(run_paths(RUN)) or ""
    sft = sft_run_id(RUN)
    assert f"its SFT warm start, run '{sft}', has a job (hyperpod-rl job status {sft}; hyperpod-rl job stop {sft} stops it)" in said, said
    assert said.endswith(f"hyperpod-rl quickstart --resume {RUN} finishes it"), said
    write_json(run_paths(RUN).quickstart, {"run_id": RUN})
    assert unsubmitted_quickstart(run_paths(RUN)) is None
    # a run no quickstart started keeps the plain answer
    record_eval(run_paths("plain-run"), "base", {"label": "base", "metrics": {}})
    with pytest.raises(JobError, match="submit it first"):
        run_status(None, "plain-run")


def test_the_command_it_names_is_the_quickstarts_resume_option() -> None:
    command = typer.main.get_command(app).commands["quickstart"]  # type: ignore[attr-defined]
    resume = next(p for p in command.params if p.name == "resume")
    assert resume.opts == ["--resume"] and resume.metavar == "RUN_ID"


def test_starting_it_again_is_refused_before_the_quickstarts_header() -> None:
    """New-user report: ``hyperpod-rl quickstart --run-id X`` on the unfinished X printed its
    header rule, then the error. What the quickstart refuses before it starts (a run id taken, a
    resume with other options, a serve port in use: :func:`hyperpod_rl.quickstart.check_start`)
    is now said before any header, as every other command's errors are."""
    import socket

    result = runner.invoke(app, ["quickstart", "--run-id", RUN, "--no-serve"], env={"COLUMNS": "120"})
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: run '{RUN}' was started by a quickstart that did not finish"), result.output
    assert "hyperpod-rl quickstart ·" not in result.output and "─" not in result.output, result.output
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        result = runner.invoke(app, ["quickstart", "--run-id", "qs-new", "--serve-port", port], env={"COLUMNS": "120"})
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: --serve-port {port} is in use by another program"), result.output
    assert "hyperpod-rl quickstart ·" not in result.output and not run_paths("qs-new").root.exists(), result.output
