"""Several Ray nodes on one machine: placement on a worker's resources, and losing that worker."""

from __future__ import annotations

import shlex
import sys
import time

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.cluster, pytest.mark.job]  # a worker node of its own


def test_job_on_a_lost_worker_node_is_reported_failed(local_cluster):
    from ray.job_submission import JobStatus

    raylet = local_cluster.add_worker(num_cpus=1, num_gpus=2, resources={"maze_worker": 1})
    client = local_cluster.job_client()
    # The entrypoint needs the worker's custom resource, so it runs on that node.
    script = "import time; print('node-job-started', flush=True); time.sleep(600)"
    sub = client.submit_job(
        entrypoint=f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}",
        entrypoint_resources={"maze_worker": 1},
        submission_id=f"hprl-lost-node-{int(time.time())}",
    )
    deadline = time.time() + 120
    while "node-job-started" not in client.get_job_logs(sub):
        assert time.time() < deadline, client.get_job_info(sub)
        time.sleep(0.5)
    assert client.get_job_status(sub) == JobStatus.RUNNING
    local_cluster.kill_worker(raylet)
    deadline = time.time() + 180
    while not client.get_job_status(sub).is_terminal():
        assert time.time() < deadline, "the job of a killed node never ended"
        time.sleep(1)
    info = client.get_job_info(sub)
    assert info.status == JobStatus.FAILED
    assert info.message
