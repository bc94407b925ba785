"""HyperPodPicker and ClusterPanel pick HyperPod cluster -> namespace -> RayCluster (Stubber + fake Kubernetes)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hyperpod_rl.aws.discovery import list_hyperpod_clusters
from hyperpod_rl.widgets import ClusterPanel, HyperPodPicker
from tests.aws.test_discovery import described, summary
from tests.fakes import FakeHTTPServer, Request, Response, kube_api_client

pytestmark = pytest.mark.kube


@pytest.fixture
def world() -> Any:
    sm = boto3.client("sagemaker", region_name="us-west-2", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x")
    with Stubber(sm) as stub, FakeHTTPServer() as kube:
        stub.add_response("list_clusters", {"ClusterSummaries": [summary("ml-cluster"), summary("booting", "Creating")]}, {})
        stub.add_response("describe_cluster", described("ml-cluster"), {"ClusterName": "ml-cluster"})
        stub.add_response("describe_cluster", described("booting", "Creating"), {"ClusterName": "booting"})
        kube.route(
            "GET",
            "/api/v1/namespaces",
            Response(
                200,
                {
                    "kind": "NamespaceList",
                    "apiVersion": "v1",
                    "metadata": {},
                    "items": [{"metadata": {"name": n}} for n in ("default", "hyperpod-ns-team-a")],
                },
            ),
        )
        items = [
            {
                "metadata": {"name": "maze", "namespace": "hyperpod-ns-team-a"},
                "status": {"conditions": [{"type": "HeadPodReady", "status": "True"}]},
            }
        ]
        kube.route(
            "GET",
            r"/apis/ray\.io/v1/namespaces/hyperpod-ns-team-a/rayclusters",
            Response(200, {"apiVersion": "ray.io/v1", "kind": "RayClusterList", "metadata": {}, "items": items}),
        )

        kube.route(
            "GET",
            r"/apis/ray\.io/v1/namespaces/default/rayclusters",
            Response(200, {"apiVersion": "ray.io/v1", "kind": "RayClusterList", "metadata": {}, "items": []}),
        )

        def review(req: Request, _m: Any) -> Response:
            return Response(201, {**req.json(), "status": {"allowed": True}})

        kube.route("POST", r"/apis/authorization\.k8s\.io/v1/selfsubjectaccessreviews", review)
        yield sm, kube


def settle(p: HyperPodPicker) -> None:
    """Wait for the chain of background choices (each choice starts the next listing) to end."""
    for _ in range(6):
        assert p.wait_idle(30)


def picker(world: Any, **kw: Any) -> HyperPodPicker:
    sm, kube = world
    from hyperpod_rl.aws.observability import parse_addon_configuration

    obs = parse_addon_configuration('{"grafanaUrl": "https://g-abc123def4.grafana-workspace.us-west-2.amazonaws.com"}', region="us-west-2")
    return HyperPodPicker(
        list_clusters=lambda: list_hyperpod_clusters(client=sm),
        api_client_for=lambda c: kube_api_client(kube.url),
        observability=lambda name, region: obs if name == "ml-cluster-eks" else None,
        **kw,
    )


def test_picker_offers_usable_clusters_and_explains_the_rest(world: Any) -> None:
    picked: list[str] = []
    p = picker(world, on_pick=lambda address, api: picked.append(address))
    p.find()  # the only usable cluster is chosen for the user; its namespaces are listed
    settle(p)
    assert p.hyperpod.options == (("ml-cluster (InService)", "ml-cluster"),) and p.hyperpod.value == "ml-cluster"
    assert "booting (Creating): status Creating" in p.not_offered.value
    assert "href='https://g-abc123def4.grafana-workspace.us-west-2.amazonaws.com'" in p.grafana_html.value
    assert p.namespace.options == ("hyperpod-ns-team-a", "default")
    p.namespace.value = "hyperpod-ns-team-a"  # the user's choice; its only RayCluster is then chosen
    settle(p)
    assert p.raycluster.options == (("maze (ready)", "maze"),)
    assert picked == ["sagemaker_ray://maze/hyperpod-ns-team-a"] and "sagemaker_ray://maze/hyperpod-ns-team-a" in p.address_html.value
    p.namespace.value = "default"  # the user's choice: no RayCluster there
    settle(p)
    assert p.raycluster.options == () and "no RayCluster in default" in p.address_html.value


def test_check_access_button_shows_one_row_per_check(world: Any) -> None:
    from hyperpod_rl.checks import Check

    seen: dict[str, Any] = {}

    def check(eks: str, ns: str, **kw: Any) -> list[Check]:
        seen.update(eks=eks, ns=ns, region=kw["region"])
        return [Check(name="EKS access entry", status="fail", detail="no access entry", fix="ask an admin")]

    p = picker(world, check=check)
    p.find()
    settle(p)
    p.namespace.value = "hyperpod-ns-team-a"
    settle(p)
    p.check_access()
    assert seen == {"eks": "ml-cluster-eks", "ns": "hyperpod-ns-team-a", "region": "us-west-2"}
    assert "<b>fail</b>" in p.checks_html.value and "ask an admin" in p.checks_html.value


def test_cluster_panel_uses_the_picked_raycluster(world: Any) -> None:
    sm, kube = world
    kube.route(
        "GET",
        r"/apis/ray\.io/v1/namespaces/hyperpod-ns-team-a/rayclusters/maze",
        Response(
            404,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "details": {"kind": "rayclusters"},
            },
        ),
    )
    panel = ClusterPanel("hyperpod")
    assert panel.picker in panel.children
    panel._picker = picker(world, on_pick=panel.guard(panel.use_raycluster))
    panel._layout()
    p = panel.picker
    p.find()
    settle(p)
    p.namespace.value = "hyperpod-ns-team-a"
    settle(p)
    assert panel.address == "sagemaker_ray://maze/hyperpod-ns-team-a"
    assert panel.spec().name == "maze" and panel.spec().namespace == "hyperpod-ns-team-a"
    assert panel.kube is not None and panel.errors == [], panel.errors


def test_apply_in_a_picked_namespace_creates_a_raycluster_aws_tools_list(world: Any) -> None:
    """A namespace with no RayCluster yet: Apply creates one there, labelled for AWS's Ray sidebar and Kueue,
    with HyperPod's node-health affinity; the body the API server received validates against the KubeRay CRD."""
    from hyperpod_rl.cluster import validate_manifest
    from hyperpod_rl.cluster.manifest import CLUSTER_NAME_LABEL, HEALTH_LABEL, KUEUE_QUEUE_LABEL

    sm, kube = world
    kube.route(
        "GET",
        r"/apis/ray\.io/v1/namespaces/hyperpod-ns-team-a/rayclusters",
        Response(200, {"apiVersion": "ray.io/v1", "kind": "RayClusterList", "metadata": {}, "items": []}),
    )
    applied: list[dict[str, Any]] = []

    def apply(req: Request, _m: Any) -> Response:
        import yaml

        applied.append(yaml.safe_load(req.body))
        return Response(200, applied[-1])

    kube.route("PATCH", r"/apis/ray\.io/v1/namespaces/hyperpod-ns-team-a/rayclusters/[a-z0-9-]+", apply)
    panel = ClusterPanel("hyperpod")
    panel._picker = picker(world, on_pick=panel.guard(panel.use_raycluster), on_namespace=panel.guard(panel.use_namespace))
    p = panel.picker
    p.find()
    settle(p)
    p.namespace.value = "hyperpod-ns-team-a"
    settle(p)
    assert "no RayCluster in hyperpod-ns-team-a" in p.address_html.value and panel.errors == [], panel.errors
    panel.apply()
    assert panel.errors == [] and len(applied) == 1, panel.errors
    body = applied[0]
    labels = body["metadata"]["labels"]
    assert body["metadata"]["namespace"] == "hyperpod-ns-team-a"
    assert labels[CLUSTER_NAME_LABEL] == "ml-cluster" and labels[KUEUE_QUEUE_LABEL] == "hyperpod-ns-team-a-localqueue"
    head = body["spec"]["headGroupSpec"]["template"]["spec"]
    required = head["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == HEALTH_LABEL
    assert validate_manifest(body).warnings == ()


def test_studio_points_the_run_tab_at_the_picked_raycluster(world: Any) -> None:
    from hyperpod_rl.cluster.access import HyperPodDashboard
    from hyperpod_rl.widgets import studio

    tabs = studio(kind="hyperpod", hardware=None)
    panel = tabs.cluster
    panel._picker = picker(world, on_pick=panel.guard(panel.use_raycluster), on_namespace=panel.guard(panel.use_namespace))
    p = panel.picker
    p.find()
    settle(p)
    p.namespace.value = "hyperpod-ns-team-a"
    settle(p)
    access = tabs.run._cluster
    assert isinstance(access, HyperPodDashboard) and (access.cluster_name, access.namespace) == ("maze", "hyperpod-ns-team-a")
