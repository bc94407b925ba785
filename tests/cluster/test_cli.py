"""`hyperpod-rl cluster ...` through typer's CliRunner, against the fake Kubernetes API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import hyperpod_rl.cli.cluster as cli
from hyperpod_rl.cluster.spec import DEFAULT_RAY_VERSION
from tests.cluster.conftest import DATA, GOLDEN
from tests.fakes import FakeHTTPServer, Response, kube_api_client, load_fixture

runner = CliRunner()
RC = r"/apis/ray\.io/v1/namespaces/default/rayclusters/maze"


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as srv:
        srv.route("GET", r"/api/v1/namespaces/default/pods", Response(200, load_fixture("pods_gpu_pending.json")))
        srv.route("GET", r"/api/v1/namespaces/default/events", Response(200, load_fixture("events_gpu_pending.json")))
        monkeypatch.setattr(cli, "_api_client", lambda *_a: kube_api_client(srv.url))
        yield srv


def test_presets_lists_seed_topology() -> None:
    result = runner.invoke(cli.app, ["presets"])
    assert result.exit_code == 0
    assert "seed: head 60 CPU, 480 GiB (ml.r5d.16xlarge), workers 3 x 2 GPU (ml.g7e.12xlarge); 6 GPUs total" in result.output
    assert "single-gpu: head 2 CPU, 8 GiB (any node), workers 1 x 1 GPU (ml.g5.2xlarge); 1 GPUs total" in result.output
    assert "single-gpu:" in result.output


def test_render_matches_golden() -> None:
    result = runner.invoke(cli.app, ["render", "--preset", "seed", "--name", "maze"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.output) == yaml.safe_load((GOLDEN / "raycluster-seed.yaml").read_text())


def test_render_imported_manifest_with_new_name(tmp_path: Path) -> None:
    out = tmp_path / "rc.yaml"
    result = runner.invoke(cli.app, ["render", "--from-manifest", str(DATA / "existing_raycluster.yaml"), "--name", "copy", "-o", str(out)])
    assert result.exit_code == 0, result.output
    manifest = yaml.safe_load(out.read_text())
    assert manifest["metadata"]["name"] == "copy" and manifest["spec"]["autoscalerOptions"]["idleTimeoutSeconds"] == 120


def test_render_bad_spec_file_exits_2(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("image: rayproject/ray:2.55.0-py312-gpu\n")
    result = runner.invoke(cli.app, ["render", "--spec", str(spec)])
    assert result.exit_code == 2  # bad input, as in every command
    assert "[HP-RAY-VERSION-IMAGE]" in result.output and f"is Ray 2.55.0 but spec.rayVersion is {DEFAULT_RAY_VERSION}" in result.output


def test_validate_good_and_bad(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text((GOLDEN / "raycluster-single-gpu.yaml").read_text())
    ok = runner.invoke(cli.app, ["validate", str(good)])
    assert ok.exit_code == 0 and "maze: valid under KubeRay 1.7 rules (v1.7.0)" in ok.output
    bad_doc = yaml.safe_load(good.read_text())
    bad_doc["spec"]["workerGroupSpecs"][0].pop("groupName")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(bad_doc))
    result = runner.invoke(cli.app, ["validate", str(bad)])
    assert result.exit_code == 1
    assert "[CRD-SCHEMA] $.spec.workerGroupSpecs[0]: 'groupName' is a required property" in result.output


@pytest.mark.kube
def test_apply_status_wait_delete(kube: FakeHTTPServer) -> None:
    stored = load_fixture("ready.json")
    kube.route("PATCH", RC, Response(200, stored))
    kube.route("GET", RC, Response(200, stored))
    kube.route("DELETE", RC, Response(200, {"kind": "Status", "status": "Success"}))
    assert runner.invoke(cli.app, ["apply", "--name", "maze"]).exit_code == 0
    status = runner.invoke(cli.app, ["status", "maze", "--json"])
    assert status.exit_code == 0
    data = json.loads(status.output)
    assert data["status"] == "ready" and data["pods"][-1]["phase"] == "Pending"
    waited = runner.invoke(cli.app, ["wait", "maze", "--via", "none", "--timeout-s", "1"])
    assert waited.exit_code == 0 and "ready: RayCluster default/maze: ready" in waited.output
    deleted = runner.invoke(cli.app, ["delete", "maze", "--yes"])
    assert deleted.exit_code == 0 and "deleted RayCluster default/maze" in deleted.output


@pytest.mark.kube
def test_wait_reports_failure_with_exit_1(kube: FakeHTTPServer) -> None:
    kube.route("GET", RC, Response(200, load_fixture("suspended.json")))
    result = runner.invoke(cli.app, ["wait", "maze", "--via", "none"])
    assert result.exit_code == 1 and "suspended" in result.output


@pytest.mark.kube
def test_status_of_missing_crd_is_a_clear_error(kube: FakeHTTPServer) -> None:
    result = runner.invoke(cli.app, ["status", "maze"])
    assert result.exit_code == 2 and "install the KubeRay operator 1.7 with Helm" in result.output


@pytest.mark.kube
def test_wait_via_must_be_known(kube: Any) -> None:
    kube.route("GET", RC, Response(200, load_fixture("ready.json")))
    result = runner.invoke(cli.app, ["wait", "maze", "--via", "carrier-pigeon"])
    assert result.exit_code == 2 and "--via must be one of endpoint, address, none, got 'carrier-pigeon'" in result.output


@pytest.mark.kube
def test_connect_prints_address_never_the_token(kube: FakeHTTPServer) -> None:
    jwt, cookie = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJjbGkifQ.c2lnLWNsaQ", "rs-cli-cookie-secret"
    conn = r"/apis/connection\.access\.sagemaker\.amazonaws\.com/v1alpha1/namespaces/default/raydashboardconnections"
    kube.route(
        "POST",
        conn,
        Response(
            201,
            {
                "apiVersion": "connection.access.sagemaker.amazonaws.com/v1alpha1",
                "kind": "RayDashboardConnection",
                "metadata": {"name": "maze-abcde"},
                "spec": {"clusterName": "maze"},
                "status": {"connectionUrl": f"{kube.url}/?token={jwt}"},
            },
        ),
    )
    kube.route(
        "GET",
        "/bearer-auth",
        lambda r, _m: (
            Response(302, b"", {"Location": "/", "Set-Cookie": f"ray_session={cookie}; Path=/"})
            if r.query.get("token") == [jwt]
            else Response(401, b"no")
        ),
    )
    kube.route(
        "GET",
        "/api/version",
        lambda r, _m: (
            Response(200, {"version": "4", "ray_version": "2.56.0"})
            if f"ray_session={cookie}" in r.headers.get("cookie", "")
            else Response(401, b"no")
        ),
    )
    result = runner.invoke(cli.app, ["connect", "maze"])
    assert result.exit_code == 0, result.output
    assert f"connected to {kube.url} (dashboard API version 4)" in result.output
    assert jwt not in result.output and cookie not in result.output


@pytest.mark.kube
def test_wait_on_a_refused_cluster_exits_at_once(kube: FakeHTTPServer) -> None:
    kube.route("GET", RC, Response(200, load_fixture("refused_invalid_spec.json")))
    kube.route("GET", r"/api/v1/namespaces/default/events", Response(200, load_fixture("events_refused_kuberay17.json")))
    result = runner.invoke(cli.app, ["wait", "maze", "--via", "none", "--timeout-s", "900", "--poll-interval-s", "60"])
    assert result.exit_code == 1
    assert "refused (the KubeRay operator refused this RayCluster (InvalidRayClusterSpec)" in result.output
    assert result.output.count("refused:") == 1  # one report, no polling


def test_render_of_a_v1alpha1_manifest_warns_and_writes_v1(tmp_path: Path) -> None:
    old = yaml.safe_load((Path(__file__).parent / "kuberay_samples" / "v1.7.0" / "ray-cluster.sample.yaml").read_text())
    old["apiVersion"] = "ray.io/v1alpha1"
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(old))
    result = runner.invoke(cli.app, ["render", "--from-manifest", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning: ray.io/v1alpha1 RayCluster is deprecated" in result.output
    rendered = yaml.safe_load(result.output[result.output.index("apiVersion:") :])
    assert rendered == {**old, "apiVersion": "ray.io/v1"}


def test_render_from_manifest_prints_gate_warnings(tmp_path: Path) -> None:
    result = runner.invoke(
        cli.app, ["render", "--from-manifest", str(Path(__file__).parent / "kuberay_samples" / "v1.7.0" / "ray-cluster.mtls.yaml")]
    )
    assert result.exit_code == 0, result.output
    assert "warning: [KR-TLS] $.spec.tlsOptions" in result.output and "RayClusterMTLS" in result.output


def test_render_picks_the_raycluster_of_a_multi_document_file() -> None:
    path = Path(__file__).parent / "kuberay_samples" / "v1.7.0" / "ray-cluster.persistent-redis.yaml"
    assert len([d for d in yaml.safe_load_all(path.read_text()) if d]) > 1
    result = runner.invoke(cli.app, ["render", "--from-manifest", str(path)])
    assert result.exit_code == 0, result.output
    (rc,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "RayCluster"]
    assert yaml.safe_load(result.output) == rc


def test_render_of_a_file_without_a_raycluster_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = runner.invoke(cli.app, ["render", "--from-manifest", str(path)])
    assert result.exit_code == 2 and "holds 0 RayCluster documents" in result.output


def test_validate_accepts_kuberays_sample_without_max_replicas() -> None:
    path = Path(__file__).parent / "kuberay_samples" / "v1.7.0" / "ray-cluster.kai-scheduler.yaml"
    (rc,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "RayCluster"]
    (group,) = rc["spec"]["workerGroupSpecs"]
    assert "maxReplicas" not in group  # required by the CRD schema, filled in by its default
    result = runner.invoke(cli.app, ["validate", str(path)])
    assert result.exit_code == 0 and "valid under KubeRay 1.7 rules (v1.7.0)" in result.output


def test_cli_validates_every_kuberay_sample_file() -> None:
    files = sorted((Path(__file__).parent / "kuberay_samples" / "v1.7.0").glob("*.yaml"))
    assert len(files) == 46
    for path in files:
        result = runner.invoke(cli.app, ["validate", str(path)])
        assert result.exit_code == 0, result.output
        assert result.output.count("valid under KubeRay 1.7 rules (v1.7.0)") == 1  # other API groups skipped


def test_validate_of_a_file_without_ray_io_documents_fails(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = runner.invoke(cli.app, ["validate", str(path)])
    assert result.exit_code == 2 and "no ray.io document to validate" in result.output


@pytest.mark.kube
def test_apply_with_a_named_hyperpod_cluster_labels_it_for_aws_tools(kube: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """HYPERPOD_RL_HYPERPOD_CLUSTER (printed by `discover --pick`) also fills the cluster-name label AWS's Ray sidebar reads."""
    from hyperpod_rl.cluster import validate_manifest
    from tests.fakes import Request

    sent: list[dict[str, Any]] = []

    def patch(req: Request, _m: Any) -> Response:
        sent.append(yaml.safe_load(req.body))
        return Response(200, sent[-1])

    kube.route("PATCH", r"/apis/ray\.io/v1/namespaces/hyperpod-ns-a/rayclusters/maze", patch)
    monkeypatch.setenv("HYPERPOD_RL_HYPERPOD_CLUSTER", "ml-cluster")
    result = runner.invoke(cli.app, ["apply", "--name", "maze", "-n", "hyperpod-ns-a"])
    assert result.exit_code == 0, result.output
    labels = sent[0]["metadata"]["labels"]
    assert labels["sagemaker.amazonaws.com/cluster-name"] == "ml-cluster"
    assert labels["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-a-localqueue"
    assert validate_manifest(sent[0]).errors == ()
