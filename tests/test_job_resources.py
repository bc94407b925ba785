"""Runs the cluster cannot hold, and stopping jobs that never started, on the session's real local Ray cluster.

Field reports (new-user trial):

* a ``trainer.device: cuda`` run submitted to a cluster without a GPU stayed PENDING forever, and
  ``hyperpod-rl job stop`` timed out on it;
* ``trainer.workers: 2`` on a busy 2-CPU local cluster waited for its workers forever, Ray Train
  retrying ``WorkerGroupStartupTimeoutError`` in the log;
* ``hp.stop_run`` (notebook 06) left the stopped run ``running`` until a reconcile (checked on a
  running job in ``tests/test_local_cluster_and_jobs.py``, which stops one anyway).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.jobs import latest_job, list_runs, stop_run
from hyperpod_rl.paths import run_dir
from hyperpod_rl.quickstart import make_run_config
from tests.ray_jobs import submit, wait_terminal

pytestmark = [pytest.mark.ray, pytest.mark.job]


def _config(setup, run_id: str, **sections):
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    for name, values in sections.items():
        data[name].update(values)
    return type(cfg).build(data)


def _totals(client) -> dict[str, float]:
    from hyperpod_rl.cluster.resources import node_resources

    nodes = node_resources(client)
    assert nodes, "the local cluster's dashboard answers Ray's state API"
    return {k: sum(n.get(k, 0.0) for n in nodes) for k in ("CPU", "GPU")}


def _status(run_id: str, where=None) -> str | None:
    manifest = (where or run_dir(run_id)) / "manifest.json"
    return json.loads(manifest.read_text()).get("status") if manifest.is_file() else None


def _hold_cpus(client, cpus: float) -> str:
    """A job that holds ``cpus`` of the cluster's CPUs (a busy cluster)."""
    sid = client.submit_job(entrypoint="sleep 600", entrypoint_num_cpus=cpus, submission_id=f"hprl-test-hold-{time.time_ns()}")
    deadline = time.monotonic() + 120
    while client.get_job_status(sid).value != "RUNNING":
        assert time.monotonic() < deadline, client.get_job_info(sid)
        time.sleep(0.5)
    return sid


def test_runs_the_cluster_can_never_hold_are_refused_before_submitting(local_cluster, tiny_setup):
    client = local_cluster.job_client()
    totals = _totals(client)
    if totals["GPU"]:
        pytest.skip("this check needs a cluster without GPUs")
    with pytest.raises(ConfigError) as err:
        submit(client, _config(tiny_setup, "fit-cuda", trainer={"device": "cuda"}), run_dir("fit-cuda"))
    assert f"needs 1 GPU(s) but the cluster has 0 GPU(s) and {totals['CPU']:g} CPU(s)" in str(err.value)
    assert "set trainer.device to 'auto'" in str(err.value)
    workers = int(totals["CPU"]) + 1
    cfg = _config(tiny_setup, "fit-workers", trainer={"workers": workers}, data={"prompts_per_step": workers})
    with pytest.raises(
        ConfigError, match=rf"needs trainer.workers={workers} workers of 1 CPU each on one node .* set trainer.workers to at most"
    ):
        submit(client, cfg, run_dir("fit-workers"))
    assert not [j for j in list_runs(client) if j["run_id"] in ("fit-cuda", "fit-workers")]  # nothing was submitted
    assert not run_dir("fit-cuda").joinpath("submissions.json").exists()


def test_job_stop_cancels_a_pending_job_and_records_stopped(local_cluster, tiny_setup):
    """A job waiting for resources (here: every CPU held by another job) is stopped by
    ``hyperpod-rl job stop`` within seconds, and the run records ``stopped``."""
    from hyperpod_rl.jobs import submit_run

    client = local_cluster.job_client()
    hold = _hold_cpus(client, _totals(client)["CPU"])
    try:
        handle = submit_run(client, _config(tiny_setup, "stop-pending"), run_dir("stop-pending"), entrypoint_num_cpus=1)
        time.sleep(2)
        assert latest_job(client, "stop-pending").status == "PENDING"
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "hyperpod_rl.cli", "job", "stop", "stop-pending", "--timeout-s", "60"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
            timeout=180,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"{handle.submission_id}: stopped; run stop-pending recorded stopped" in proc.stdout
        assert time.monotonic() - started < 90
        assert client.get_job_status(handle.submission_id).is_terminal()
        assert _status("stop-pending") == "stopped"
        assert not [j for j in client.list_jobs() if (j.submission_id or "").startswith("hprl-cancel-")]  # the helper is gone
    finally:
        stop_run(client, hold)


def test_workers_that_cannot_start_fail_the_job_once_with_a_clear_message(local_cluster, tiny_setup, tmp_path):
    """The trial's input: trainer.workers equal to the cluster's CPUs while another job holds one."""
    client = local_cluster.job_client()
    workers = int(_totals(client)["CPU"])
    cfg = _config(tiny_setup, "busy-workers", trainer={"workers": workers, "torch_threads": 1}, data={"prompts_per_step": workers})
    hold = _hold_cpus(client, 1)
    try:
        from hyperpod_rl.jobs import submit_run

        handle = submit_run(client, cfg, tmp_path / "busy-workers", env_vars={"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "5"})
        status = wait_terminal(client, handle.submission_id, timeout_s=300)
        logs = client.get_job_logs(handle.submission_id)
        assert status == "FAILED", logs[-3000:]
        assert f"the {workers} workers of run 'busy-workers' (1 CPU each, on one node) could not start within 5 s" in logs, logs[-3000:]
        assert f"error: the {workers} workers of run" in logs and logs.count("could not start within") == 1  # one clear line
        assert "set trainer.workers lower" in logs
        assert logs.count("[FailurePolicy] RETRY") == 0  # no retry loop
        assert _status("busy-workers", tmp_path / "busy-workers") == "failed"
    finally:
        stop_run(client, hold)
