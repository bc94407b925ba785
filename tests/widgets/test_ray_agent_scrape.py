"""The local hardware panel reads the dashboard's node summary, never the agent's Prometheus port.

Field report (CI at stop 52): one worker's local cluster stopped answering mid-suite. The dashboard
agent's metrics port timed out, every job submission got HTTP 504 from the dashboard, and seven
tests failed, five of them after 300 s each. In Ray 2.56.0 the agent's ``OpenTelemetryMetricRecorder``
takes two locks in opposite orders when a metric is registered during a scrape
(ray-project/ray#64946, fixed in 2.57.0), and the notebook panels scraped that port every 5 s.
``RAY_enable_open_telemetry=0`` was tried and dropped: its OpenCensus path answers ``/metrics``
with HTTP 500 once Serve runs (caught by ``tests/serve/test_local_serving.py``'s listener probe).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from hyperpod_rl.errors import HyperpodRLError
from hyperpod_rl.metrics.hardware import RayDashboardSource, parse_node_summary

_RACE = textwrap.dedent(
    """
    import os, sys, threading, time
    from prometheus_client import REGISTRY, generate_latest
    from ray._private.telemetry.open_telemetry_metric_recorder import OpenTelemetryMetricRecorder

    rec = OpenTelemetryMetricRecorder()
    done = threading.Event()

    def scrape():
        while not done.is_set():
            generate_latest(REGISTRY)

    def register():
        for i in range(20000):
            rec.register_gauge_metric(f"g{i}", "d")
            rec.set_metric_value(f"g{i}", {"k": "v"}, 1.0)
        done.set()

    threads = [threading.Thread(target=f, daemon=True) for f in (scrape, register)]
    for t in threads:
        t.start()

    def parked():
        frames = sys._current_frames()
        names = [[f.f_code.co_name for f in _walk(frames.get(t.ident))] for t in threads]
        return "callback" in names[0] and "register_asynchronous_instrument" in names[1]

    def _walk(frame):
        while frame is not None:
            yield frame
            frame = frame.f_back

    stuck_since = None
    while not done.is_set():
        time.sleep(0.2)
        if parked():
            stuck_since = stuck_since or time.monotonic()
            if time.monotonic() - stuck_since > 2:
                print("DEADLOCK", flush=True)
                os._exit(0)
        else:
            stuck_since = None
    print("DONE", flush=True)
    """
)


def test_the_pinned_ray_deadlocks_registering_a_metric_during_a_scrape():
    """Why the local hardware panel never scrapes the agent, reproduced in a child process (a
    deadlocked thread cannot be stopped, so never in pytest's). When this fails with DONE, the Ray
    in use has the fix (ray-project/ray#64946, Ray 2.57.0), and scraping is safe again."""
    proc = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "DEADLOCK", proc.stdout[-500:] + proc.stderr[-2000:]


#: A GPU node and a node that has not reported yet, as Ray 2.56's dashboard sends them (trimmed).
SUMMARY = {
    "result": True,
    "data": {
        "summary": [
            {
                "ip": "10.0.0.7",
                "cpu": 12.5,
                "mem": [64 * 2**30, 48 * 2**30, 25.0, 16 * 2**30],
                "gpus": [
                    {"index": 0, "utilizationGpu": 80, "memoryUsed": 1000, "memoryTotal": 81559},
                    {"index": 1, "utilizationGpu": None, "memoryUsed": 24, "memoryTotal": 81559},
                ],
            },
            {"ip": "10.0.0.8", "raylet": {"state": "ALIVE"}},
        ]
    },
}


def test_a_node_summary_gives_the_panels_sample():
    sample = parse_node_summary(SUMMARY)
    assert sample == {
        "10.0.0.7": {
            "cpu_percent": 12.5,
            "mem_total_bytes": float(64 * 2**30),
            "mem_used_bytes": float(16 * 2**30),
            "gpu_percent": 40.0,  # mean over the node's GPUs; one not reporting counts 0
            "gram_used_bytes": 1024.0 * 2**20,  # megabytes, as Ray fills them
        }
    }


@pytest.mark.parametrize("payload", [{}, {"data": {}}, {"data": {"summary": [{"ip": "x", "cpu": "busy", "mem": [1, 2, 3, 4]}]}}])
def test_a_body_that_is_no_node_summary_is_a_clear_error(payload):
    with pytest.raises(HyperpodRLError, match="not a Ray node summary"):
        parse_node_summary(payload)


@pytest.mark.ray
def test_the_panels_local_source_is_the_dashboard_and_it_samples_the_node(local_cluster):
    """``MetricsPanel(hardware="auto")`` on the local cluster reads the dashboard with the cluster's
    token, and the node's CPU and memory come back; without the token the dashboard refuses."""
    from hyperpod_rl.widgets.metrics_panel import _auto_hardware

    source = _auto_hardware()
    assert isinstance(source, RayDashboardSource) and source.url == f"{local_cluster.dashboard_url}/nodes?view=summary"
    assert local_cluster.state.token not in repr(source)
    deadline = time.monotonic() + 60
    while True:
        sample = source.sample()
        if any({"cpu_percent", "mem_used_bytes", "mem_total_bytes"} <= set(values) for values in sample.values()):
            break
        assert time.monotonic() < deadline, f"no node CPU and memory within 60 s: {sample}"
        time.sleep(1)
    with pytest.raises(HyperpodRLError, match="answered 401"):
        RayDashboardSource(local_cluster.dashboard_url).sample()
