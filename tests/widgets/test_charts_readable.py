"""Charts that read without a manual, and charts without anywidget's frontend (static, redrawn in place)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

import hyperpod_rl.jupyter
from hyperpod_rl.jupyter import ServerFrontends
from hyperpod_rl.metrics.plots import (
    HARDWARE_AXES,
    PHASES,
    TRAINING_AXES,
    TRAINING_PANELS,
    bottleneck_verdict,
    hardware_layout,
    hardware_traces,
    training_layout,
    training_traces,
)
from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.widgets.metrics_panel import LIVE_CHARTS_HELP, MetricsPanel


def rec(step: int, **values: float) -> MetricRecord:
    return MetricRecord(run_id="r", step=step, total_steps=10, time_s=1000.0 + step, values=values)


RECORDS = [
    rec(
        s,
        **{
            "reward/avg_raw_reward": 0.1 * s,
            "reward/min_raw_reward": 0.0,
            "reward/max_raw_reward": 1.0,
            "policy/policy_loss": -0.01 * s,
            "policy/policy_kl": 0.001 * s,
            "policy/policy_entropy": 1.3,
            "policy/response_length": 4.0,
            "trainer/tokens_per_second": 900.0,
            "timing/generate": 0.6,
            "timing/policy_train": 0.3,
            "timing/step": 1.0,
        },
    )
    for s in range(1, 4)
]


def test_every_drawn_trace_has_a_named_legend_entry_beside_its_subplot() -> None:
    traces = training_traces(RECORDS)
    layout = training_layout()
    for t in traces:
        helper = t.get("line", {}).get("width") == 0 and not t.get("fill")  # the band's invisible lower edge
        if not helper:
            assert t.get("showlegend", True) and t["name"], t
        legend = t["legend"]
        assert legend in layout and layout[legend]["xanchor"] == "left"  # each row's legend is its own, right of it
    by_row: dict[int, set[str]] = {}
    for t in traces:
        by_row.setdefault(t["row"], set()).add(t["legend"])
    assert all(len(v) == 1 for v in by_row.values()) and len({next(iter(v)) for v in by_row.values()}) == len(TRAINING_PANELS)
    assert {t["name"] for t in traces if t["row"] == 2} == {"policy loss", "KL", "entropy"}
    assert [t["name"] for t in traces if t["type"] == "bar"] == list(PHASES)


def test_axes_carry_units_and_figures_fill_the_width() -> None:
    layout = training_layout()
    titles = [layout["yaxis" if i == 1 else f"yaxis{i}"]["title"]["text"] for i in range(1, len(TRAINING_AXES) + 1)]
    assert titles == list(TRAINING_AXES) and "seconds" in titles and "tokens/s" in titles
    assert layout[f"xaxis{len(TRAINING_AXES)}"]["title"]["text"] == "training step"
    assert layout["autosize"] is True and "width" not in layout
    # rewards can be negative (maze: a wall or a revisit costs): the axis claims no range and fixes none
    assert "0-1" not in titles[0] and "range" not in layout["yaxis"]
    hw = hardware_layout()
    for lay, axes in ((layout, TRAINING_AXES), (hw, HARDWARE_AXES)):
        # each y title fits beside its row (7 px a character at plotly's 12 px font), not across the next one
        rows, plot_px = len(axes), lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
        row_px = plot_px * (1 - (rows - 1) * 0.05) / rows
        assert all(7 * len(t) <= row_px for t in axes), (axes, row_px)
    assert [hw["yaxis" if i == 1 else f"yaxis{i}"]["title"]["text"] for i in range(1, 5)] == list(HARDWARE_AXES)
    assert "GiB" in HARDWARE_AXES and hw["xaxis4"]["title"]["text"] == "time (UTC)" and "width" not in hw
    gib = 1024**3
    hw_traces = hardware_traces({"10.0.0.1": [(1.0, {"cpu_percent": 5.0, "mem_used_bytes": 2 * gib})]})
    assert [(t["name"], t["legend"], t["y"]) for t in hw_traces] == [
        ("10.0.0.1 CPU", "legend", [5.0]),
        ("10.0.0.1 memory", "legend2", [2.0]),
    ]


def test_verdict_names_the_phase_with_the_legend_word() -> None:
    verdict = bottleneck_verdict(RECORDS)
    phase = verdict.split(" takes ")[0]
    assert phase in PHASES and phase == "generate"
    assert verdict == "generate takes 60% of step time (last 3 steps)"


def test_static_charts_without_anywidget_are_redrawn_in_place_and_say_how_to_go_live(monkeypatch) -> None:
    # the server's page loads plotly's renderer but not anywidget's frontend (a stock Studio space)
    stock = ServerFrontends(
        jupyterlab_version="4.5.11", extensions={"jupyterlab-plotly": True, "@jupyter-widgets/jupyterlab-manager": True}
    )
    monkeypatch.setattr(hyperpod_rl.jupyter, "server_frontends", lambda: stock)
    panel = MetricsPanel(hardware=None)
    try:
        assert panel.live is False
        assert isinstance(panel.training, go.Figure) and not isinstance(panel.training, go.FigureWidget)
        assert panel.notice.value and "anywidget" in panel.notice.value and "restart-jupyter-server" in LIVE_CHARTS_HELP
        assert panel.training_out in panel.children and panel.notice in panel.children
        panel._on_records(RECORDS[:2])  # what the poller thread calls with new records
        (first,) = panel.training_out.outputs
        fig = first["data"]["application/vnd.plotly.v1+json"]
        assert fig["data"][2]["x"] == [1, 2] and fig["config"]["responsive"] is True
        assert "Plotly.newPlot" in first["data"]["text/html"] and "plotly.js v" not in first["data"]["text/html"]
        panel._on_records(RECORDS)
        (second,) = panel.training_out.outputs  # replaced, not appended
        assert second["data"]["application/vnd.plotly.v1+json"]["data"][2]["x"] == [1, 2, 3]
        # the server has plotly's renderer, so the 4.9 MB of plotly.js is not saved into the notebook
        # (it rides along only where the server is known to lack jupyterlab-plotly)
        assert panel._plotlyjs.outputs == ()
    finally:
        panel.close()


def test_static_charts_asked_for_do_not_claim_anywidget_is_missing(monkeypatch) -> None:
    """Tutorial 01 asks for static charts (``live_charts=False``) on a server that has anywidget (issue 31)."""
    with_anywidget = ServerFrontends(jupyterlab_version="4.5.11", extensions={"jupyterlab-plotly": True, "anywidget": True})
    for frontends in (with_anywidget, None):  # None: no Jupyter server in sight
        monkeypatch.setattr(hyperpod_rl.jupyter, "server_frontends", lambda f=frontends: f)
        panel = MetricsPanel(hardware=None, live=False)
        try:
            assert isinstance(panel.training, go.Figure) and not isinstance(panel.training, go.FigureWidget)
            assert panel.notice.value == "" and panel.training_out in panel.children
        finally:
            panel.close()


def test_live_panel_keeps_figure_widgets_without_notice() -> None:
    panel = MetricsPanel(hardware=None, live=True)
    try:
        assert isinstance(panel.training, go.FigureWidget) and panel.notice.value == ""
        assert panel.training._config["responsive"] is True
        assert panel._plotlyjs.outputs == () and panel.training in panel.children
    finally:
        panel.close()


@pytest.mark.parametrize("live", [True, False])
def test_no_jupyter_server_means_live(live: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.jupyter import ServerFrontends
    from hyperpod_rl.widgets import metrics_panel

    frontends = ServerFrontends("4.5.11", {"anywidget": live, "@jupyter-widgets/jupyterlab-manager": True})
    monkeypatch.setattr("hyperpod_rl.jupyter.server_frontends", lambda *a, **k: frontends)
    assert metrics_panel.live_widgets_available() is live
    monkeypatch.setattr("hyperpod_rl.jupyter.server_frontends", lambda *a, **k: None)
    assert metrics_panel.live_widgets_available() is True


class _Nodes:
    """A hardware source whose nodes change between samples (a GPU worker joining a CPU head),
    each sample shaped as :func:`hyperpod_rl.metrics.hardware.parse_ray_metrics` returns it."""

    def __init__(self) -> None:
        self.now: dict[str, dict[str, float]] = {"10.0.0.1": {"cpu_percent": 12.0, "mem_used_bytes": 3 * 1024**3}}

    def sample(self) -> dict[str, dict[str, float]]:
        return {node: dict(values) for node, values in self.now.items()}


@pytest.mark.parametrize("live", [True, False])
def test_a_cpu_node_draws_cpu_and_memory_with_legends_and_a_time_axis(monkeypatch, live: bool) -> None:
    """Issue 31 item 8: on a CPU node the hardware figure had blank GPU subplots, no time axis and no CPU legend."""
    monkeypatch.setattr(hyperpod_rl.jupyter, "server_frontends", lambda: None)
    nodes = _Nodes()
    panel = MetricsPanel(hardware=nodes, hardware_period_s=3600, live=live)
    try:
        panel.stream.stop()  # its poller samples once at start too: only this test's polls from here on
        panel.poll_hardware()
        fig = panel.hardware_fig.to_plotly_json()
        polled = len(fig["data"][0]["x"])
        titles = [a["text"] for a in fig["layout"]["annotations"]]
        assert titles == ["CPU (%)", "memory (GiB)"]
        assert fig["layout"]["xaxis2"]["title"]["text"] == "time (UTC)" and "xaxis3" not in fig["layout"]
        assert fig["layout"]["showlegend"] is True  # plotly hides a legend holding one trace unless told
        assert [(t["name"], t["legend"]) for t in fig["data"]] == [("10.0.0.1 CPU", "legend"), ("10.0.0.1 memory", "legend2")]
        if not live:  # the static output is the figure drawn, not the empty one the panel started with
            (out,) = panel.hardware_out.outputs
            assert len(out["data"]["application/vnd.plotly.v1+json"]["data"]) == 2
        # a GPU worker joins: the GPU rows appear, with the time axis under the last one
        nodes.now["10.0.0.2"] = {"cpu_percent": 50.0, "mem_used_bytes": 1024**3, "gpu_percent": 90.0, "gram_used_bytes": 2 * 1024**3}
        panel.poll_hardware()
        fig = panel.hardware_fig.to_plotly_json()
        assert [a["text"] for a in fig["layout"]["annotations"]] == ["CPU (%)", "memory (GiB)", "GPU (%)", "GPU memory (GiB)"]
        assert fig["layout"]["xaxis4"]["title"]["text"] == "time (UTC)"
        assert {t["name"] for t in fig["data"] if t["yaxis"] == "y3"} == {"10.0.0.2 GPU"}
        assert [len(t["x"]) for t in fig["data"] if t["name"] == "10.0.0.1 CPU"] == [polled + 1]  # history kept across the redraw
        if live:
            assert panel.hardware_view.children == (panel.hardware_fig,)
    finally:
        panel.close()
