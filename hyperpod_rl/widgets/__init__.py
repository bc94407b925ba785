"""Notebook panels (the UI layer): cluster, run, metrics and serving, alone or in ``studio()``.

Every panel is thin over the public API (``hyperpod_rl.cluster``, ``hyperpod_rl.jobs``,
``hyperpod_rl.serve``); long work runs on background threads, errors show inside the panel,
and secrets (cluster tokens, cookies) stay in Python attributes, never in widget state.
"""

from hyperpod_rl.widgets.cluster_panel import ClusterPanel
from hyperpod_rl.widgets.hyperpod_picker import HyperPodPicker
from hyperpod_rl.widgets.metrics_panel import MetricsPanel
from hyperpod_rl.widgets.run_panel import RunPanel
from hyperpod_rl.widgets.serve_panel import ServePanel, draw_path
from hyperpod_rl.widgets.studio import Studio, studio

__all__ = [
    "ClusterPanel",
    "HyperPodPicker",
    "MetricsPanel",
    "RunPanel",
    "ServePanel",
    "Studio",
    "draw_path",
    "studio",
]
