"""MetricsPanel: live training and hardware charts inline, fed by one background poller.

Two plotly ``FigureWidget``s (anywidget; about 5 MB of JS each, so one per metric group, not one
per chart): training (reward with a min-max band, policy loss / KL / entropy, response length,
tokens/s, stacked step-time breakdown) and hardware (CPU, memory, GPU, GPU memory per node).
Every update rewrites trace data inside ``batch_update()``, so one refresh is one batched comm
message per figure. Data comes from :class:`hyperpod_rl.metrics.stream.MetricStream` (a daemon
thread tailing ``<run dir>/metrics.jsonl``, plus records pushed from the job log by RunPanel),
never from a blocking loop in a cell.

**Without anywidget's frontend** in the Jupyter server (a stock SageMaker Studio space: plotly >= 6
``FigureWidget`` is an anywidget, and the server environment, not the kernel's, must carry its
JavaScript), the panel draws the same figures as static plotly figures instead: each refresh
replaces the figure in an ``Output`` widget in place, and the panel says once how to turn live
charts on (docs/studio.md). ``live=None`` decides from the server's page config
(:func:`hyperpod_rl.jupyter.server_frontends`); with no Jupyter server in sight it assumes live.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import ipywidgets as w

from hyperpod_rl.cluster.local import current_local_cluster
from hyperpod_rl.metrics.hardware import (
    HardwareSource,
    NodeSample,
    RayDashboardSource,
    source_from_env,
)
from hyperpod_rl.metrics.plots import (
    HARDWARE_PANELS,
    TRAINING_PANELS,
    bottleneck_verdict,
    hardware_layout,
    hardware_panels,
    hardware_traces,
    merge_records,
    training_layout,
    training_traces,
)
from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.metrics.stream import MetricsFileTail, MetricStream
from hyperpod_rl.runs import RunPaths, run_paths
from hyperpod_rl.widgets._base import Panel, escape

__all__ = ["LIVE_CHARTS_HELP", "MetricsPanel", "live_widgets_available"]

LIVE_CHARTS_HELP = (
    "Live charts are off: anywidget's frontend is not installed in this Jupyter server's environment "
    "(plotly's FigureWidget needs it there, not only in the kernel). Showing static charts, redrawn in place. "
    "To turn live charts on, run the Studio lifecycle script container/studio/on-start.sh, or install anywidget into "
    "the server's environment (in Studio: /opt/conda/bin/pip install anywidget) and run restart-jupyter-server (docs/studio.md)."
)
_PLOTLY_CONFIG = {"responsive": True, "displaylogo": False}


def live_widgets_available() -> bool:
    """True unless the Jupyter server's page is known to lack anywidget's frontend.

    Unknown (no Jupyter server found, or its page cannot be read) counts as available: the panel
    then behaves as it always did.
    """
    from hyperpod_rl.jupyter import server_frontends

    frontends = server_frontends()
    return frontends is None or frontends.enabled("anywidget")


def _figure(titles: tuple[str, ...], traces: list[dict[str, Any]], layout: dict[str, Any], *, live: bool = True):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=len(titles),
        cols=1,
        shared_xaxes=True,
        subplot_titles=titles,
        vertical_spacing=0.05,
    )
    for trace in traces:
        props = {k: v for k, v in trace.items() if k not in ("type", "row")}
        cls = go.Bar if trace["type"] == "bar" else go.Scatter
        fig.add_trace(cls(**props), row=trace["row"], col=1)
    fig.update_layout(**layout)
    if not live:
        return fig
    widget = go.FigureWidget(fig)
    widget._config = _PLOTLY_CONFIG  # follow window resizes; autosize fills the output's width
    return widget


def _static_output(fig: Any) -> dict[str, Any]:
    """A ``display_data`` output of ``fig``: plotly's mimetype (jupyterlab-plotly) and HTML (needs ``window.Plotly``)."""
    import plotly.io as pio

    spec = fig.to_plotly_json()
    html = pio.to_html(fig, include_plotlyjs=False, full_html=False, config=_PLOTLY_CONFIG, default_width="100%")
    return {
        "output_type": "display_data",
        "data": {"application/vnd.plotly.v1+json": {**spec, "config": _PLOTLY_CONFIG}, "text/html": html},
        "metadata": {},
    }


def _plotlyjs_output() -> dict[str, Any]:
    """plotly.js as an HTML script output (for servers without jupyterlab-plotly), sent once."""
    from plotly.offline import get_plotlyjs

    script = "<script type='text/javascript'>if (!window.Plotly) {" + get_plotlyjs() + "}</script>"
    return {"output_type": "display_data", "data": {"text/html": script}, "metadata": {}}


def _auto_hardware() -> HardwareSource | None:
    """Grafana or AMP when the environment configures one (HyperPod), else the local cluster."""
    configured = source_from_env()
    if configured is not None:
        return configured
    cluster = current_local_cluster()
    return RayDashboardSource(cluster.dashboard_url, headers=cluster.auth_headers()) if cluster is not None else None


class MetricsPanel(Panel):
    """Live charts of one run's metrics and of the cluster's hardware.

    Example:
        >>> panel = MetricsPanel(run_dir)  # doctest: +SKIP
        >>> panel  # renders in the notebook; the poller thread keeps it current  # doctest: +SKIP

    Args:
        run_dir: run directory to follow (``<storage root>/runs/<run_id>``); or call :meth:`follow`.
        run_id: the run to follow, by id (its directory under this environment's storage root);
            instead of ``run_dir``.
        hardware: a :mod:`hyperpod_rl.metrics.hardware` source (``RayDashboardSource``,
            ``GrafanaSource``, ``AMPSource``); ``"auto"`` uses the Grafana or AMP source the
            environment configures (:func:`~hyperpod_rl.metrics.hardware.source_from_env`), else
            reads the local cluster's node summary from its dashboard when one is running; ``None`` turns the hardware charts off.
        interval_s: seconds between polls of ``metrics.jsonl``.
        hardware_period_s: seconds between hardware samples.
        history: hardware samples kept per node.
        live: ``True`` for ``FigureWidget``s, ``False`` for static figures redrawn in place, ``None``
            to decide from the Jupyter server's frontends (:func:`live_widgets_available`).

    Attributes:
        training: the training ``FigureWidget`` (a plain ``go.Figure`` when not live).
        hardware_fig: the hardware ``FigureWidget`` (``None`` without a hardware source).
        live: whether the charts are live widgets.
        notice: the one-time "how to enable live charts" note: set only when the charts are static
            and the Jupyter server is known to lack anywidget's frontend.
        records: the records shown, one per step, sorted by step.
        arrivals: step -> Unix time (s) its record reached the figure data (latency benchmark).
        renders: training-figure refreshes so far.
        hardware_errors: failed hardware samples (each shown in the hardware status line).
    """

    def __init__(
        self,
        run_dir: str | Path | None = None,
        *,
        run_id: str | None = None,
        hardware: HardwareSource | str | None = "auto",
        interval_s: float = 0.5,
        hardware_period_s: float = 5.0,
        history: int = 720,
        live: bool | None = None,
    ) -> None:
        super().__init__()
        from hyperpod_rl.jupyter import server_frontends

        frontends = server_frontends()
        available = frontends is None or frontends.enabled("anywidget")  # as live_widgets_available()
        self.live = available if live is None else live
        # the note says anywidget is missing only where the server is known to lack it: static charts
        # asked for (live=False, e.g. tutorial 01's light notebook) on a server that has it say nothing of the kind
        self.notice = w.HTML("" if self.live or available else f"<div style='color:#8a6d3b'>{escape(LIVE_CHARTS_HELP)}</div>")
        self.training_out = w.Output(layout=w.Layout(width="100%"))
        self.hardware_out = w.Output(layout=w.Layout(width="100%"))
        self._plotlyjs = w.Output()
        if not self.live:
            # once, and only where the server is known to lack plotly's renderer: plotly.js is
            # 4.9 MB, saved with the notebook (an unknown server, e.g. nbclient, counts as having it)
            if frontends is not None and not frontends.enabled("jupyterlab-plotly"):
                self._plotlyjs.outputs = (_plotlyjs_output(),)  # the HTML outputs below need window.Plotly
        self.records: list[MetricRecord] = []
        self.arrivals: dict[int, float] = {}
        self.renders = 0
        self.run_dir: Path | None = None
        self._lock = threading.Lock()  # guards records / arrivals
        self._render_lock = threading.Lock()  # one figure update at a time (poller + job-log follower)
        self.training = _figure(TRAINING_PANELS, training_traces([]), training_layout(), live=self.live)
        self.verdict = w.HTML("<i>bottleneck: no step timings yet</i>")
        self.summary = w.HTML("<i>no run followed</i>")
        self._hardware: HardwareSource | None = _auto_hardware() if hardware == "auto" else hardware  # type: ignore[assignment]
        self._hw_history: dict[str, deque[tuple[float, dict[str, float]]]] = {}
        self._history = history
        self._hw_nodes: tuple[str, ...] = ()
        self.hardware_fig = None
        self.hardware_status = w.HTML("")
        self.hardware_errors = 0
        tasks = []
        if self._hardware is not None:
            # CPU and memory until a sample shows a GPU (hardware_panels): no blank GPU rows on a CPU node
            self.hardware_fig = _figure(HARDWARE_PANELS[:2], [], hardware_layout(2), live=self.live)
            self.hardware_view = w.VBox([self.hardware_fig if self.live else self.hardware_out], layout=w.Layout(width="100%"))
            tasks.append((hardware_period_s, self._poll_hardware_quietly))
        self.stream = MetricStream(
            self._on_records,
            interval_s=interval_s,
            on_error=self.show_error,
            extra_tasks=tasks,
        )
        training_view = self.training if self.live else self.training_out
        charts: list[w.Widget] = [self.notice, self._plotlyjs, self.summary, self.verdict, training_view]
        if self.hardware_fig is not None:
            charts += [
                w.HTML("<b>Hardware</b>"),
                self.hardware_status,
                self.hardware_view,
            ]
        self.children = (*charts, self.errors_out)
        if run_id is not None:
            run_dir = run_paths(run_id).root
        if run_dir is not None:
            self.follow(run_dir)
        elif self._hardware is not None:
            self.stream.start()

    def __repr__(self) -> str:
        return f"MetricsPanel(run_dir={str(self.run_dir)!r}, steps={len(self.records)})"

    # ----- feeding ----------------------------------------------------------------------------
    def follow(self, run_dir: str | Path) -> None:
        """Show the run in ``run_dir`` from its first step on (replaces the run shown)."""
        self.run_dir = Path(run_dir)
        self.stream.clear_sources()
        with self._lock:
            self.records = []
            self.arrivals = {}
        self._render()
        self.summary.value = f"following <code>{escape(self.run_dir.name)}</code>: waiting for the first step"
        self.stream.add_source(MetricsFileTail(RunPaths(self.run_dir).metrics))
        self.stream.start()

    def push(self, records: list[MetricRecord]) -> None:
        """Add records that came by another route (RunPanel pushes the job log's records)."""
        if self.run_dir is not None:
            records = [r for r in records if r.run_id == self.run_dir.name]
        self.stream.push(records)

    def refit(self) -> None:
        """Resize live figures to their output's current width (e.g. after their tab became visible:
        a figure first drawn in a hidden tab measures a zero width and keeps plotly's default)."""
        if self.live:
            for fig in (self.training, self.hardware_fig):
                if fig is not None:
                    # plotly_relayout sends nothing when autosize is already True; ask the view to redo it.
                    fig._send_relayout_msg({"autosize": True})

    def close(self) -> None:
        """Stop the poller thread and close the widgets, the figures among them (a live figure's
        widget state holds about 5 MB of JavaScript, which a saved notebook would keep)."""
        self.stream.stop()
        for child in (self.training, self.hardware_fig, self.training_out, self.hardware_out, self._plotlyjs):
            if isinstance(child, w.Widget):
                child.close()
        super().close()

    def _on_records(self, records: list[MetricRecord]) -> None:
        with self._lock:
            new_steps = {r.step for r in records} - {r.step for r in self.records}
            if not new_steps and all(r in self.records for r in records):
                return  # the same records by the other route: nothing to redraw
            self.records = merge_records(self.records, records)
        self._render()
        now = time.time()
        with self._lock:
            for step in new_steps:
                self.arrivals.setdefault(step, now)

    def _render(self) -> None:
        with self._render_lock:
            self._render_locked()

    def _render_locked(self) -> None:
        with self._lock:
            records = list(self.records)
        traces = training_traces(records)
        with self.training.batch_update():
            for trace, data in zip(self.training.data, traces, strict=True):
                trace.x = data["x"]
                trace.y = data["y"]
        if not self.live:
            self.training_out.outputs = (_static_output(self.training),)  # redrawn in place
        self.renders += 1
        self.verdict.value = f"<b>bottleneck:</b> {escape(bottleneck_verdict(records))}"
        if records:
            last = records[-1]
            reward = last.values.get("reward/avg_raw_reward")
            reward_txt = f" · mean reward {reward:.3f}" if reward is not None else ""
            self.summary.value = f"<code>{escape(last.run_id)}</code>: step {last.step}/{last.total_steps}{reward_txt}"

    # ----- hardware ---------------------------------------------------------------------------
    def _poll_hardware_quietly(self) -> None:
        """Poller task: a failed scrape (e.g. a timeout on a busy node) shows in the hardware
        status line and counts in :attr:`hardware_errors`; the next period tries again."""
        from hyperpod_rl.errors import HyperpodRLError

        try:
            self.poll_hardware()
        except HyperpodRLError:
            self.hardware_errors += 1

    def _replace_hardware_figure(self, traces: list[dict[str, Any]]) -> None:
        panels = hardware_panels(traces)
        old, self.hardware_fig = self.hardware_fig, _figure(panels, traces, hardware_layout(len(panels)), live=self.live)
        if self.live:
            self.hardware_view.children = (self.hardware_fig,)
            if isinstance(old, w.Widget):
                old.close()

    def poll_hardware(self) -> NodeSample:
        """Take one hardware sample and redraw the hardware figure (the poller calls this)."""
        if self._hardware is None or self.hardware_fig is None:
            return {}
        try:
            sample = self._hardware.sample()
        except Exception as err:
            self.hardware_status.value = f"<span style='color:#b00'>{escape(err)}</span>"
            raise
        now = time.time()
        for node, values in sample.items():
            self._hw_history.setdefault(node, deque(maxlen=self._history)).append((now, values))
        traces = hardware_traces({n: list(h) for n, h in self._hw_history.items()})
        from datetime import UTC, datetime

        for t in traces:
            t["x"] = [datetime.fromtimestamp(x, UTC).isoformat() for x in t["x"]]
        names = tuple(t["name"] for t in traces)
        if names != self._hw_nodes:  # a node, or a node's GPU, came or went: a figure with the rows it needs
            self._replace_hardware_figure(traces)
            self._hw_nodes = names
        fig = self.hardware_fig
        with fig.batch_update():
            for trace, t in zip(fig.data, traces, strict=True):
                trace.x, trace.y = t["x"], t["y"]
        if not self.live:
            self.hardware_out.outputs = (_static_output(fig),)
        if sample:
            self.hardware_status.value = f"{len(sample)} node(s), sampled {time.strftime('%H:%M:%S')}"
        else:  # Ray's reporter exports a node's metrics some seconds after the node starts
            self.hardware_status.value = (
                f"no node metrics yet (Ray exports them a few seconds after a node starts), sampled {time.strftime('%H:%M:%S')}"
            )
        return sample
