"""Real widgets driven by ``.value`` and ``.click()`` against the real local Ray cluster."""

from __future__ import annotations

import json
import time

import ipywidgets
import pytest

from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.widgets import ClusterPanel, MetricsPanel, RunPanel, studio

pytestmark = [pytest.mark.ray, pytest.mark.job]


def _wait(predicate, timeout_s: float, what: str, panel=None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    errors = panel.errors if panel is not None else []
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; panel errors: {errors}")


def _click_submit(run, timeout_s: float = 60.0) -> None:
    """Click Submit; a freshly started Ray head can answer "no available agent, try again later"
    for its first seconds, and the panel shows that error: click again, as a user would."""
    deadline = time.monotonic() + timeout_s
    while True:
        run.errors.clear()
        run.submit_button.click()
        if not run.errors or "try again later" not in run.errors[-1] or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert run.errors == [], run.errors


@pytest.fixture
def panels(local_cluster, tiny_setup, tmp_path):
    config = make_run_config(
        tiny_setup["opts"],
        run_id="widget-run",
        model_path=tiny_setup["model_dir"],
        revision=tiny_setup["revision"],
        data=tiny_setup["data"],
    )
    metrics = MetricsPanel(hardware="auto", interval_s=0.25, hardware_period_s=1.0)
    run = RunPanel(
        config,
        cluster=local_cluster,
        metrics=metrics,
        run_dir_of=lambda rid: tmp_path / rid,
        poll_s=0.5,
    )
    yield run, metrics
    metrics.close()


def test_submit_watch_and_stop_a_run_from_the_panels(panels, local_cluster):
    run, metrics = panels
    run.form.widget("trainer.steps").value = 400  # long enough to still be running when stopped
    run.form.widget("checkpoint.interval").value = 0
    _click_submit(run)
    assert run.handle is not None and run.handle.submission_id == "hprl-widget-run-1"
    _wait(lambda: run.status == "RUNNING", 60, "RUNNING", run)
    assert "RUNNING" in run.status_html.value

    reward = metrics.training.data[2]  # mean reward trace
    _wait(lambda: len(reward.x) >= 2, 120, "two reward points in the figure", metrics)
    first = len(reward.x)
    _wait(lambda: len(reward.x) > first, 60, "the reward chart to gain a point", metrics)
    assert list(reward.x) == sorted(reward.x)
    bars = [t for t in metrics.training.data if t.type == "bar"]
    assert [t.name for t in bars] == ["generate", "train", "weight sync", "other"]
    assert len(bars[0].x) >= 2 and sum(bars[0].y) > 0
    assert " takes " in metrics.verdict.value and "% of step time" in metrics.verdict.value
    assert "step" in metrics.summary.value

    run.stop_button.click()
    _wait(lambda: run.status == "STOPPED", 60, "STOPPED", run)
    assert run.stop_button.disabled
    assert run.wait_idle(120)
    assert run.errors == [] and metrics.errors == []
    from hyperpod_rl.runs import read_provenance

    assert read_provenance(run.handle.run_dir)["status"] == "stopped"  # recorded, not left 'running'

    # Reattach from the run id alone (what a fresh kernel does).
    again = RunPanel(cluster=local_cluster, run_dir_of=run.run_dir_of)
    again.attach_id.value = "widget-run"
    again.attach_button.click()
    assert again.errors == [] and again.handle.submission_id == "hprl-widget-run-1"
    _wait(lambda: again.status == "STOPPED", 30, "the reattached status", again)
    assert again.form.widget("trainer.steps").value == 400
    rows = again.refresh_runs()
    assert any(r["run_id"] == "widget-run" and r["status"] == "STOPPED" for r in rows)


def test_hardware_chart_from_the_local_cluster_metrics_port(panels, local_cluster):
    _, metrics = panels
    # Ray's reporter exports a node's metrics some seconds after the node starts (the session cluster
    # may have just been started, or restarted by a test before this one): until then the panel says so
    samples, shown = [], []

    def poll():
        samples.append(metrics.poll_hardware())
        shown.append(metrics.hardware_status.value)
        return samples[-1]

    _wait(poll, 90, "a node in Ray's Prometheus metrics", metrics)
    assert all("no node metrics yet" in text for got, text in zip(samples, shown, strict=True) if not got)
    assert "1 node(s)" in shown[-1]
    sample = samples[-1]
    node = next(iter(sample.values()))
    assert 0 <= node["cpu_percent"] <= 100 and node["mem_used_bytes"] > 0
    assert metrics.hardware_fig is not None and any(len(t.x) >= 1 for t in metrics.hardware_fig.data)


def test_validate_shows_every_error_at_once(panels):
    run, _ = panels
    run.form.widget("run_id").value = "X"
    run.form.widget("grpo.group_size").value = 1
    run.form.widget("lora.rank").value = 0
    run.validate_button.click()
    shown = run.validation.value
    assert "run_id" in shown and "grpo.group_size" in shown and "lora.rank" in shown
    assert any("invalid run config" in e for e in run.errors)
    run.submit_button.click()  # refused before anything reaches the cluster
    assert run.handle is None


def test_no_secret_reaches_widget_state(panels, local_cluster):
    run, metrics = panels
    run.refresh_runs()
    metrics.poll_hardware()
    token = local_cluster.state.token

    def walk(widget):
        yield widget
        for child in getattr(widget, "children", ()):
            yield from walk(child)

    cluster_panel = ClusterPanel("local")  # finds the running session cluster through its state file
    assert cluster_panel.state == "ready", cluster_panel.errors
    assert local_cluster.dashboard_url in cluster_panel.link.value
    widgets = [
        *walk(run),
        *walk(metrics),
        *walk(cluster_panel),
        *walk(studio(hardware=None)),
    ]
    states = [json.dumps(wid.get_state(), default=str) for wid in widgets]
    assert len(states) > 50 and any(isinstance(wid, ipywidgets.Text) for wid in widgets)
    assert not any(token in s for s in states)
