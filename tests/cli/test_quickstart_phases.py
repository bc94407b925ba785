"""The quickstart numbers its steps among those it runs, in the CLI and in the notebook alike.

New-user report: ``hyperpod-rl quickstart --no-serve`` numbered its steps 1/9 .. 8/9 and stopped at
8/9, with no line saying that step 9 (serving) was left out; ``--no-sft`` jumped from 4/9 to 7/9.
Now each step is numbered among the steps this quickstart runs (:attr:`Phase.counter`, set by the
flow itself, so :func:`hyperpod_rl.quickstart.print_phase`, the notebook's default, says the
same), and the CLI ends a run without serving with the command that serves its adapter. The
steps here are the real flow's (:func:`hyperpod_rl.quickstart.run`) with trivial work in each.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperpod_rl import quickstart as qs
from hyperpod_rl.cli import app
from tests.cli.test_quickstart_table import _summary


@pytest.fixture(autouse=True)
def trivial_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`hyperpod_rl.quickstart.run` as it is, each of its steps doing nothing but being announced."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)

    def steps(flow: qs._Flow, opts: qs.QuickstartOptions, *_args: Any) -> qs.QuickstartSummary:
        for name in flow.order:
            flow.step(name, lambda name=name: name, lambda out: f"{out} done")
        summary = _summary(opts.sft)
        summary.wall_s = {"total": 1.0}
        summary.run_dir = Path("/tmp/qs-" + "a" * 80)  # longer than a piped log's 80 columns
        return summary

    monkeypatch.setattr(qs, "_run", steps)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _counters(output: str) -> list[str]:
    return re.findall(r"^✓ (\d+/\d+) \S+ done", output, re.M)


@pytest.mark.parametrize(
    ("args", "total"),
    [(["--no-serve"], 8), (["--no-serve", "--no-sft"], 6), (["--no-sft"], 7), ([], 9)],
    ids=["no-serve", "no-serve no-sft", "no-sft", "all"],
)
def test_the_cli_numbers_the_steps_it_runs(args: list[str], total: int) -> None:
    result = CliRunner().invoke(app, ["quickstart", "--run-id", "qs-phases", "--serve-port", str(_free_port()), *args])
    assert _counters(result.output) == [f"{n}/{total}" for n in range(1, total + 1)], result.output
    served = "--no-serve" not in args
    assert ("serve done" in result.output) is served, result.output
    line = "not served (--no-serve): hyperpod-rl serve up qs-phases serves the adapter · stop the cluster: hyperpod-rl local stop"
    assert (line in result.output) is not served, result.output
    # outside a terminal (80 columns) a line is never cut in two: a command in it can be copied whole
    assert re.search(r"^done in 1 s · run dir /tmp/qs-a{80}$", result.output, re.M), result.output
    assert all(re.fullmatch(r"✓ \d+/\d+ \S+ done \(\d+ s\)", line) for line in result.output.splitlines() if line.startswith("✓")), (
        result.output
    )


def test_the_notebooks_default_front_end_numbers_them_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    """:func:`hyperpod_rl.quickstart.print_phase` (``run``'s default ``on_phase``); a caller's job
    client leaves the cluster step out too."""
    qs.run(qs.QuickstartOptions.build(run_id="qs-notebook", serve=False), client=object())
    out = capsys.readouterr().out
    assert re.findall(r"^(\d+/\d+) .* \.\.\.$", out, re.M) == [f"{n}/7" for n in range(1, 8)], out
    assert _counters(out) == [f"{n}/7" for n in range(1, 8)], out
    assert "cluster done" not in out and "serve done" not in out, out


def test_a_phase_without_its_place_keeps_the_full_count() -> None:
    assert qs.Phase("dataset", done=False).counter == f"1/{len(qs.PHASES)}"
    assert qs.Phase("train", done=False, number=5, total=6).counter == "5/6"
