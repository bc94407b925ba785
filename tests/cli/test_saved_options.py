"""A bad value in a file a run directory saved is reported as that file's, never as a value typed.

New-user report: a bad value inside a run's ``quickstart-options.json`` (written when the
quickstart started; ``--resume`` reads it) was reported by ``hyperpod-rl quickstart --resume`` as
``--steps: must be > 0``, as if the user had typed it, without naming the file. Now the message
names the file and each key, says to put back the value the quickstart started with, and that
nothing else was changed: once the file is fixed, the same ``--resume`` takes it. The run's own
``config.json`` (:func:`hyperpod_rl.runs.read_config`) says so the same way
(:func:`hyperpod_rl.runs.invalid_saved_file`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperpod_rl import quickstart as qs
from hyperpod_rl.cli import app
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.runs import add_submission, run_paths, write_json

runner = CliRunner()
RUN = "qs-edited"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir holding quickstart :data:`RUN`, interrupted after its base evaluation: its options
    written by :func:`hyperpod_rl.quickstart.run` itself."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)

    def steps(flow: qs._Flow, opts: qs.QuickstartOptions, client: object, storage: Path, paths, sft_paths, follow) -> None:  # noqa: ANN001
        write_json(paths.eval_file("base"), {"label": "base"})
        flow.done.update({"dataset", "base_model", "eval_base"})
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(qs, "_run", steps)
        with pytest.raises(qs.QuickstartInterrupted):
            opts = qs.QuickstartOptions.build(run_id=RUN, steps=7, min_size=3, serve=False)
            qs.run(opts, client=object(), on_phase=lambda _phase: None)
    return tmp_path / "home"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _resumed_with(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[Any, list[qs.QuickstartOptions]]:
    """``quickstart --resume RUN ARGS`` with :func:`hyperpod_rl.quickstart.run` replaced by one that
    records the options it was given and stops as an interrupt does (no cluster, no training)."""
    given: list[qs.QuickstartOptions] = []

    def fake_run(opts: qs.QuickstartOptions, **_kw: Any) -> None:
        given.append(opts)
        raise qs.QuickstartInterrupted(opts.run_id, None, [], None)

    monkeypatch.setattr(qs, "run", fake_run)
    return runner.invoke(app, ["quickstart", "--resume", RUN, *args]), given


def _said(result) -> str:  # noqa: ANN001 - click's Result
    return " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("key", "bad", "problem"),
    [("steps", 0, "steps: must be > 0 (got 0)"), ("min_size", 1, "min_size: must be >= 2 (got 1)")],
)
def test_a_bad_saved_value_names_the_file_and_key_and_nothing_is_lost(
    key: str, bad: int, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = run_paths(RUN)
    saved = json.loads(paths.quickstart_options.read_text())
    write_json(paths.quickstart_options, {**saved, key: bad})
    before = _snapshot(paths.root)
    result, given = _resumed_with(monkeypatch)
    said = _said(result)
    assert result.exit_code == 2 and not given, result.output
    assert (
        said.count("error:") == 1
        and f"the file {paths.quickstart_options}, which holds the options quickstart '{RUN}' started with" in said
    )
    assert problem in said and "--" + key.replace("_", "-") not in said.replace(f"--resume {RUN}", ""), said
    assert f"put back the one the quickstart started with), then run hyperpod-rl quickstart --resume {RUN} again" in said, said
    assert "nothing else in the run directory was changed" in said and "delete" not in said, said
    assert _snapshot(paths.root) == before  # the failed resume wrote nothing
    write_json(paths.quickstart_options, saved)  # the file fixed: the same resume takes it
    result, given = _resumed_with(monkeypatch, "--serve-port", "8125")
    assert result.exit_code == 130 and len(given) == 1, result.output
    assert given[0] == qs.QuickstartOptions.build({**saved, "serve_port": 8125})


def test_an_unknown_key_or_a_file_that_is_not_an_object_is_the_files_problem_too(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = run_paths(RUN)
    saved = json.loads(paths.quickstart_options.read_text())
    write_json(paths.quickstart_options, {**saved, "stepz": 3})
    said = _said(_resumed_with(monkeypatch)[0])
    assert f"the file {paths.quickstart_options}" in said and "stepz: not a known field: remove it or check its spelling" in said, said
    write_json(paths.quickstart_options, [saved])
    said = _said(_resumed_with(monkeypatch)[0])
    assert f"the file {paths.quickstart_options}, which holds the options quickstart '{RUN}' started with, holds a JSON list" in said
    assert "has no quickstart record" not in said, said
    # a bad flag given with --resume is still the flag's: the saved file is fine
    write_json(paths.quickstart_options, saved)
    result, _ = _resumed_with(monkeypatch, "--serve-port", "0")
    assert result.exit_code == 2 and "--serve-port" in _said(result) and str(paths.quickstart_options) not in _said(result), _said(result)


def test_a_bad_value_in_a_runs_config_json_names_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.runs import read_config

    paths = run_paths("edited-run")
    add_submission(paths, "hprl-edited-run-1")
    paths.config.write_text(json.dumps({"run_id": "edited-run", "data": {"train_path": "t", "heldout_path": "h"}, "trainer": {"steps": 0}}))
    with pytest.raises(ConfigError) as caught:
        read_config("edited-run")
    said = " ".join(str(caught.value).split())
    assert said.startswith(f"the file {paths.config}, which holds the config run 'edited-run' was submitted with, is not valid"), said
    assert "trainer.steps: must be > 0 (got 0)" in said and "put back the one the run was submitted with" in said, said
    result = runner.invoke(app, ["serve", "ask", "edited-run"])
    assert result.exit_code == 2 and str(paths.config) in _said(result) and "trainer.steps" in _said(result), result.output
