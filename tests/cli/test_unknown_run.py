"""A run id that matches no run is said to be unknown, by every command that takes one.

New-user report: ``hyperpod-rl job status no-such-run`` answered with an explanation about
clusters ("has no job on this cluster ... no local Ray cluster is running ... submit it first"),
while ``hyperpod-rl runs show no-such-run`` said plainly that no such run exists. Now ``job
status``, ``job logs``, ``job stop``, ``job submit --from-run``, ``runs show``, ``runs compare`` and
``runs reproduce`` and the ``serve`` commands that take a run id all say it in the same words (:func:`hyperpod_rl.runs.unknown_run`, through
:meth:`hyperpod_rl.ledger.Ledger.require_run`), with or without a cluster answering.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.runs import add_submission, run_paths, update_provenance, write_json

runner = CliRunner()

#: Every job subcommand that takes a run id.
JOB_COMMANDS = (["job", "status"], ["job", "logs"], ["job", "logs", "--follow"], ["job", "stop"])
#: The serve commands that take a run id (the run id goes last).
SERVE_COMMANDS = (["serve", "up"], ["serve", "ask"], ["serve", "solve"], ["serve", "promote"], ["serve", "export", "--s3-uri", "s3://b/k"])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir with no local cluster recorded, its own ledger and storage root."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    return tmp_path / "home"


def _said(result) -> str:  # noqa: ANN001 - click's Result
    return " ".join(result.output.split())


def _assert_unknown(result, home: Path, run_id: str = "no-such-run") -> None:  # noqa: ANN001
    said = _said(result)
    assert result.exit_code == 2, said
    assert said.startswith(f"error: unknown run id '{run_id}': no run has this id"), said
    assert f"the ledger {home / 'ledger.sqlite'}" in said and f"the run directories under {home / 'storage' / 'runs'}" in said, said
    assert "hyperpod-rl runs list shows the known runs" in said, said
    assert "cluster" not in said and "submit it first" not in said and "Traceback" not in said, said


@pytest.mark.parametrize("command", JOB_COMMANDS, ids=" ".join)
def test_job_commands_say_an_unknown_run_id_plainly_with_no_cluster(command: list[str], home: Path) -> None:
    _assert_unknown(runner.invoke(app, [*command, "no-such-run"]), home)


@pytest.mark.parametrize("command", JOB_COMMANDS, ids=" ".join)
def test_job_commands_say_an_unknown_run_id_plainly_when_the_cluster_answers(command: list[str], home: Path, empty_cluster: str) -> None:
    _assert_unknown(runner.invoke(app, [*command, "no-such-run", "--address", empty_cluster]), home)


@pytest.mark.parametrize("command", SERVE_COMMANDS, ids=" ".join)
def test_serve_commands_say_an_unknown_run_id_plainly(command: list[str], home: Path) -> None:
    _assert_unknown(runner.invoke(app, [*command, "no-such-run"]), home)


def test_runs_and_job_commands_say_it_in_the_same_words(home: Path) -> None:
    """One message, from one place: ``runs show`` (which already said it plainly), ``runs compare``,
    ``runs reproduce``, ``job status`` and ``job submit --from-run``."""
    run_paths("known-run").root.mkdir(parents=True)
    write_json(run_paths("known-run").config, {"run_id": "known-run"})
    job = runner.invoke(app, ["job", "status", "no-such-run"])
    _assert_unknown(job, home)
    for args in (["runs", "show", "no-such-run"], ["runs", "compare", "no-such-run", "known-run"], ["runs", "reproduce", "no-such-run"]):
        shown = runner.invoke(app, args)
        assert shown.exit_code == 2 and _said(shown) == _said(job), (args, _said(shown))
    from_run = runner.invoke(app, ["job", "submit", str(home / "run.yaml"), "--from-run", "no-such-run"])
    assert from_run.exit_code == 2 and _said(from_run) == _said(job).replace("error: ", "error: --from-run: ", 1), _said(from_run)


def test_a_submission_id_given_for_a_run_id_names_the_run_id(home: Path) -> None:
    said = _said(runner.invoke(app, ["job", "logs", "hprl-some-run-3"]))
    assert said.startswith("error: unknown run id 'hprl-some-run-3'"), said
    assert "it looks like a submission id (job 3 of run 'some-run'): these commands take the run id, e.g. 'some-run'" in said, said


def test_a_known_run_keeps_its_own_answer(home: Path, empty_cluster: str) -> None:
    """Not a false alarm: a run that exists but has no job, or whose job the cluster no longer
    knows, is answered as before, not called unknown."""
    paths = run_paths("never-submitted")
    paths.root.mkdir(parents=True)
    write_json(paths.config, {"run_id": "never-submitted"})
    said = _said(runner.invoke(app, ["job", "status", "never-submitted"]))
    assert "has no job" in said and "submit it first" in said and "unknown run id" not in said, said
    running = run_paths("lost-running")
    add_submission(running, "hprl-lost-running-1")
    update_provenance(running.root, lambda _: {"run_id": "lost-running", "status": "running"})
    lost = runner.invoke(app, ["job", "stop", "lost-running", "--address", empty_cluster])
    assert lost.exit_code == 2 and "is not on this cluster: nothing to stop here" in _said(lost), _said(lost)
