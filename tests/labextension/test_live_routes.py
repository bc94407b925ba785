"""The routes against a real local Ray cluster and a real (tiny) training run, and the extension's
readers checked against hyperpod-rl's own on that run's files (the on-disk contract)."""

from __future__ import annotations

import json

import pytest
import tornado
from hyperpod_rl_jupyterlab import store as ext_store

from hyperpod_rl.jobs import follow_run, latest_submission, submit_run
from hyperpod_rl.ledger import Ledger, ledger_path
from hyperpod_rl.metrics.schema import read_metrics
from hyperpod_rl.paths import run_dir
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.runs import read_provenance

pytestmark = pytest.mark.ray

RUN_ID = "lab-done"


@pytest.fixture(scope="module")
def finished_run(local_cluster, tiny_setup):
    """A 2-step run trained on the local cluster, to the end."""
    cfg = make_run_config(
        tiny_setup["opts"], run_id=RUN_ID, model_path=tiny_setup["model_dir"], revision=tiny_setup["revision"], data=tiny_setup["data"]
    )
    data = cfg.model_dump(mode="json")
    data["trainer"]["steps"] = 2
    client = local_cluster.job_client()
    handle = submit_run(client, type(cfg).build(data), run_dir(RUN_ID), fresh=True)
    updates = list(follow_run(client, handle.submission_id, poll_s=0.5))
    last = updates[-1] if updates else None
    assert last is not None and last.status == "SUCCEEDED", client.get_job_logs(handle.submission_id)[-3000:]
    return handle


async def test_runs_logs_clusters_and_stop_on_a_real_run(jp_fetch, finished_run, local_cluster):
    runs = json.loads((await jp_fetch("hyperpod-rl", "runs")).body)
    run = next(r for r in runs["runs"] if r["run_id"] == RUN_ID)
    assert (run["status"], run["ray_status"], run["cluster"]) == ("succeeded", "SUCCEEDED", "local")
    assert run["submission_id"] == finished_run.submission_id
    assert run["step"] == 2 and run["total_steps"] == 2 and len(run["rewards"]) == 2 and run["has_adapter"]

    logs = json.loads((await jp_fetch("hyperpod-rl", "runs", RUN_ID, "logs", params={"lines": "500"})).body)
    assert logs["source"] == "ray:local" and any("HPRL_METRIC" in line for line in logs["lines"])

    clusters = json.loads((await jp_fetch("hyperpod-rl", "clusters")).body)["clusters"]
    assert clusters[0]["name"] == "local" and clusters[0]["reachable"] is True, clusters

    stop = json.loads((await jp_fetch("hyperpod-rl", "runs", RUN_ID, "stop", method="POST", body="")).body)
    assert stop["stopped"] is False and stop["ray_status"] == "SUCCEEDED" and "already ended" in stop["message"]

    token = local_cluster.state.token
    for body in (runs, logs, clusters, stop):
        assert token not in json.dumps(body)
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", "runs", RUN_ID, "logs", headers={"Authorization": ""})
    assert err.value.code == 403


def test_extension_readers_agree_with_hyperpod_rl_on_a_real_run(finished_run, local_cluster):
    rdir = run_dir(RUN_ID)
    files = ext_store.RunFiles(ext_store.storage_root() / "runs" / RUN_ID)
    assert files.root == rdir
    assert files.manifest() == read_provenance(rdir)
    assert files.latest_submission() == latest_submission(rdir) == finished_run.submission_id
    records, total = files.metrics_tail()
    ours = [(r["step"], r["values"]) for r in records]
    theirs = [(r.step, r.values) for r in read_metrics(rdir / "metrics.jsonl")]
    assert ours == theirs and total == 2
    assert files.has_adapter() and files.provenance()["adapter_sha256"] == read_provenance(rdir)["adapter"]["sha256"]
    assert ext_store.ledger_path() == ledger_path()
    with Ledger() as led:
        row = led.get_run(RUN_ID)
    assert ext_store.ledger_runs(ledger_path())[RUN_ID]["status"] == row.status == "succeeded"
    state = ext_store.local_cluster_state()
    assert state.dashboard_url == local_cluster.dashboard_url and state.token == local_cluster.state.token
    assert local_cluster.state.token not in repr(state)
