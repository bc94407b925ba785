"""The quickstart's result table in an 80-column log (a new user's report: the intervals wrapped mid-number)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from hyperpod_rl.cli.quickstart import _table
from hyperpod_rl.eval.compare import Comparison, MetricDelta
from hyperpod_rl.eval.result import EvalResult
from hyperpod_rl.eval.stats import Interval
from hyperpod_rl.quickstart import QuickstartSummary

RATES = {"solve_rate": (0.03, 0.435, 0.72), "optimal_move_rate": (0.086, 0.623, 0.81), "invalid_move_rate": (0.0, 0.0, 0.0)}


def _comparison(a: int, b: int, labels: tuple[str, str]) -> Comparison:
    deltas = {}
    for metric, values in RATES.items():
        lo, hi = values[a], values[b]
        deltas[metric] = MetricDelta(
            metric, Interval(lo, max(lo - 0.05, 0), lo + 0.05, 200), Interval(hi, max(hi - 0.05, 0), hi + 0.05, 200),
            Interval(hi - lo, hi - lo - 0.06, hi - lo + 0.06, 200), metric != "invalid_move_rate",
        )  # fmt: skip
    return Comparison(*labels, num_mazes=200, level=0.95, deltas=deltas, primary="solve_rate", promote=True, reason="promote")


def _summary(sft: bool) -> QuickstartSummary:
    def result(label: str) -> EvalResult:
        return EvalResult(label=label, model_path="m", adapter_path=None, num_mazes=200, metrics={})

    grpo = _comparison(1, 2, ("sft", "adapter")) if sft else _comparison(0, 2, ("base", "adapter"))
    return QuickstartSummary(
        run_id="qs", run_dir=Path("/tmp/qs"), submission_id="s", wall_s={}, heldout_rows=200,
        base=result("base"), adapter=result("adapter"), comparison=grpo,
        sft=result("sft") if sft else None, sft_comparison=_comparison(0, 1, ("base", "sft")) if sft else None,
    )  # fmt: skip


def _render(table, width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(table)
    return console.export_text()


@pytest.mark.parametrize("sft", [True, False], ids=["sft", "no-sft"])
def test_an_80_column_table_keeps_every_interval_whole(sft: bool) -> None:
    summary = _summary(sft)
    narrow = _render(_table(summary, 6, width=80), 80)
    assert max(len(line) for line in narrow.splitlines()) <= 80, narrow
    # each interval on one line, whole: "[0.385, 0.485]", never "[0.385," then "0.485]" on the next line
    assert not re.search(r"\[\d\.\d{3},\s*(│|$)", narrow, re.M), narrow
    shown = re.findall(r"[+-]?\d\.\d{3}", narrow)
    wide = _render(_table(summary, 6, width=200), 200)
    assert sorted(shown) == sorted(re.findall(r"[+-]?\d\.\d{3}", wide))  # the same figures, only laid out differently
    assert "0.435 [0.385, 0.485]" in wide or not sft  # side by side where there is room
    assert "0.720" in narrow and "[0.670, 0.770]" in narrow
