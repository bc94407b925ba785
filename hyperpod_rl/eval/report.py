"""HTML views of evaluations and comparisons (plotly bar charts with 95% intervals, tables)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from hyperpod_rl.eval.stats import Interval

if TYPE_CHECKING:
    from hyperpod_rl.eval.compare import Comparison
    from hyperpod_rl.eval.result import EvalResult

__all__ = ["comparison_html", "result_html"]


def _reported(result: EvalResult) -> tuple[str, ...]:
    from hyperpod_rl.tasks import get_task, metric_spec

    return metric_spec(get_task(result.task)).reported


def result_html(result: EvalResult) -> str:
    """A bar chart of the headline rates with intervals, and the breakdown table."""
    title = f"{html.escape(result.label)} · {result.split} · {result.num_mazes} mazes ({result.observation})"
    results = [result] + ([result.text_twin] if result.text_twin is not None else [])
    fig = _bar_figure({f"{r.label} ({r.observation})": {m: _interval_from(r, m) for m in _reported(r)[:3]} for r in results}, title)
    return fig + _breakdown_table(result)


def comparison_html(comparison: Comparison) -> str:
    """Both models' headline rates with intervals, the paired-difference table and the decision."""
    series = {
        lab: {m: getattr(d, which) for m, d in comparison.deltas.items() if m != "steps_over_optimal"}
        for lab, which in ((comparison.base_label, "base"), (comparison.candidate_label, "candidate"))
    }
    fig = _bar_figure(
        series, f"{comparison.candidate_label} vs {comparison.base_label} · {comparison.num_mazes} mazes · promote: {comparison.promote}"
    )
    rows = "".join(
        f"<tr><td>{r['metric']}</td><td>{r['base']}</td><td>{r['candidate']}</td><td>{r['delta']}</td><td>{r['verdict']}</td></tr>"
        for r in comparison.table_rows()
    )
    return f"{fig}<table><thead><tr><th>metric</th><th>{html.escape(comparison.base_label)}</th><th>{html.escape(comparison.candidate_label)}</th><th>Δ (paired)</th><th>verdict</th></tr></thead><tbody>{rows}</tbody></table><p>{html.escape(comparison.reason)}</p>"


def _interval_from(result: EvalResult, metric: str) -> Interval:
    if metric in result.ci and metric in result.metrics:
        lo, hi = result.ci[metric]
        return Interval(result.metrics[metric], lo, hi, result.num_mazes)
    return result.interval(metric)


def _bar_figure(series: dict[str, dict[str, Interval]], title: str) -> str:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, metrics in series.items():
        names = list(metrics)
        vals = [metrics[m].value for m in names]
        fig.add_bar(
            name=name,
            x=names,
            y=vals,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [metrics[m].high - metrics[m].value for m in names],
                "arrayminus": [metrics[m].value - metrics[m].low for m in names],
            },
        )
    fig.update_layout(title=title, barmode="group", yaxis_title="rate (95% bootstrap CI)", height=360, margin={"t": 50, "b": 40})
    return fig.to_html(full_html=False, include_plotlyjs="cdn")


def _breakdown_table(result: EvalResult) -> str:
    reported = _reported(result)
    rows = []
    for group_key, groups in result.breakdown.items():
        for label, metrics in groups.items():
            cells = "".join(f"<td>{Interval(**metrics[m]).fmt() if m in metrics else ''}</td>" for m in reported)
            n = max((metrics[m]["n"] for m in reported[:1] if m in metrics), default=0)
            rows.append(f"<tr><td>{html.escape(group_key)}</td><td>{html.escape(label)}</td><td>{n}</td>{cells}</tr>")
    head = "".join(f"<th>{m}</th>" for m in reported)
    return f"<table><thead><tr><th>by</th><th>group</th><th>mazes</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
