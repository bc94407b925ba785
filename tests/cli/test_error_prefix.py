"""Every ``hyperpod-rl`` error says ``error:`` once, on standard error, through ``cli._common.fail``.

Project errors, bad option values, unknown commands and options, missing arguments and the
cluster commands' errors all go through the one formatter: no click ``Error`` box, no
``Error:`` prefix, no pydantic wording.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.cli._common import ERROR_PREFIX

runner = CliRunner()


def _cases(tmp_path: Path) -> list[list[str]]:
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\n")  # no RayCluster in it: bad input
    return [
        ["bogus"],  # unknown command
        ["runs", "list", "--limit", "x"],  # bad option value
        ["runs", "list", "--no-such-option"],  # unknown option
        ["serve", "solve"],  # missing argument
        ["tasks", "show", "nope"],  # project error
        ["tasks", "sample", "doc_read", "--out", str(tmp_path / "s"), "--options", "{not json"],  # BadParameter
        ["tasks", "sample", "doc_read", "--out", str(tmp_path / "s"), "--options", '{"items": "many"}'],  # model error
        ["serve", "preflight", str(tmp_path), "--model-id", "m", "--revision", "r", "--server", "x"],  # choice
        ["cluster", "validate", str(empty)],  # the cluster commands: exit 2 for bad input too
        ["cluster", "show", "--preset", "nope"],
        ["runs", "show", "no-such-run", "--ledger", str(tmp_path / "l.sqlite")],
        ["quickstart", "--steps", "0"],
        ["plan", "--image-px", "wide"],
    ]


def test_every_cli_error_has_the_one_prefix(tmp_path: Path) -> None:
    seen = 0
    for args in _cases(tmp_path):
        result = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 2, (args, result.output)  # bad input: 2 in every command
        err = result.stderr
        assert err.startswith(f"{ERROR_PREFIX} "), (args, err, result.stdout)
        assert result.output.count(ERROR_PREFIX) == 1, (args, result.output)
        assert not re.search(r"\bError\b|╭|Input should", result.output), (args, result.output)
        seen += 1
    assert seen == len(_cases(tmp_path))


@pytest.mark.parametrize("args", [["runs", "list", "--limit", "x"], ["serve", "solve"]])
def test_usage_errors_point_at_the_command_help(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"(see: hyperpod-rl {' '.join(args[:2])} --help)" in result.stderr.replace("root ", "hyperpod-rl ")


def test_a_bare_group_still_prints_its_help() -> None:
    result = runner.invoke(app, ["runs"])
    assert "Usage:" in result.output and ERROR_PREFIX not in result.output
