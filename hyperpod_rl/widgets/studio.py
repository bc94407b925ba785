"""``studio()``: the four panels in tabs, wired together (Run feeds Metrics)."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from hyperpod_rl.widgets.cluster_panel import ClusterPanel
from hyperpod_rl.widgets.metrics_panel import MetricsPanel
from hyperpod_rl.widgets.run_panel import RunPanel
from hyperpod_rl.widgets.serve_panel import ServePanel

__all__ = ["Studio", "studio"]


class Studio(w.Tab):
    """Tabs Cluster / Run / Metrics / Serve; each panel is also an attribute."""

    def __init__(
        self,
        cluster: ClusterPanel,
        run: RunPanel,
        metrics: MetricsPanel,
        serve: ServePanel,
    ) -> None:
        super().__init__(
            children=[cluster, run, metrics, serve],
            titles=("Cluster", "Run", "Metrics", "Serve"),
        )
        self.cluster = cluster
        self.run = run
        self.metrics = metrics
        self.serve = serve
        # Figures drawn while their tab was hidden measured no width: refit when the tab is shown.
        self.observe(lambda change: metrics.refit() if change["new"] == 2 else None, names="selected_index")


def studio(
    config: Any = None,
    *,
    kind: str = "local",
    cluster: Any = None,
    hardware: Any = "auto",
    serve_kwargs: dict[str, Any] | None = None,
    live_charts: bool | None = None,
    **run_kwargs: Any,
) -> Studio:
    """All panels in tabs: launch the cluster, submit and watch a run, serve the adapter.

    Example:
        >>> from hyperpod_rl.widgets import studio
        >>> studio(config)  # doctest: +SKIP

    Args:
        config: initial ``RunConfig`` (or dict) of the Run tab.
        kind: ``"local"`` or ``"hyperpod"`` for the Cluster tab.
        cluster: a running cluster handle (``LocalCluster`` or HyperPod dashboard access).
        hardware: hardware source of the Metrics tab (see :class:`MetricsPanel`).
        serve_kwargs: keyword arguments of :class:`ServePanel`.
        live_charts: the Metrics tab's ``live`` (:class:`MetricsPanel`): ``False`` draws static
            figures redrawn in place, which keeps a saved notebook light (a live figure widget
            saves about 5 MB of JavaScript with it); ``None`` decides from the Jupyter server.
        **run_kwargs: more keyword arguments of :class:`RunPanel`.
    """
    metrics = MetricsPanel(hardware=hardware, live=live_charts)
    run = RunPanel(config, cluster=cluster, metrics=metrics, **run_kwargs)
    cluster_panel = ClusterPanel(kind, on_cluster=run.use_cluster)  # type: ignore[arg-type]  # a picked RayCluster feeds the Run tab
    serve = ServePanel(**(serve_kwargs or {}))
    return Studio(cluster_panel, run, metrics, serve)
