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
    assert set(options) == set(QuickstartOptions.model_fields) | {"summary_json", "resume"}


def test_bad_options_are_refused_by_the_model_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    out = CliRunner().invoke(app, ["quickstart", "--steps", "0", "--min-size", "6", "--advantage", "best", "--no-serve"])
    assert out.exit_code == 2
    assert "invalid quickstart options" in out.output
    for expected in ("--steps: must be > 0 (got 0)", "--advantage: use 'outcome' or 'process' (got 'best')"):
        assert expected in out.output, out.output
    assert not (tmp_path / "local-cluster.json").exists()  # no cluster was started


def test_a_bad_run_id_is_refused_before_the_banner(tmp_path, monkeypatch):
    """Field report (new-user trial): the quickstart printed its banner, then failed on the run id."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    out = CliRunner().invoke(app, ["quickstart", "--run-id", "My_Run", "--no-serve"])
    assert out.exit_code == 2
    assert "--run-id: run id 'My_Run' is invalid: use 3-63 lower-case letters" in out.stderr
    assert "hyperpod-rl quickstart" not in out.stdout  # no banner
    assert not (tmp_path / "local-cluster.json").exists()


def test_summary_json_is_checked_before_anything_starts(tmp_path, monkeypatch):
    """Field report: a --summary-json that cannot be written failed only at the end of the run."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    (tmp_path / "a-file").write_text("x")
    for target, message in ((tmp_path, "is a folder: give a file name"), (tmp_path / "a-file" / "s.json", "cannot write the folder")):
        out = CliRunner().invoke(app, ["quickstart", "--summary-json", str(target), "--no-serve"])
        assert out.exit_code == 2 and message in " ".join(out.stderr.split()), out.output
        assert "hyperpod-rl quickstart" not in out.stdout and not (tmp_path / "home").exists()  # nothing ran, nothing written


def test_sft_steps_zero_is_accepted_with_sft_off_only():
    """Field report: --no-sft --sft-steps 0 was refused although SFT is off."""
    assert QuickstartOptions.build(sft=False, sft_steps=0).sft_steps == 0
    out = CliRunner().invoke(app, ["quickstart", "--sft-steps", "0", "--no-serve"])
    assert out.exit_code == 2
    assert "--sft-steps: must be > 0 with the SFT warm start on (got 0); or turn it off (--no-sft)" in " ".join(out.stderr.split())


def test_a_maze_count_the_sizes_cannot_fill_is_refused_before_a_cluster_starts(tmp_path, monkeypatch):
    """Field report: such a count was reported after the cluster had started, in ``counts.train`` terms."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    args = ["quickstart", "--min-size", "2", "--max-size", "2", "--train-rows", "500", "--heldout-rows", "4", "--no-sft", "--no-serve"]
    args += ["--run-id", "fits-later"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2, out.output
    error = " ".join(out.stderr.split())
    assert error.startswith("error: the quickstart's data: train_rows=500 cannot be filled with unique layouts"), error
    assert "Change min_size / max_size" in error and "lower train_rows" in error and "counts." not in error
    assert "starting the local Ray cluster" not in out.stdout and not (tmp_path / "local-cluster.json").exists()
    again = CliRunner().invoke(app, args)  # nothing but its options was written: the id may start again
    assert again.exit_code == 2 and "cannot be filled" in again.stderr, again.output
    assert (tmp_path / "storage" / "runs" / "fits-later" / "quickstart-options.json").is_file()  # the second start got as far


def test_resume_takes_the_recorded_options_and_refuses_others(tmp_path, monkeypatch):
    from hyperpod_rl.quickstart import resume_options
    from hyperpod_rl.runs import run_paths, write_json

    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    missing = CliRunner().invoke(app, ["quickstart", "--resume", "never-started"])
    assert missing.exit_code == 2 and "run 'never-started' has no quickstart record" in " ".join(missing.stderr.split())
    # a path is not a run id: refused by the run-id rule, never looked up relative to the working directory
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "quickstart-options.json").write_text("{}")
    for path in ("../../../tmp", str(tmp_path / "elsewhere")):
        refused = CliRunner().invoke(app, ["quickstart", "--resume", path])
        assert refused.exit_code == 2 and f"run id {path!r} is invalid" in " ".join(refused.stderr.split()), refused.output
    recorded = QuickstartOptions.build(run_id="half-done", steps=7, sft_steps=3)
    write_json(run_paths("half-done").quickstart_options, recorded.model_dump(mode="json"))
    assert resume_options("half-done", serve_port=8125, steps=7) == QuickstartOptions.build({**recorded.model_dump(), "serve_port": 8125})
    changed = CliRunner().invoke(app, ["quickstart", "--resume", "half-done", "--steps", "9", "--lr", "0.001"])
    assert changed.exit_code == 2, changed.output
    assert "--resume finishes run 'half-done' with the options it started with: leave out --lr, --steps" in " ".join(changed.stderr.split())
    # switches as the help spells them (a fresh user was told of --serve, where the help says --no-serve)
    switched = CliRunner().invoke(app, ["quickstart", "--resume", "half-done", "--no-sft"])
    said = " ".join(switched.stderr.split())
    assert switched.exit_code == 2 and "leave out --no-sft (only --serve/--no-serve, --serve-port, --dashboard-port may change)" in said, (
        said
    )
    write_json(run_paths("half-done").eval_file("base"), {"label": "base"})  # as its base evaluation left it
    # a new start with its id; sizes that cannot be filled, so that were it not refused it would stop before a cluster starts
    unfillable = ["--min-size", "2", "--max-size", "2", "--train-rows", "500", "--no-sft"]
    again = CliRunner().invoke(app, ["quickstart", "--run-id", "half-done", "--no-serve", *unfillable])
    assert again.exit_code == 2 and "finish it with hyperpod-rl quickstart --resume half-done" in " ".join(again.stderr.split())


def test_the_quickstart_says_to_activate_its_environment_when_path_does_not_lead_to_it(monkeypatch):
    """Field report: the quickstart's closing ``hyperpod-rl ...`` hints failed in a new shell (``make
    quickstart`` runs ``.venv/bin/hyperpod-rl``; nothing said to activate ``.venv``)."""
    import sys
    from pathlib import Path

    from hyperpod_rl.cli.quickstart import activate_hint

    bin_dir = Path(sys.prefix) / "bin"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert activate_hint() == f"the hyperpod-rl commands above run in this environment: in a new shell, first run source {bin_dir}/activate"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")  # activated
    assert activate_hint() is None


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


def test_cli_errors_name_the_flags_the_library_names_the_fields(tmp_path, monkeypatch):
    """Reported: ``hyperpod-rl quickstart --steps 0`` said ``steps: must be > 0``, naming the
    pydantic field, not the flag typed. Every kind of line (a field's own check, a cross-field rule,
    a field named inside a line) names the flag on the command line; the library, which notebooks
    call, keeps the field names. A count beyond the documented bound is refused with the bound."""
    import pytest

    from hyperpod_rl.errors import ConfigError

    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    cases = [
        (["--steps", "0"], ["--steps: must be > 0 (got 0)"]),
        (["--steps", "1000000000000"], ["--steps: must be <= 100000 (got 1000000000000)"]),
        (["--sft-steps", "100001"], ["--sft-steps: must be <= 100000 (got 100001)"]),
        (
            ["--train-rows", "2000000", "--heldout-mazes", "0"],
            ["--train-rows: must be <= 1000000 (got 2000000)", "--heldout-rows: must be > 0 (got 0)"],
        ),
        (["--group-size", "1"], ["--group-size: must be >= 2 (GRPO compares samples within a group) (got 1)"]),
        # field report: fewer train rows than a GRPO step takes was refused only after data, cluster and evaluation
        (
            ["--train-rows", "5"],
            [
                "--prompts-per-step (8) is more than --train-rows (5): each GRPO step takes 8 different training rows; "
                "give --train-rows 8 or more, or a smaller --prompts-per-step"
            ],
        ),
        (["--serve-port", "12000"], ["--serve-port: inside Ray's worker port range 10002-19999"]),
        # field report: a side over the maze's 64 was refused only once the run had started, naming DatasetSpec.sizes
        (["--max-size", "1000", "--min-size", "1"], ["--max-size: must be <= 64 (got 1000)", "--min-size: must be >= 2 (got 1)"]),
        (
            ["--min-size", "6", "--task", "nosuch"],
            ["--min-size (6) is larger than --max-size (5)", "--task: unknown task 'nosuch'; registered tasks: "],
        ),
        (
            ["--task-options", '{"fill": 0.5}'],
            ["--task-options: the maze quickstart takes its options from --min-size, --max-size, --max-turns and --cell-px"],
        ),
        (
            ["--task", "doc_read", "--cell-px", "20"],
            ["--cell-px is the maze's cell size; task 'doc_read' takes its drawing options in --task-options"],
        ),
    ]
    for args, expected in cases:
        out = CliRunner().invoke(app, ["quickstart", "--no-serve", *args])
        assert out.exit_code == 2, (args, out.output)
        lines = [line.strip() for line in out.stderr.splitlines()]
        assert lines[0] == "error: invalid quickstart options:", (args, out.stderr)
        for line in expected:
            assert any(got.startswith(line) for got in lines[1:]), (args, line, out.stderr)
    assert not (tmp_path / "local-cluster.json").exists()
    with pytest.raises(ConfigError) as err:
        QuickstartOptions.build(steps=0, min_size=6, group_size=1)
    assert (
        str(err.value)
        == "invalid quickstart options:\n  group_size: must be >= 2 (GRPO compares samples within a group) (got 1)\n  steps: must be > 0 (got 0)"
    )
    with pytest.raises(ConfigError, match=r"^invalid quickstart options:\n  min_size \(6\) is larger than max_size \(5\)$"):
        QuickstartOptions.build(min_size=6)
