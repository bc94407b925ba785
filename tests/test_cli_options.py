"""The CLI's quickstart options are QuickstartOptions' fields: one place for defaults and help."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.quickstart import QuickstartOptions


def _options() -> dict[str, Any]:
    command = typer.main.get_command(app).commands["quickstart"]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params if p.param_type_name == "option"}


def test_every_field_is_an_option_with_the_model_default_and_help():
    options = _options()
    defaults = QuickstartOptions()
    for name, field in QuickstartOptions.model_fields.items():
        assert name in options, name
        if field.annotation == dict[str, Any]:  # a mapping is one JSON option; blank = the model default
            assert options[name].default is None and getattr(defaults, name) == {}, name
            assert field.description and options[name].help.startswith(field.description) and "JSON" in options[name].help, name
            continue
        assert options[name].default == getattr(defaults, name), name
        renamed = {new: old for old, new in QuickstartOptions.renamed_fields.items()}
        suffix = f" (--{renamed[name].replace('_', '-')}: deprecated name)" if name in renamed else ""
        assert field.description and options[name].help == field.description + suffix, name
    assert set(options) == set(QuickstartOptions.model_fields) | {"summary_json"}


def test_bad_options_are_refused_by_the_model_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    out = CliRunner().invoke(app, ["quickstart", "--steps", "0", "--min-size", "6", "--advantage", "best", "--no-serve"])
    assert out.exit_code == 2
    assert "invalid quickstart options" in out.output
    for expected in ("steps: must be > 0", "advantage: use 'outcome' or 'process'"):
        assert expected in out.output, out.output
    assert not (tmp_path / "local-cluster.json").exists()  # no cluster was started


def test_a_bad_run_id_is_refused_before_the_banner(tmp_path, monkeypatch):
    """Field report (new-user trial): the quickstart printed its banner, then failed on the run id."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    out = CliRunner().invoke(app, ["quickstart", "--run-id", "My_Run", "--no-serve"])
    assert out.exit_code == 2
    assert "run_id: run id 'My_Run' is invalid: use 3-63 lower-case letters" in out.stderr
    assert "hyperpod-rl quickstart" not in out.stdout  # no banner
    assert not (tmp_path / "local-cluster.json").exists()


def test_no_help_text_shows_raw_docstring_markup():
    """``job stop --help`` printed ````stopped```` verbatim: the help a terminal shows is the command's
    docstring as written, so no command's or option's help may hold reST/Sphinx markup."""
    markup = ("``", ":class:", ":func:", ":meth:", ":data:", ":mod:", ":attr:")
    seen, bad = 0, []

    def walk(command: Any, path: str) -> None:
        nonlocal seen
        for text in [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]:
            seen += 1
            bad.extend(f"{path}: {m!r} in {text[:80]!r}" for m in markup if m in text)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "hyperpod-rl")
    assert seen > 100 and not bad, bad
    # what the user saw, rendered
    out = CliRunner().invoke(app, ["job", "stop", "--help"], env={"COLUMNS": "120"}).output
    assert "record 'stopped' in the run's provenance" in " ".join(out.split()) and "``" not in out
