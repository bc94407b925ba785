"""Panels without a Ray cluster: generated forms, HyperPod ClusterPanel on a fake Kubernetes API,
maze path drawing, studio tabs, errors shown in the panel."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from hyperpod_rl.cluster import ClusterSpec
from hyperpod_rl.cluster.kube import RayClusterClient
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.tasks.maze import Maze
from hyperpod_rl.widgets import (
    ClusterPanel,
    RunPanel,
    ServePanel,
    Studio,
    draw_path,
    studio,
)
from tests.fakes import FakeHTTPServer, Response, kube_api_client, load_fixture

RC = r"/apis/ray\.io/v1/namespaces/(?P<ns>[^/]+)/rayclusters/(?P<name>[^/]+)"


def test_run_form_round_trips_a_config_and_edits_apply(tiny_setup):
    from hyperpod_rl.quickstart import make_run_config

    config = make_run_config(
        tiny_setup["opts"],
        run_id="form-run",
        model_path=tiny_setup["model_dir"],
        revision=tiny_setup["revision"],
        data=tiny_setup["data"],
    )
    panel = RunPanel(config)
    assert panel.validate() == config
    panel.form.widget("lora.rank").value = 8
    panel.form.widget("grpo.advantage").value = "outcome"
    panel.form.widget("trainer.torch_threads").value = "2"
    edited = panel.validate()
    assert (edited.lora.rank, edited.grpo.advantage, edited.trainer.torch_threads) == (
        8,
        "outcome",
        2,
    )
    assert "valid" in panel.validation.value
    with pytest.raises(KeyError, match="no form field 'grpo.nope'"):
        panel.form.widget("grpo.nope")


def test_submit_without_a_cluster_shows_the_error_in_the_panel(tiny_setup, monkeypatch, tmp_path):
    from hyperpod_rl.quickstart import make_run_config

    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))  # no local cluster state here
    config = make_run_config(
        tiny_setup["opts"],
        run_id="no-cluster",
        model_path=tiny_setup["model_dir"],
        revision=tiny_setup["revision"],
        data=tiny_setup["data"],
    )
    panel = RunPanel(config)
    panel.submit_button.click()
    assert panel.handle is None
    assert panel.errors and "no cluster: start one in the Cluster panel" in panel.errors[-1]
    panel.stop_button.click()
    assert panel.wait_idle(30)  # Stop runs off the kernel thread
    assert "no run to stop" in panel.errors[-1]


@pytest.fixture
def kube_server():
    with FakeHTTPServer() as srv:
        srv.route(
            "GET",
            r"/api/v1/namespaces/default/pods",
            Response(200, load_fixture("pods_gpu_pending.json")),
        )
        srv.route(
            "GET",
            r"/api/v1/namespaces/default/events",
            Response(
                200,
                {"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": []},
            ),
        )
        yield srv


def test_hyperpod_cluster_panel_applies_the_form_and_shows_conditions(kube_server):
    spec = ClusterSpec.from_preset("seed", name="maze")
    stored = {
        **spec.to_manifest(),
        "status": load_fixture("provisioning.json").get("status", {}),
    }
    kube_server.route("PATCH", RC, Response(201, stored))
    kube_server.route("GET", RC, Response(200, stored))
    panel = ClusterPanel("hyperpod", spec=spec, kube=RayClusterClient(kube_api_client(kube_server.url)))
    panel.form.widget("worker_groups.0.replicas").value = 2
    panel.apply_button.click()
    assert panel.errors == [], panel.errors
    (patch,) = [r for r in kube_server.requests if r.method == "PATCH"]
    assert patch.json()["spec"]["workerGroupSpecs"][0]["replicas"] == 2
    assert "applied RayCluster default/maze" in panel.status_html.value
    panel.refresh()
    assert panel.report is not None and panel.report.status.value in panel.status_html.value
    assert panel.state == panel.report.status.value


def test_cluster_form_reports_every_bad_field(kube_server):
    panel = ClusterPanel(
        "hyperpod",
        spec=ClusterSpec.from_preset("seed"),
        kube=RayClusterClient(kube_api_client(kube_server.url)),
    )
    panel.form.widget("head.cpus").value = -1
    panel.form.widget("worker_groups.0.gpus_per_worker").value = -2
    with pytest.raises(ConfigError) as err:
        panel.spec()
    assert "head.cpus" in str(err.value) and "worker_groups.0.gpus_per_worker" in str(err.value)
    panel.apply_button.click()
    assert panel.errors and "head.cpus" in panel.errors[-1]
    assert [r for r in kube_server.requests if r.method == "PATCH"] == []


def test_hyperpod_panel_without_a_kube_client_says_how_to_get_one():
    panel = ClusterPanel("hyperpod")
    panel.apply_button.click()
    assert "pass kube=RayClusterClient" in panel.errors[-1]


def test_draw_path_marks_the_visited_cells(tiny_setup):
    from hyperpod_rl.tasks.maze import read_rows

    row = read_rows(tiny_setup["data"].heldout)[0]
    maze = Maze.from_json(row["maze"])
    path = [maze.start]
    cell = maze.start
    for move in maze.shortest_path()[:2]:
        cell, _ = maze.move(cell, move)
        path.append(cell)
    plain = Image.open(io.BytesIO(draw_path(row, [maze.start]))).convert("RGB")
    drawn = Image.open(io.BytesIO(draw_path(row, path))).convert("RGB")
    assert plain.size == drawn.size
    import numpy as np

    def orange(img):
        return int((np.asarray(img) == (255, 140, 0)).all(axis=-1).sum())

    assert orange(drawn) > 0 and orange(plain) == 0


def test_serve_panel_explains_what_is_missing(tmp_path):
    panel = ServePanel(model_path=tmp_path / "missing")
    with pytest.raises(Exception, match="base model directory .* does not exist"):
        panel.deploy()
    with pytest.raises(Exception, match="not deployed: press Deploy first"):
        panel.play()


def test_studio_has_four_tabs_and_wires_run_to_metrics():
    tabs = studio(hardware=None)
    assert isinstance(tabs, Studio)
    assert tabs.titles == ("Cluster", "Run", "Metrics", "Serve")
    assert tabs.run.metrics is tabs.metrics
    tabs.metrics.close()


def test_run_presets_fill_the_form_and_keep_run_id_and_data():
    from hyperpod_rl.config.run import RunConfig

    panel = RunPanel(
        {
            "run_id": "my-run",
            "data": {
                "train_path": "/data/t.parquet",
                "heldout_path": "/data/h.parquet",
            },
        }
    )
    assert list(panel.preset.options[1:]) == RunConfig.presets()
    name = RunConfig.presets()[0]
    panel.preset.value = name
    assert panel.errors == [], panel.errors
    expected = RunConfig.from_preset(
        name,
        run_id="my-run",
        **{
            "data.train_path": "/data/t.parquet",
            "data.heldout_path": "/data/h.parquet",
        },
    )
    assert panel.validate() == expected
    assert panel.form.widget("run_id").value == "my-run"
