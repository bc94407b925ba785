"""A notebook that shows the studio stays light when saved (issue 32 item 7).

Field report: notebook 01's executed copy was 11 MB, mostly plotly widget state: each live
``FigureWidget`` (an anywidget) saves about 5 MB of JavaScript with the notebook. Notebook 01 shows
the Metrics tab as static figures redrawn in place (``hp.studio(..., live_charts=False)``), one
``Output`` widget per figure; closing the panel closes its figure widgets too.
"""

from __future__ import annotations

import json
import time

import ipywidgets as w
import pytest

from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.widgets.metrics_panel import MetricsPanel


def _saved_bytes() -> int:
    """Size of the widget state a notebook would save now (every open widget, defaults included)."""
    return len(json.dumps(w.Widget.get_manager_state(drop_defaults=False)))


def _records(n: int) -> list[MetricRecord]:
    values = {"reward/avg_raw_reward": 0.1, "policy/policy_loss": -0.01, "timing/step": 1.5, "timing/generate": 1.0}
    return [MetricRecord(run_id="light", step=i, total_steps=n, time_s=time.time() + i, values=values) for i in range(1, n + 1)]


@pytest.fixture(autouse=True)
def _no_widgets_left():
    w.Widget.close_all()
    yield
    w.Widget.close_all()


def test_static_charts_of_a_60_step_run_save_under_half_a_megabyte() -> None:
    panel = MetricsPanel(hardware=None, live=False)
    panel._on_records(_records(60))
    assert panel.renders >= 1 and panel.training_out.outputs  # drawn, in place
    assert _saved_bytes() < 500_000
    panel.close()


def test_a_live_figure_widget_is_the_heavy_part_and_close_drops_it() -> None:
    panel = MetricsPanel(hardware=None, live=True)
    assert _saved_bytes() > 4_000_000  # the anywidget's JavaScript: why notebook 01 draws static figures
    panel.close()
    assert _saved_bytes() < 100_000, "closing the panel left its figure widget open"


def test_notebook_01_shows_static_charts_and_deletes_only_its_own_serving_app() -> None:
    import nbformat

    from tests.test_notebooks import NOTEBOOKS

    nb = nbformat.read(NOTEBOOKS / "01-quickstart-local.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "live_charts=False" in code
    assert "shutdown_local(client)" not in code  # that deleted whatever app was deployed
    assert "ui.serve.undeploy()" in code and '"app_name":' in code
