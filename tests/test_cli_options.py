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
