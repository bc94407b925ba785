"""``sagemaker_ray://`` addresses in a Studio space with no kubeconfig: the HyperPod cluster, named once
(``HYPERPOD_RL_HYPERPOD_CLUSTER`` or ``hyperpod_cluster=``), gives the EKS API from IAM credentials alone.

SageMaker ``DescribeCluster`` goes through botocore's ``Stubber`` (requests and responses checked
against the service model; moto's SageMaker has no ``Orchestrator``); EKS ``DescribeCluster`` is moto's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.cluster.access import HyperPodDashboard, cluster_access, hyperpod_eks_api_client
from hyperpod_rl.errors import ClusterError
from tests.aws.test_discovery import ACCT, described


class _Session(boto3.Session):
    """A real boto3 session whose SageMaker client is the stubbed one (EKS and STS stay moto's)."""

    def __init__(self, sagemaker: Any) -> None:
        super().__init__(region_name="us-west-2")
        self._sagemaker = sagemaker

    def client(self, service_name: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._sagemaker if service_name == "sagemaker" else super().client(service_name, *args, **kwargs)


@pytest.fixture
def no_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_HYPERPOD_CLUSTER", raising=False)


def test_hyperpod_cluster_to_eks_client(no_kubeconfig: None) -> None:
    from moto import mock_aws

    sm = boto3.client("sagemaker", region_name="us-west-2")
    with mock_aws(), Stubber(sm) as stub:
        eks = boto3.client("eks", region_name="us-west-2")
        eks.create_cluster(name="ml-cluster-eks", roleArn=f"arn:aws:iam::{ACCT}:role/eks", resourcesVpcConfig={"subnetIds": ["subnet-1"]})
        endpoint = eks.describe_cluster(name="ml-cluster-eks")["cluster"]["endpoint"]
        stub.add_response("describe_cluster", described("ml-cluster"), {"ClusterName": "ml-cluster"})
        api = hyperpod_eks_api_client("ml-cluster", session=_Session(sm))
        stub.assert_no_pending_responses()
    assert api.configuration.host == endpoint
    assert api.configuration.api_key["BearerToken"].startswith("k8s-aws-v1.")


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (described("hpc", eks=False), r"HyperPod cluster 'hpc' has no EKS orchestrator \(Slurm\?\)"),
        (described("hpc", "Creating"), r"HyperPod cluster 'hpc' is Creating: wait until it is InService"),
    ],
)
def test_clusters_that_cannot_serve_an_address_say_why(no_kubeconfig: None, response: dict[str, Any], message: str) -> None:
    sm = boto3.client("sagemaker", region_name="us-west-2")
    with Stubber(sm) as stub:
        stub.add_response("describe_cluster", response, {"ClusterName": "hpc"})
        with pytest.raises(ClusterError, match=message):
            hyperpod_eks_api_client("hpc", sagemaker=sm)


def test_unknown_cluster_and_access_denied(no_kubeconfig: None) -> None:
    sm = boto3.client("sagemaker", region_name="us-west-2")
    with Stubber(sm) as stub:
        stub.add_client_error("describe_cluster", "ResourceNotFound", "Cluster not found", 400, expected_params={"ClusterName": "nope"})
        stub.add_client_error("describe_cluster", "AccessDeniedException", "denied", 400, expected_params={"ClusterName": "nope"})
        with pytest.raises(ClusterError, match=r"no HyperPod cluster 'nope' in us-west-2: check HYPERPOD_RL_HYPERPOD_CLUSTER"):
            hyperpod_eks_api_client("nope", sagemaker=sm)
        with pytest.raises(ClusterError, match=r"AccessDeniedException; the role needs sagemaker:DescribeCluster"):
            hyperpod_eks_api_client("nope", sagemaker=sm)


def test_address_resolves_through_the_named_hyperpod_cluster(no_kubeconfig: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """cluster_access with HYPERPOD_RL_HYPERPOD_CLUSTER and no kubeconfig: the same HyperPodDashboard as explicit names,
    on the EKS endpoint the SageMaker -> EKS chain found."""
    from moto import mock_aws

    sm = boto3.client("sagemaker", region_name="us-west-2")
    monkeypatch.setenv("HYPERPOD_RL_HYPERPOD_CLUSTER", "ml-cluster")
    with mock_aws(), Stubber(sm) as stub:
        eks = boto3.client("eks", region_name="us-west-2")
        eks.create_cluster(name="ml-cluster-eks", roleArn=f"arn:aws:iam::{ACCT}:role/eks", resourcesVpcConfig={"subnetIds": ["subnet-1"]})
        endpoint = eks.describe_cluster(name="ml-cluster-eks")["cluster"]["endpoint"]
        stub.add_response("describe_cluster", described("ml-cluster"), {"ClusterName": "ml-cluster"})
        monkeypatch.setattr("boto3.Session", lambda **kw: _Session(sm))
        access = cluster_access("sagemaker_ray://maze/hyperpod-ns-team-a")
    assert isinstance(access, HyperPodDashboard)
    assert (access.cluster_name, access.namespace) == ("maze", "hyperpod-ns-team-a")
    assert access.custom.api_client.configuration.host == endpoint


def test_cli_without_kubeconfig_or_cluster_names_both_fixes(no_kubeconfig: None) -> None:
    result = CliRunner().invoke(app, ["job", "status", "x", "--address", "sagemaker_ray://a/b"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # a clean exit, not a crash
    assert "cannot reach sagemaker_ray://a/b: no HyperPod cluster named and no kubeconfig" in result.output
    assert "HYPERPOD_RL_HYPERPOD_CLUSTER=<HyperPod cluster>" in result.output and "aws eks update-kubeconfig" in result.output


def test_aws_region_alone_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """SageMaker sets AWS_REGION; botocore reads only AWS_DEFAULT_REGION, so the clients add it."""
    from hyperpod_rl.aws._clients import aws_client
    from hyperpod_rl.errors import ConfigError

    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    assert aws_client("sagemaker").meta.region_name == "eu-central-1"
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(ConfigError, match=r"no AWS region: set AWS_REGION \(or AWS_DEFAULT_REGION\), or pass --region"):
        aws_client("sagemaker")
