"""Every command's ``--help`` reads as prose: paragraphs filled to the terminal, no typed ``--help``.

New-user report: ``hyperpod-rl job logs --help`` kept its docstring's source line breaks (ragged
lines: typer's rich help keeps the line breaks of every paragraph after the first), and
``--help`` was listed as ``--help <bool>``. Each command's and group's help now shows each
paragraph as one line the terminal wraps (``hyperpod_rl.cli._common.help_paragraphs``, applied by
``HprlGroup`` to every command), and no option, ``--help`` included, shows a type for a flag.
Checked over every command's ``--help`` output, as a terminal of two widths shows it.
"""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from hyperpod_rl.cli import app


def _commands() -> list[list[str]]:
    """The argv of every command and group (``[]``: the top level)."""
    out: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        out.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return out


COMMANDS = _commands()


def _description(out: str) -> list[str]:
    """The help's prose: the lines between the usage line and the first box."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if line.lstrip().startswith("╭")), len(lines))
    return lines[start:end]


@pytest.mark.parametrize("width", [80, 140])
def test_every_help_fills_its_lines_and_types_no_flag(width: int) -> None:
    assert len(COMMANDS) >= 50 and ["job", "logs"] in COMMANDS
    ragged, typed = [], []
    for argv in COMMANDS:
        result = CliRunner().invoke(app, [*argv, "--help"], env={"COLUMNS": str(width), "TERM": "dumb"})
        assert result.exit_code == 0, (argv, result.output)
        prose = _description(result.output)
        for line, after in zip(prose, prose[1:], strict=False):
            # a line followed by more of its paragraph ends only where the next word would not fit
            if line.strip() and after.strip() and len(line.rstrip()) + 1 + len(after.split()[0]) <= width - 2:
                ragged.append(f"{' '.join(argv)}: {line.strip()!r} | {after.strip()!r}")
        typed += [f"{' '.join(argv)}: {line.strip()}" for line in result.output.splitlines() if "<bool>" in line]
    assert not ragged, "\n".join(ragged)
    assert not typed, typed


def test_job_logs_help_reads_as_paragraphs() -> None:
    """The reported command: its second paragraph is one filled paragraph at 80 columns."""
    out = CliRunner().invoke(app, ["job", "logs", "--help"], env={"COLUMNS": "80", "TERM": "dumb"}).output
    prose = _description(out)
    start = next(i for i, line in enumerate(prose) if line.strip().startswith("When the cluster cannot give the log"))
    paragraph = prose[start : next(i for i in range(start, len(prose)) if not prose[i].strip())]
    assert len(paragraph) > 3 and all(len(line.rstrip()) >= 70 for line in paragraph[:-1]), "\n".join(paragraph)
