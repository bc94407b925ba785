"""HyperPod discovery through boto3, with every request checked against botocore's service models.

``Stubber`` validates each request's parameters and each canned response against the SageMaker and
EKS service models shipped in botocore. Responses are shaped from the API references:
``ListClusters`` (``ClusterSummaries``, ``NextToken``), ``DescribeCluster`` (``Orchestrator.Eks.ClusterArn``,
absent for Slurm clusters; ``FailureMessage``), EKS ``DescribeCluster`` (moto).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hyperpod_rl.aws.discovery import (
    HyperPodCluster,
    describe_hyperpod_cluster,
    hyperpod_api_client,
    list_hyperpod_clusters,
    list_namespaces,
    list_rayclusters,
)
from hyperpod_rl.errors import ClusterError
from tests.fakes import FakeHTTPServer, Response, k8s_status, kube_api_client

ACCT = "111122223333"
T0 = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)


def summary(name: str, status: str = "InService") -> dict[str, Any]:
    return {
        "ClusterArn": f"arn:aws:sagemaker:us-west-2:{ACCT}:cluster/{name[:6]}abcd12",
        "ClusterName": name,
        "CreationTime": T0,
        "ClusterStatus": status,
    }


def described(name: str, status: str = "InService", *, eks: bool = True, failure: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        **summary(name, status),
        "InstanceGroups": [
            {
                "CurrentCount": 2,
                "TargetCount": 2,
                "InstanceGroupName": "gpu",
                "InstanceType": "ml.p5.48xlarge",
                "ExecutionRole": f"arn:aws:iam::{ACCT}:role/hp-exec",
                "ThreadsPerCore": 1,
            }
        ],
    }
    if eks:
        out["Orchestrator"] = {"Eks": {"ClusterArn": f"arn:aws:eks:us-west-2:{ACCT}:cluster/{name}-eks"}}
    if failure:
        out["FailureMessage"] = failure
    return out


@pytest.fixture
def sagemaker() -> Any:
    return boto3.client("sagemaker", region_name="us-west-2")


def test_paginates_describes_and_explains_what_is_not_offered(sagemaker: Any) -> None:
    with Stubber(sagemaker) as stub:
        stub.add_response("list_clusters", {"ClusterSummaries": [summary("ml-cluster"), summary("slurm-hpc")], "NextToken": "p2"}, {})
        stub.add_response(
            "list_clusters", {"ClusterSummaries": [summary("new-one", "Creating"), summary("broken", "Failed")]}, {"NextToken": "p2"}
        )
        stub.add_response("describe_cluster", described("ml-cluster"), {"ClusterName": "ml-cluster"})
        stub.add_response("describe_cluster", described("slurm-hpc", eks=False), {"ClusterName": "slurm-hpc"})
        stub.add_response("describe_cluster", described("new-one", "Creating"), {"ClusterName": "new-one"})
        stub.add_response(
            "describe_cluster", described("broken", "Failed", failure="InsufficientCapacity for ml.p5.48xlarge"), {"ClusterName": "broken"}
        )
        clusters = list_hyperpod_clusters(client=sagemaker)
        stub.assert_no_pending_responses()
    assert [c.name for c in clusters] == ["ml-cluster", "broken", "new-one", "slurm-hpc"]
    ok, broken, creating, slurm = clusters
    assert ok.offered and ok.orchestrator == "eks" and ok.eks_cluster_name == "ml-cluster-eks" and ok.eks_region == "us-west-2"
    assert slurm.orchestrator == "slurm" and not slurm.offered and "Slurm" in slurm.reason
    assert not creating.offered and creating.reason.startswith("status Creating") and "InService" in creating.reason
    assert "InsufficientCapacity" in broken.reason


def test_access_denied_names_the_permissions(sagemaker: Any) -> None:
    with Stubber(sagemaker) as stub:
        stub.add_client_error("list_clusters", "AccessDeniedException", "not authorized to perform: sagemaker:ListClusters", 400)
        with pytest.raises(
            ClusterError, match=r"cannot list HyperPod clusters in us-west-2: AccessDeniedException; .*sagemaker:ListClusters"
        ):
            list_hyperpod_clusters(client=sagemaker)


def test_a_cluster_deleted_between_list_and_describe_is_left_out(sagemaker: Any) -> None:
    with Stubber(sagemaker) as stub:
        stub.add_response("list_clusters", {"ClusterSummaries": [summary("gone"), summary("ml-cluster")]}, {})
        stub.add_client_error(
            "describe_cluster", "ResourceNotFound", "Cluster gone not found", 400, expected_params={"ClusterName": "gone"}
        )
        stub.add_response("describe_cluster", described("ml-cluster"), {"ClusterName": "ml-cluster"})
        assert [c.name for c in list_hyperpod_clusters(client=sagemaker)] == ["ml-cluster"]


def test_describe_unknown_cluster(sagemaker: Any) -> None:
    with Stubber(sagemaker) as stub:
        stub.add_client_error("describe_cluster", "ResourceNotFound", "not found", 400)
        with pytest.raises(ClusterError, match="no HyperPod cluster 'nope' in us-west-2: check the name and the region"):
            describe_hyperpod_cluster("nope", client=sagemaker)


def test_slurm_cluster_is_refused_with_its_reason() -> None:
    slurm = HyperPodCluster(
        name="hpc", arn="arn", status="InService", region="us-west-2", orchestrator="slurm", reason="orchestrated by Slurm: x"
    )
    with pytest.raises(ClusterError, match="HyperPod cluster 'hpc' cannot be used: orchestrated by Slurm"):
        hyperpod_api_client(slurm)


def test_eks_cluster_to_kubernetes_client_without_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """moto's EKS: DescribeCluster gives endpoint and CA; the client then carries an EKS token."""
    from moto import mock_aws

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    with mock_aws():
        eks = boto3.client("eks", region_name="us-west-2")
        eks.create_cluster(name="ml-cluster-eks", roleArn=f"arn:aws:iam::{ACCT}:role/eks", resourcesVpcConfig={"subnetIds": ["subnet-1"]})
        cluster = HyperPodCluster(
            name="ml-cluster",
            arn="arn",
            status="InService",
            region="us-west-2",
            orchestrator="eks",
            eks_cluster_arn=f"arn:aws:eks:us-west-2:{ACCT}:cluster/ml-cluster-eks",
        )
        api = hyperpod_api_client(cluster)
        endpoint = eks.describe_cluster(name="ml-cluster-eks")["cluster"]["endpoint"]
    cfg = api.configuration
    assert cfg.host == endpoint and endpoint.startswith("https://")
    assert cfg.api_key["BearerToken"].startswith("k8s-aws-v1.")
    assert open(cfg.ssl_ca_cert, "rb").read()  # the CA from DescribeCluster was written for TLS


def test_namespaces_and_rayclusters_as_choices() -> None:
    with FakeHTTPServer() as kube:
        kube.route(
            "GET",
            "/api/v1/namespaces",
            Response(
                200,
                {
                    "kind": "NamespaceList",
                    "apiVersion": "v1",
                    "metadata": {},
                    "items": [{"metadata": {"name": n}} for n in ("kube-system", "zeta", "default", "hyperpod-ns-team-a")],
                },
            ),
        )
        ray = {
            "apiVersion": "ray.io/v1",
            "kind": "RayClusterList",
            "metadata": {},
            "items": [
                {"metadata": {"name": "pending", "namespace": "hyperpod-ns-team-a"}, "status": {"conditions": []}},
                {
                    "metadata": {"name": "maze", "namespace": "hyperpod-ns-team-a", "labels": {"sagemaker.user/created-by": "alice"}},
                    "status": {"conditions": [{"type": "HeadPodReady", "status": "True"}]},
                },
            ],
        }
        kube.route("GET", r"/apis/ray\.io/v1/namespaces/hyperpod-ns-team-a/rayclusters", Response(200, ray))
        api = kube_api_client(kube.url)
        names, note = list_namespaces(api)
        choices = list_rayclusters(api, "hyperpod-ns-team-a")
        kube.route("GET", "/api/v1/namespaces", k8s_status(403, "Forbidden", 'namespaces is forbidden: User "alice" cannot list resource'))
        fallback, why = list_namespaces(api, fallback=("hyperpod-ns-team-a",))
    assert names == ["hyperpod-ns-team-a", "default", "zeta"] and note == ""
    assert [(c.name, c.ready, c.created_by) for c in choices] == [("maze", True, "alice"), ("pending", False, "")]
    assert choices[0].address == "sagemaker_ray://maze/hyperpod-ns-team-a"
    assert fallback == ["hyperpod-ns-team-a"] and "not allowed to list namespaces" in why
