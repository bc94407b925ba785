"""The HTML drawing shared by evaluation views: a plotly bar chart of rates with 95% intervals.

It knows nothing of results or comparisons (they draw themselves with it: ``EvalResult._repr_html_``,
``Comparison._repr_html_``), so imports point one way: ``result`` / ``compare`` -> ``report``.
"""

from __future__ import annotations

from hyperpod_rl.eval.stats import Interval

__all__ = ["bar_figure"]


def bar_figure(series: dict[str, dict[str, Interval]], title: str) -> str:
    """Grouped bars (one group per series name, one bar per metric) with asymmetric error bars; an HTML fragment."""
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
