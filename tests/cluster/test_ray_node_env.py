"""``RAY_NODE_ENV``: the pinned Ray's dashboard-agent deadlock, reproduced, and its workaround in force.

Field report (CI at stop 52): one worker's local cluster stopped answering mid-suite. The
dashboard agent's metrics port timed out, every job submission got HTTP 504 from the dashboard,
and seven tests failed, most after 300 s each. Ray 2.56.0's ``OpenTelemetryMetricRecorder`` takes
two locks in opposite orders when a new metric is registered during a scrape
(ray-project/ray#64946, fixed in 2.57.0). The local cluster and the cluster image therefore start
Ray with ``RAY_enable_open_telemetry=0`` (:data:`hyperpod_rl.cluster.versions.RAY_NODE_ENV`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from hyperpod_rl.cluster.versions import RAY_NODE_ENV
from hyperpod_rl.metrics.hardware import RayPrometheusSource

ROOT = Path(__file__).resolve().parents[2]

# Registers new gauges in the main thread while a second thread scrapes, as the agent's gRPC
# Export handler and its Prometheus HTTP thread do. Prints DEADLOCK once both threads have sat
# for 2 s in the two lock acquisitions of ray-project/ray#64946, or DONE when 20,000 gauges
# were registered without it.
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
    """The reason for ``RAY_NODE_ENV``, reproduced in a child process (a deadlocked thread cannot be
    stopped, so never in pytest's). When this fails with DONE, the Ray in use has the fix
    (ray-project/ray#64946, Ray 2.57.0): drop ``RAY_enable_open_telemetry`` from
    ``RAY_NODE_ENV`` and from ``container/Dockerfile``."""
    proc = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "DEADLOCK", proc.stdout[-500:] + proc.stderr[-2000:]


def test_the_cluster_image_sets_the_same_ray_node_env():
    env = dict(re.findall(r"^\s*(?:ENV\s+)?(RAY_\w+)=(\S+?)\s*\\?$", (ROOT / "container" / "Dockerfile").read_text(), flags=re.MULTILINE))
    assert {k: env.get(k) for k in RAY_NODE_ENV} == RAY_NODE_ENV


def _agent_of(cluster) -> psutil.Process:
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if "dashboard/agent.py" in cmd and cluster.state.temp_dir in cmd:
            return proc
    pytest.fail(f"no dashboard agent with --temp-dir {cluster.state.temp_dir} is running")


@pytest.mark.ray
def test_the_local_clusters_agent_runs_with_it_and_still_serves_node_metrics(local_cluster):
    """The agent has the variable, and the metrics export port still gives the node gauges the
    hardware panel reads (OpenCensus path: same ``ray_node_*`` names)."""
    environ = _agent_of(local_cluster).environ()
    assert {k: environ.get(k) for k in RAY_NODE_ENV} == RAY_NODE_ENV
    source = RayPrometheusSource([local_cluster.state.metrics_export_port])
    deadline = time.monotonic() + 60
    while True:
        sample = source.sample()
        if any({"cpu_percent", "mem_used_bytes"} <= set(values) for values in sample.values()):
            break
        assert time.monotonic() < deadline, f"no node CPU and memory gauges within 60 s: {sample}"
        time.sleep(1)
