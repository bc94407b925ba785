"""Access checks before connecting: STS -> EKS access entry -> ray.io RBAC -> Ray endpoint operator.

STS and IAM run in moto; EKS access entries through botocore's ``Stubber`` (moto has no access
entries), validated against the EKS service model; the Kubernetes side (``SelfSubjectAccessReview``,
API discovery of ``connection.access.sagemaker.amazonaws.com/v1alpha1``) against a local HTTP
server answering with the ``authorization.k8s.io/v1`` and ``APIResourceList`` shapes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from hyperpod_rl.aws.access import caller_principal, check_access, check_k8s_access
from tests.fakes import FakeHTTPServer, Request, Response, k8s_status, kube_api_client

ACCT = "123456789012"  # moto's account
ROLE_PATH_ARN = f"arn:aws:iam::{ACCT}:role/service-role/AmazonSageMaker-ExecutionRole-2026"
SSAR = r"/apis/authorization\.k8s\.io/v1/selfsubjectaccessreviews"
CONN = r"/apis/connection\.access\.sagemaker\.amazonaws\.com/v1alpha1"
CONN_RESOURCES = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "connection.access.sagemaker.amazonaws.com/v1alpha1",
    "resources": [
        {
            "name": "raydashboardconnections",
            "singularName": "raydashboardconnection",
            "namespaced": True,
            "kind": "RayDashboardConnection",
            "verbs": ["create", "get", "list"],
        }
    ],
}


def reviewer(allowed: set[tuple[str, str]]) -> Any:
    """SelfSubjectAccessReview answers: allowed when (resource, verb) is in ``allowed``."""

    def handle(req: Request, _m: Any) -> Response:
        body = req.json()
        attrs = body["spec"]["resourceAttributes"]
        ok = (attrs["resource"], attrs["verb"]) in allowed
        return Response(201, {**body, "status": {"allowed": ok, **({} if ok else {"reason": ""})}})

    return handle


@pytest.fixture
def kube() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as server:
        yield server


@pytest.fixture
def studio_role() -> Iterator[tuple[Any, Any]]:
    """moto: an execution role with a path, assumed the way Studio assumes it; STS and IAM clients."""
    with mock_aws():
        iam = boto3.client("iam", region_name="us-west-2")
        trust = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}],
        }
        iam.create_role(RoleName="AmazonSageMaker-ExecutionRole-2026", Path="/service-role/", AssumeRolePolicyDocument=json.dumps(trust))
        creds = boto3.client("sts", region_name="us-west-2").assume_role(RoleArn=ROLE_PATH_ARN, RoleSessionName="SageMaker")["Credentials"]
        session = boto3.Session(
            aws_access_key_id=creds["AccessKeyId"],
            aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"],
            region_name="us-west-2",
        )
        yield session.client("sts"), iam


def eks_with(stub_setup: Any) -> Any:
    eks = boto3.client("eks", region_name="us-west-2")
    stub = Stubber(eks)
    stub_setup(stub)
    stub.activate()
    return eks


def test_assumed_role_maps_to_the_role_arn_with_its_path(studio_role: tuple[Any, Any]) -> None:
    sts, iam = studio_role
    p = caller_principal(sts=sts, iam=iam)
    assert p.caller_arn == f"arn:aws:sts::{ACCT}:assumed-role/AmazonSageMaker-ExecutionRole-2026/SageMaker"
    assert p.principal_arn == ROLE_PATH_ARN and p.exact
    # iam:GetRole denied: the path cannot be read, the result says so
    denied_iam = boto3.client("iam", region_name="us-west-2")
    with Stubber(denied_iam) as stub:
        stub.add_client_error("get_role", "AccessDenied", "not authorized to perform: iam:GetRole", 403)
        guess = caller_principal(sts=sts, iam=denied_iam)
    assert guess.principal_arn == f"arn:aws:iam::{ACCT}:role/AmazonSageMaker-ExecutionRole-2026" and not guess.exact
    # Studio's metadata names the role: no IAM call needed
    assert caller_principal(sts=sts, iam=denied_iam, execution_role_arn=ROLE_PATH_ARN).principal_arn == ROLE_PATH_ARN


def test_missing_access_entry_names_the_fix_and_skips_the_rest(studio_role: tuple[Any, Any]) -> None:
    sts, iam = studio_role
    eks = eks_with(
        lambda s: s.add_client_error(
            "describe_access_entry",
            "ResourceNotFoundException",
            f"The specified access entry resource does not exist. PrincipalArn: {ROLE_PATH_ARN}",
            404,
            expected_params={"clusterName": "hp-eks", "principalArn": ROLE_PATH_ARN},
        )
    )
    checks = check_access("hp-eks", "hyperpod-ns-team-a", sts=sts, iam=iam, eks=eks)
    assert [(c.name, c.status) for c in checks] == [
        ("AWS identity", "ok"),
        ("EKS access entry", "fail"),
        ("Ray RBAC (ray.io)", "skip"),
        ("Ray endpoint operator", "skip"),
    ]
    fix = checks[1].fix
    assert f"aws eks create-access-entry --cluster-name hp-eks --principal-arn {ROLE_PATH_ARN}" in fix
    assert "AmazonSagemakerHyperpodTrainingPolicy" in fix and "namespaces=hyperpod-ns-team-a" in fix


def entry_ok(stub: Stubber) -> None:
    stub.add_response(
        "describe_access_entry",
        {
            "accessEntry": {
                "clusterName": "hp-eks",
                "principalArn": ROLE_PATH_ARN,
                "kubernetesGroups": [],
                "accessEntryArn": f"arn:aws:eks:us-west-2:{ACCT}:access-entry/hp-eks/role/{ACCT}/AmazonSageMaker-ExecutionRole-2026/1ac9",
                "username": f"arn:aws:sts::{ACCT}:assumed-role/AmazonSageMaker-ExecutionRole-2026/{{{{SessionName}}}}",
                "type": "STANDARD",
            }
        },
        {"clusterName": "hp-eks", "principalArn": ROLE_PATH_ARN},
    )
    stub.add_response(
        "list_associated_access_policies",
        {
            "clusterName": "hp-eks",
            "principalArn": ROLE_PATH_ARN,
            "associatedAccessPolicies": [
                {
                    "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonSagemakerHyperpodTrainingPolicy",
                    "accessScope": {"type": "namespace", "namespaces": ["hyperpod-ns-team-a"]},
                }
            ],
        },
        {"clusterName": "hp-eks", "principalArn": ROLE_PATH_ARN},
    )


def test_all_good(studio_role: tuple[Any, Any], kube: FakeHTTPServer) -> None:
    sts, iam = studio_role
    kube.route(
        "POST", SSAR, reviewer({("rayclusters", v) for v in ("create", "get", "list", "delete")} | {("raydashboardconnections", "create")})
    )
    kube.route("GET", CONN, Response(200, CONN_RESOURCES))
    checks = check_access("hp-eks", "hyperpod-ns-team-a", sts=sts, iam=iam, eks=eks_with(entry_ok), api_client=kube_api_client(kube.url))
    assert [c.status for c in checks] == ["ok"] * 4, [c.line() for c in checks]
    assert "AmazonSagemakerHyperpodTrainingPolicy" in checks[1].detail
    reviews = [r.json()["spec"]["resourceAttributes"] for r in kube.requests if r.path.endswith("selfsubjectaccessreviews")]
    assert {(a["group"], a["verb"], a["namespace"]) for a in reviews} >= {
        ("ray.io", "create", "hyperpod-ns-team-a"),
        ("ray.io", "delete", "hyperpod-ns-team-a"),
    }


def test_missing_ray_rbac_grant(kube: FakeHTTPServer) -> None:
    kube.route("POST", SSAR, reviewer({("rayclusters", "get"), ("rayclusters", "list")}))
    kube.route("GET", CONN, Response(200, CONN_RESOURCES))
    rbac, operator = check_k8s_access(kube_api_client(kube.url), "team-b", principal="arn:aws:iam::1:role/r")
    assert rbac.status == "fail" and "may not create/delete rayclusters.ray.io in namespace team-b" in rbac.detail
    assert "AmazonSagemakerHyperpodTrainingPolicy" in rbac.fix and "scoped to namespace team-b" in rbac.fix
    assert operator.status == "fail" and "may not create raydashboardconnections" in operator.detail


def test_missing_endpoint_operator_is_a_404_that_names_the_helm_chart(kube: FakeHTTPServer) -> None:
    kube.route("POST", SSAR, reviewer({("rayclusters", v) for v in ("create", "get", "list", "delete")}))
    kube.route("GET", CONN, k8s_status(404, "NotFound", "the server could not find the requested resource"))
    rbac, operator = check_k8s_access(kube_api_client(kube.url), "default")
    assert rbac.status == "ok"
    assert operator.status == "fail" and "(404)" in operator.detail and "not installed" in operator.detail
    assert "hyperpod-ray-endpoint-operator" in operator.fix and "Helm chart" in operator.fix


def test_access_entry_unreadable_is_a_warning_not_a_failure(studio_role: tuple[Any, Any], kube: FakeHTTPServer) -> None:
    sts, iam = studio_role
    kube.route(
        "POST", SSAR, reviewer({("rayclusters", v) for v in ("create", "get", "list", "delete")} | {("raydashboardconnections", "create")})
    )
    kube.route("GET", CONN, Response(200, CONN_RESOURCES))
    eks = eks_with(
        lambda s: s.add_client_error("describe_access_entry", "AccessDeniedException", "not authorized: eks:DescribeAccessEntry", 403)
    )
    checks = check_access("hp-eks", "default", sts=sts, iam=iam, eks=eks, api_client=kube_api_client(kube.url))
    assert [c.status for c in checks] == ["ok", "warn", "ok", "ok"]
    assert "eks:DescribeAccessEntry" in checks[1].detail


def test_no_credentials_fails_first_and_skips_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(var)
    checks = check_access("hp-eks", "default", session=boto3.Session(region_name="us-west-2"))
    assert [c.status for c in checks] == ["fail", "skip", "skip", "skip"]
    assert "no AWS identity: NoCredentialsError" in checks[0].detail
