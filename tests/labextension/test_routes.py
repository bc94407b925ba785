"""Every route of the server extension through a real Jupyter server (pytest-jupyter ``jp_fetch``).

The run store is written with hyperpod-rl's own writers (``write_config``, ``new_provenance`` /
``update_provenance``, ``MetricRecord``, ``Ledger``, ``provenance_record``, ``PromotionDecision``),
so the extension is tested against the real formats. Routes that talk to Ray are also tested
against a real local cluster in ``test_live_routes.py``.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import pytest
import tornado

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.ledger import Ledger
from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.runs import RunPaths, new_provenance, update_provenance, write_config
from hyperpod_rl.runs.versions import provenance_record
from hyperpod_rl.serve.promote import PromotionDecision

from .conftest import FAKE_TOKEN, write_cluster_state

ROUTES_GET = ["status", "runs", "runs/{run}", "runs/{run}/logs", "adapters", "clusters"]


def make_run(
    root: Path,
    run_id: str,
    *,
    status: str | None = "running",
    rewards: tuple[float, ...] = (),
    total_steps: int = 10,
    submissions: tuple[str, ...] = (),
    adapter: bool = False,
    promoted: bool | None = None,
    ledger: Ledger | None = None,
) -> Path:
    """A run directory as the trainer and the evaluation write it."""
    rdir = root / "runs" / run_id
    config = RunConfig.build(
        {"run_id": run_id, "data": {"train_path": "/data/t.parquet", "heldout_path": "/data/h.parquet"}, "trainer": {"steps": total_steps}}
    )
    write_config(RunPaths(rdir), config)
    if status is not None:
        manifest = new_provenance(
            config, base_model_id="tiny-qwen3-vl", base_model_revision="0123456789abcdef", dataset_hashes={}, reward_version="v1"
        )
        update_provenance(rdir, lambda _: {**manifest, "status": status})
    if rewards:
        with (rdir / "metrics.jsonl").open("w") as fh:
            for step, reward in enumerate(rewards, start=1):
                rec = MetricRecord(
                    run_id=run_id, step=step, total_steps=total_steps, time_s=1000.0 + step, values={"reward/avg_raw_reward": reward}
                )
                fh.write(rec.model_dump_json() + "\n")
            fh.write('{"run_id": "' + run_id + '", "step": 9')  # a cut-off last line, as a live trainer leaves it
    if submissions:
        (rdir / "submissions.json").write_text(json.dumps(list(submissions)))
    if adapter:
        (rdir / "adapter").mkdir()
        (rdir / "adapter" / "adapter_model.safetensors").write_bytes(b"\0" * 16)
        prov = provenance_record(
            run_id=run_id,
            backend="reference",
            base_model_id="tiny-qwen3-vl",
            base_model_revision="0123456789abcdef",
            config_hash=config.config_hash(),
            dataset_hashes={},
            reward_version="v1",
            seeds={"trainer": 0},
            lora={},
            adapter_sha256="ab" * 32,
            steps=len(rewards),
        )
        (rdir / "adapter" / "provenance.json").write_text(json.dumps(prov))
        (rdir / "eval").mkdir()
        (rdir / "eval" / "adapter.json").write_text(json.dumps({"label": "adapter", "metrics": {"solve_rate": 0.25}, "num_mazes": 16}))
    if promoted is not None:
        decision = PromotionDecision(
            run_id=run_id, adapter=str(rdir / "adapter"), adapter_sha256="ab" * 32, promoted=promoted, reason="solve_rate improved"
        )
        (rdir / "promotion.json").write_text(json.dumps(decision.to_json()))
    if ledger is not None:
        ledger.record_run(run_id, status=status or "submitted", config=config.model_dump(mode="json"), run_dir=rdir)
    return rdir


@pytest.fixture
def store(hprl_home):
    """Three runs: an old finished one with a promoted adapter, a failed one, a fresh unsubmitted one,
    plus one only the ledger knows."""
    root = hprl_home / "storage"
    with Ledger(hprl_home / "ledger.sqlite") as led:
        make_run(root, "old-done", status="succeeded", rewards=(0.1, 0.3, 0.5), total_steps=3, adapter=True, promoted=True, ledger=led)
        make_run(root, "mid-failed", status="failed", rewards=(0.2,), submissions=("hprl-mid-failed-1",))
        make_run(root, "new-pending", status=None)
        led.record_run("ledger-only", status="succeeded", run_dir="/fsx/elsewhere/runs/ledger-only")
    import os
    import time

    now = time.time()
    for age, run in ((300, "old-done"), (200, "mid-failed"), (100, "new-pending")):
        rdir = root / "runs" / run
        for f in rdir.iterdir():
            os.utime(f, (now - age, now - age))
    # new_manifest stamps created_at "now": make the manifests' order match the directories'.
    for age, run in ((300, "old-done"), (200, "mid-failed")):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - age))
        update_provenance(root / "runs" / run, lambda m, s=stamp: {**m, "created_at": s})
    return root


async def get(jp_fetch, route: str, **params):
    resp = await jp_fetch("hyperpod-rl", *route.split("/"), params=params or None)
    return json.loads(resp.body)


async def test_runs_newest_first_with_status_reward_and_sparkline(jp_fetch, store):
    data = await get(jp_fetch, "runs")
    ids = [r["run_id"] for r in data["runs"]]
    # The ledger-only run was recorded last (its ledger created_at is now), the directories are older.
    assert ids == ["ledger-only", "new-pending", "mid-failed", "old-done"], ids
    by_id = {r["run_id"]: r for r in data["runs"]}
    done = by_id["old-done"]
    assert (done["status"], done["step"], done["total_steps"]) == ("succeeded", 3, 3)
    assert done["last_reward"] == pytest.approx(0.5) and done["rewards"] == pytest.approx([0.1, 0.3, 0.5])
    assert done["base_model_id"] == "tiny-qwen3-vl" and done["base_model_revision"] == "0123456789abcdef"
    assert done["has_adapter"] and done["in_ledger"] and done["cluster"] is None
    assert by_id["mid-failed"]["status"] == "failed" and by_id["mid-failed"]["submission_id"] == "hprl-mid-failed-1"
    # never submitted: "created", not "pending" (no job exists, so nothing to stop; issue 31 item 8)
    assert by_id["new-pending"]["status"] == "created" and by_id["new-pending"]["step"] == 0
    assert by_id["ledger-only"]["status"] == "succeeded" and by_id["ledger-only"]["run_dir"] == "/fsx/elsewhere/runs/ledger-only"
    assert data["running"] == 0 and data["store_root"] == str(store)


async def test_one_run_and_unknown_runs_are_404(jp_fetch, store):
    run = await get(jp_fetch, "runs/old-done")
    assert run["run_id"] == "old-done" and run["status"] == "succeeded"
    for bad in ("no-such-run", "Bad_Id", "..", "a"):
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch("hyperpod-rl", "runs", bad)
        assert err.value.code == 404, bad
        for suffix in ("logs",):
            with pytest.raises(tornado.httpclient.HTTPClientError) as err:
                await jp_fetch("hyperpod-rl", "runs", bad, suffix)
            assert err.value.code == 404
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", "runs", "no-such-run", "stop", method="POST", body="")
    assert err.value.code == 404
    assert "no run 'no-such-run'" in json.loads(err.value.response.body)["message"]


async def test_stop_without_a_job_is_404_and_logs_say_why(jp_fetch, store):
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", "runs", "new-pending", "stop", method="POST", body="")
    assert err.value.code == 404
    assert "never been submitted" in json.loads(err.value.response.body)["message"]
    logs = await get(jp_fetch, "runs/mid-failed/logs", lines="50")
    assert logs["submission_id"] == "hprl-mid-failed-1" and logs["source"] == "none"
    assert "not found" in logs["lines"][0]
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", "runs", "mid-failed", "logs", params={"lines": "many"})
    assert err.value.code == 400


async def test_adapters_with_promotion_decision_and_base_revision(jp_fetch, store):
    data = await get(jp_fetch, "adapters")
    [adapter] = data["adapters"]
    assert adapter["run_id"] == "old-done" and adapter["promoted"] is True
    assert adapter["promotion_reason"] == "solve_rate improved"
    assert adapter["base_model_revision"] == "0123456789abcdef" and adapter["steps"] == 3
    assert adapter["evals"] == {"adapter": {"solve_rate": 0.25}}


async def test_missing_store_is_503_with_a_clear_body_and_empty_store_is_200(jp_fetch, hprl_home, tmp_path):
    for route in ("runs", "adapters", "runs/some-run"):
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch("hyperpod-rl", *route.split("/"))
        assert err.value.code == 503, route
        body = json.loads(err.value.response.body)
        assert body["reason"] == "store-missing"
        assert str(hprl_home / "storage") in body["message"] and "HYPERPOD_RL_STORAGE" in body["message"]
    status = await get(jp_fetch, "status")
    assert status["store_exists"] is False and status["run_count"] == 0
    (hprl_home / "storage").mkdir()
    assert (await get(jp_fetch, "runs"))["runs"] == []
    # The browser's "store root" setting picks another store.
    other = tmp_path / "fsx"
    make_run(other, "on-fsx", status="succeeded", rewards=(0.4,))
    data = await get(jp_fetch, "runs", store=str(other))
    assert [r["run_id"] for r in data["runs"]] == ["on-fsx"] and data["store_root"] == str(other)


async def test_clusters_local_link_goes_through_the_server_proxy(jp_fetch, jp_base_url, hprl_home, store):
    from hyperpod_rl.cluster.local import find_free_port

    port = find_free_port()  # nothing listens: the cluster is recorded but down
    write_cluster_state(hprl_home, port)
    data = await get(jp_fetch, "clusters")
    [local] = data["clusters"]
    assert local["name"] == "local" and local["reachable"] is False
    assert "not answering" in local["detail"]
    # jupyter-server-proxy is installed in the test environment (labextension[test]).
    assert local["dashboard_url"] == f"{jp_base_url.rstrip('/')}/proxy/{port}/"


async def test_every_route_needs_auth(jp_fetch, store):
    for route in ROUTES_GET:
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch("hyperpod-rl", *route.format(run="old-done").split("/"), headers={"Authorization": ""})
        assert err.value.code == 403, route
    for route in ("runs/old-done/stop", "tutorial"):
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch("hyperpod-rl", *route.split("/"), method="POST", body="{}", headers={"Authorization": ""})
        assert err.value.code == 403, route


def test_post_routes_keep_the_servers_xsrf_check(jp_serverapp):
    """Browser sessions (cookies) must send the XSRF token on POST: the handlers keep Jupyter's check."""
    from hyperpod_rl_jupyterlab.handlers import StopHandler, TutorialHandler
    from jupyter_server.base.handlers import JupyterHandler

    assert jp_serverapp.web_app.settings["xsrf_cookies"] is True
    for handler in (StopHandler, TutorialHandler):
        assert handler.check_xsrf_cookie is JupyterHandler.check_xsrf_cookie


def test_every_handler_verb_is_authenticated():
    """The extension template's check: a server with no unauthenticated access warns about none of our routes."""
    from jupyter_server.serverapp import ServerApp
    from jupyter_server.utils import JupyterServerAuthWarning

    app = ServerApp(
        allow_unauthenticated_access=False,
        jpserver_extensions={"hyperpod_rl_jupyterlab": True},
        reraise_server_extension_failures=True,
    )
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        app.initialize(argv=[], find_extensions=False, new_httpserver=False)
    problems = [str(r.message) for r in records if issubclass(r.category, JupyterServerAuthWarning)]
    routes = [r.matcher.regex.pattern for rule in app.web_app.default_router.rules for r in getattr(rule.target, "rules", [])]
    assert sum("/hyperpod-rl/" in r for r in routes) == 10, routes
    assert problems == []


async def test_tutorial_copies_notebooks_and_docs_once(jp_fetch, jp_root_dir, store):
    resp = await jp_fetch("hyperpod-rl", "tutorial", method="POST", body=json.dumps({"folder": "tut"}))
    data = json.loads(resp.body)
    assert data["first"] == "tut/01-quickstart-local.ipynb"
    assert "tut/01-quickstart-local.ipynb" in data["copied"] and "tut/docs/labextension.md" in data["copied"]
    nb = json.loads((jp_root_dir / "tut" / "01-quickstart-local.ipynb").read_text())
    assert nb["cells"], "the copied notebook is empty"
    again = json.loads((await jp_fetch("hyperpod-rl", "tutorial", method="POST", body=json.dumps({"folder": "tut"}))).body)
    assert again["copied"] == [] and "tut/01-quickstart-local.ipynb" in again["existing"]
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", "tutorial", method="POST", body=json.dumps({"folder": "../outside"}))
    assert err.value.code == 400


async def test_no_secret_in_any_response_or_log(jp_fetch, hprl_home, store, tmp_path, caplog, jp_serverapp):
    """The local cluster token and a configured cluster's token never leave the server."""
    from hyperpod_rl.cluster.local import find_free_port

    write_cluster_state(hprl_home, find_free_port())
    other_token = "cafe" * 16
    token_file = tmp_path / "hp.token"
    token_file.write_text(other_token)
    service = jp_serverapp.web_app.settings["hyperpod_rl_service"]
    from hyperpod_rl_jupyterlab.service import ClusterEntry

    service.clusters = [ClusterEntry(name="hp-ray", api_url=f"http://127.0.0.1:{find_free_port()}", token_file=str(token_file))]
    caplog.set_level(logging.DEBUG)
    bodies = []
    for route in ROUTES_GET:
        for run in ("old-done", "mid-failed"):
            resp = await jp_fetch("hyperpod-rl", *route.format(run=run).split("/"))
            bodies.append(resp.body.decode())
    for route in ("runs/mid-failed/stop", "runs/nope-run/stop"):
        with pytest.raises(tornado.httpclient.HTTPClientError) as err:
            await jp_fetch("hyperpod-rl", *route.split("/"), method="POST", body="")
        bodies.append(err.value.response.body.decode())
    clusters = json.loads(bodies[ROUTES_GET.index("clusters") * 2])
    assert {c["name"] for c in clusters["clusters"]} == {"local", "hp-ray"}
    text = "\n".join(bodies) + "\n" + caplog.text
    for secret in (FAKE_TOKEN, other_token, "Bearer"):
        assert secret not in text
    assert len(bodies) == len(ROUTES_GET) * 2 + 2


async def test_a_run_id_with_a_trailing_newline_is_404_without_touching_the_disk(jp_fetch, store):
    """Issue 30 item 3: run ids are matched whole (``fullmatch``), so ``old-done\\n`` is no run."""
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", "runs", "old-done%0A")
    assert err.value.code == 404
    assert "run ids are lower-case letters" in json.loads(err.value.response.body)["message"]
