"""``hyperpod-rl cluster discover``: HyperPod cluster -> namespace -> RayCluster as numbered choices (Stubber + fake Kubernetes)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from tests.aws.test_discovery import described, summary
from tests.fakes import FakeHTTPServer, Response, kube_api_client


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Any:
    sm = boto3.client("sagemaker", region_name="us-west-2")
    with Stubber(sm) as stub, FakeHTTPServer() as kube:
        stub.add_response("list_clusters", {"ClusterSummaries": [summary("ml-cluster"), summary("slurm-hpc")]}, {})
        stub.add_response("describe_cluster", described("ml-cluster"), {"ClusterName": "ml-cluster"})
        stub.add_response("describe_cluster", described("slurm-hpc", eks=False), {"ClusterName": "slurm-hpc"})
        kube.route(
            "GET",
            "/api/v1/namespaces",
            Response(
                200, {"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": [{"metadata": {"name": "hyperpod-ns-team-a"}}]}
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
        monkeypatch.setattr("hyperpod_rl.aws.discovery.aws_client", lambda *a, **k: sm)
        monkeypatch.setattr("hyperpod_rl.aws.discovery.hyperpod_api_client", lambda c, **k: kube_api_client(kube.url))
        yield


def test_discover_lists_with_reasons_and_picks_down_to_an_address(stubbed: None) -> None:
    result = CliRunner().invoke(app, ["cluster", "discover", "--pick"], input="1\n1\n1\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert " 1. ml-cluster (InService, eks, EKS ml-cluster-eks)" in out
    assert " - slurm-hpc (InService, slurm)" in out and "not offered: orchestrated by Slurm" in out
    assert " 1. hyperpod-ns-team-a" in out and " 1. maze (ready)  sagemaker_ray://maze/hyperpod-ns-team-a" in out
    assert (
        "next (no kubeconfig needed): export HYPERPOD_RL_HYPERPOD_CLUSTER=ml-cluster; "
        "hyperpod-rl job list --address sagemaker_ray://maze/hyperpod-ns-team-a"
    ) in out


def test_discover_json(stubbed: None) -> None:
    result = CliRunner().invoke(app, ["cluster", "discover", "--cluster", "ml-cluster", "-n", "hyperpod-ns-team-a", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(c["name"], c["offered"]) for c in data["hyperpod_clusters"]] == [("ml-cluster", True), ("slurm-hpc", False)]
    assert data["namespaces"] == ["hyperpod-ns-team-a"]
    assert data["rayclusters"][0]["address"] == "sagemaker_ray://maze/hyperpod-ns-team-a"
    assert data["hyperpod_cluster"] == "ml-cluster"
