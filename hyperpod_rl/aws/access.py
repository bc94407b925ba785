"""Can this identity use Ray on that HyperPod cluster? Checked before connecting, each gap with its fix.

Four steps, in the order a failure at one makes the next meaningless:

1. **AWS identity**: ``sts.get_caller_identity``. An assumed role
   (``arn:aws:sts::<acct>:assumed-role/<role>/<session>``, what Studio runs as) is mapped to the
   IAM role ARN that EKS access entries name: Studio's ``ExecutionRoleArn`` when the metadata
   carries it, else ``iam.get_role`` (keeps the role's path, e.g. ``service-role/``), else
   ``arn:aws:iam::<acct>:role/<role>`` (path unknown; said in the result).
2. **EKS access entry**: ``eks.describe_access_entry(clusterName, principalArn)``;
   ``ResourceNotFoundException`` means the role has none.
3. **Ray RBAC**: ``SelfSubjectAccessReview`` for ``create/get/list/delete`` on ``rayclusters.ray.io``
   in the namespace, what the HyperPod cluster-access policies
   ``AmazonSagemakerHyperpodTrainingPolicy`` (RayCluster, RayJob, RayCronJob) or
   ``AmazonSagemakerHyperpodInferencePolicy`` (RayCluster, RayService) grant.
4. **Ray endpoint operator**: the API group ``connection.access.sagemaker.amazonaws.com/v1alpha1``
   must serve ``raydashboardconnections`` (a 404 means its Helm chart is not installed), and the
   identity must be allowed to create one.

Sources: AWS SageMaker developer guide (*Managing Ray workloads with kubectl*, *Installing the
HyperPod Ray Endpoint Operator*), EKS API reference (``DescribeAccessEntry``), Kubernetes
``authorization.k8s.io/v1``. See docs/studio.md and docs/hyperpod-setup.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hyperpod_rl.aws._clients import aws_client, error_code
from hyperpod_rl.checks import Check
from hyperpod_rl.errors import ClusterError, HyperpodRLError

__all__ = ["Principal", "RAY_VERBS", "caller_principal", "check_access", "check_k8s_access"]

RAY_VERBS: tuple[str, ...] = ("create", "get", "list", "delete")
"""Verbs on ``rayclusters.ray.io`` a person needs to launch, watch and delete clusters."""
TRAINING_POLICY = "AmazonSagemakerHyperpodTrainingPolicy"
INFERENCE_POLICY = "AmazonSagemakerHyperpodInferencePolicy"
OPERATOR_CHART = (
    "the HyperPod Ray Endpoint Operator Helm chart (hyperpod-ray-endpoint-operator, in aws/sagemaker-hyperpod-cli "
    "helm_chart/HyperPodHelmChart; AWS page 'Installing the HyperPod Ray Endpoint Operator')"
)
_CONNECTION_GROUP = "connection.access.sagemaker.amazonaws.com"
_CONNECTION_VERSION = "v1alpha1"
_CONNECTION_PLURAL = "raydashboardconnections"


@dataclass(frozen=True)
class Principal:
    """Who the caller is, and the ARN an EKS access entry names for it.

    Attributes:
        caller_arn: ``Arn`` from ``GetCallerIdentity``.
        account: the account id.
        principal_arn: the IAM user or role ARN access entries use.
        exact: False when the role's path could not be read (``principal_arn`` assumes none).
    """

    caller_arn: str
    account: str
    principal_arn: str
    exact: bool = True


def caller_principal(
    *, sts: Any = None, iam: Any = None, execution_role_arn: str = "", session: Any = None, region: str | None = None
) -> Principal:
    """The caller (STS) and the IAM principal ARN its EKS access entry would name.

    Args:
        sts / iam: boto3 clients (default: from ``session`` / ``region``).
        execution_role_arn: Studio's ``ExecutionRoleArn`` when known (preferred when its role
            name matches the assumed role).

    Raises:
        ClusterError: no AWS credentials, or STS refused the call.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    sts = sts or aws_client("sts", session=session, region=region)
    try:
        ident = sts.get_caller_identity()
    except ClientError as exc:
        raise ClusterError(f"STS GetCallerIdentity failed: {error_code(exc)}; check the AWS credentials") from None
    except BotoCoreError as exc:
        raise ClusterError(
            f"no AWS identity: {type(exc).__name__}; configure credentials (Studio execution role, aws sso login or AWS_PROFILE)"
        ) from None
    arn, account = str(ident["Arn"]), str(ident["Account"])
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "sts" or not parts[5].startswith("assumed-role/"):
        return Principal(arn, account, arn)
    partition, role = parts[1], parts[5].split("/")[1]
    if execution_role_arn and execution_role_arn.rsplit("/", 1)[-1] == role:
        return Principal(arn, account, execution_role_arn)
    try:
        iam = iam or aws_client("iam", session=session, region=region)
        return Principal(arn, account, str(iam.get_role(RoleName=role)["Role"]["Arn"]))
    except (ClientError, BotoCoreError, HyperpodRLError):
        return Principal(arn, account, f"arn:{partition}:iam::{account}:role/{role}", exact=False)


def _entry_fix(eks_cluster: str, principal: str, namespace: str, region: str) -> str:
    return (
        f"ask an admin: aws eks create-access-entry --cluster-name {eks_cluster} --principal-arn {principal} --region {region}; "
        f"aws eks associate-access-policy --cluster-name {eks_cluster} --principal-arn {principal} "
        f"--policy-arn arn:aws:eks::aws:cluster-access-policy/{TRAINING_POLICY} --access-scope type=namespace,namespaces={namespace}"
    )


def check_k8s_access(api_client: Any, namespace: str, *, principal: str = "your role") -> list[Check]:
    """Steps 3 and 4: Ray RBAC in ``namespace`` and the Ray endpoint operator.

    Args:
        api_client: a ``kubernetes`` ApiClient authenticated as the person.
        namespace: where their RayClusters live.
        principal: named in the fix.

    Returns:
        Two checks: ``"Ray RBAC (ray.io)"`` and ``"Ray endpoint operator"``.
    """
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    auth = k8s.AuthorizationV1Api(api_client)

    def allowed(group: str, resource: str, verb: str) -> bool:
        review = k8s.V1SelfSubjectAccessReview(
            spec=k8s.V1SelfSubjectAccessReviewSpec(
                resource_attributes=k8s.V1ResourceAttributes(group=group, resource=resource, verb=verb, namespace=namespace)
            )
        )
        return bool(auth.create_self_subject_access_review(review, _request_timeout=15).status.allowed)

    checks: list[Check] = []
    try:
        missing = [v for v in RAY_VERBS if not allowed("ray.io", "rayclusters", v)]
    except (ApiException, OSError) as exc:
        status = getattr(exc, "status", None)
        return [
            Check(
                name="Ray RBAC (ray.io)",
                status="fail" if status == 401 else "warn",
                detail=f"cannot ask the API server (HTTP {status or type(exc).__name__})",
                fix="check the EKS access entry first" if status == 401 else "retry; check the network to the EKS endpoint",
            )
        ]
    if missing:
        checks.append(
            Check(
                name="Ray RBAC (ray.io)",
                status="fail",
                detail=f"{principal} may not {'/'.join(missing)} rayclusters.ray.io in namespace {namespace}",
                fix=f"associate {TRAINING_POLICY} (or {INFERENCE_POLICY}) with the access entry, scoped to namespace {namespace}",
            )
        )
    else:
        checks.append(Check(name="Ray RBAC (ray.io)", status="ok", detail=f"may {'/'.join(RAY_VERBS)} rayclusters in {namespace}"))
    try:
        resources = k8s.CustomObjectsApi(api_client).get_api_resources(_CONNECTION_GROUP, _CONNECTION_VERSION, _request_timeout=15)
        served = any(r.name == _CONNECTION_PLURAL for r in resources.resources or [])
    except ApiException as exc:
        if exc.status != 404:
            checks.append(
                Check(name="Ray endpoint operator", status="warn", detail=f"API discovery answered HTTP {exc.status}", fix="retry")
            )
            return checks
        served = False
    if not served:
        checks.append(
            Check(
                name="Ray endpoint operator",
                status="fail",
                detail=f"{_CONNECTION_GROUP}/{_CONNECTION_VERSION} {_CONNECTION_PLURAL} is not served (404): the operator is not installed",
                fix=f"ask an admin to install {OPERATOR_CHART}; until then use port_forward + Ray token (docs/hyperpod-setup.md)",
            )
        )
    elif not allowed(_CONNECTION_GROUP, _CONNECTION_PLURAL, "create"):
        checks.append(
            Check(
                name="Ray endpoint operator",
                status="fail",
                detail=f"installed, but {principal} may not create {_CONNECTION_PLURAL} in {namespace}",
                fix=f"associate {TRAINING_POLICY} scoped to {namespace}; note the operator lets only a RayCluster's creator connect",
            )
        )
    else:
        checks.append(
            Check(name="Ray endpoint operator", status="ok", detail=f"installed; may create dashboard connections in {namespace}")
        )
    return checks


def check_access(
    eks_cluster: str,
    namespace: str = "default",
    *,
    region: str | None = None,
    session: Any = None,
    sts: Any = None,
    eks: Any = None,
    iam: Any = None,
    api_client: Any = None,
    execution_role_arn: str = "",
    principal: Principal | None = None,
) -> list[Check]:
    """Check, before connecting, that this identity can use Ray on an EKS-orchestrated HyperPod cluster.

    Example:
        >>> for c in check_access("hp-eks", "hyperpod-ns-team-a", region="us-west-2"):  # doctest: +SKIP
        ...     print(c.line())
        [ok] AWS identity: arn:aws:sts::111122223333:assumed-role/AmazonSageMaker-ExecutionRole/SageMaker
        [fail] EKS access entry: no access entry for arn:aws:iam::111122223333:role/... -> ask an admin: ...

    Args:
        eks_cluster: the EKS cluster's name (``HyperPodCluster.eks_cluster_name``).
        namespace: the namespace of the person's RayClusters.
        region: AWS region of the EKS cluster.
        session: ``boto3.Session`` for default clients; sts / eks / iam: boto3 clients.
        api_client: ``kubernetes`` ApiClient (default: built from IAM with ``eks_api_client``).
        execution_role_arn: Studio's execution role ARN when known.
        principal: the caller, when already resolved (skips the STS call).

    Returns:
        Checks in order: AWS identity, EKS access entry, Ray RBAC (ray.io), Ray endpoint
        operator. Steps after a failing one are ``skip`` with the reason.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        principal = principal or caller_principal(sts=sts, iam=iam, execution_role_arn=execution_role_arn, session=session, region=region)
    except (ClusterError, HyperpodRLError) as err:
        return [Check(name="AWS identity", status="fail", detail=str(err), fix="configure AWS credentials and AWS_REGION")] + [
            Check(name=n, status="skip", detail="no AWS identity")
            for n in ("EKS access entry", "Ray RBAC (ray.io)", "Ray endpoint operator")
        ]
    note = "" if principal.exact else " (role path not readable: assumed none)"
    checks = [Check(name="AWS identity", status="ok", detail=f"{principal.caller_arn} as {principal.principal_arn}{note}")]
    eks = eks or aws_client("eks", session=session, region=region)
    where = eks.meta.region_name
    try:
        entry = eks.describe_access_entry(clusterName=eks_cluster, principalArn=principal.principal_arn)["accessEntry"]
        policies = []
        try:
            pages = eks.get_paginator("list_associated_access_policies").paginate(
                clusterName=eks_cluster, principalArn=principal.principal_arn
            )
            policies = [p["policyArn"].rsplit("/", 1)[-1] for page in pages for p in page.get("associatedAccessPolicies", [])]
        except (ClientError, BotoCoreError):
            policies = ["(not readable)"]
        groups = entry.get("kubernetesGroups") or []
        checks.append(
            Check(
                name="EKS access entry",
                status="ok",
                detail=f"{entry.get('type', 'STANDARD')} entry on {eks_cluster}; policies: {', '.join(policies) or 'none'}"
                + (f"; groups: {', '.join(groups)}" if groups else ""),
            )
        )
    except ClientError as exc:
        code = error_code(exc)
        if code == "ResourceNotFoundException":
            checks.append(
                Check(
                    name="EKS access entry",
                    status="fail",
                    detail=f"no access entry for {principal.principal_arn}{note} on EKS cluster {eks_cluster}",
                    fix=_entry_fix(eks_cluster, principal.principal_arn, namespace, where),
                )
            )
            return checks + [
                Check(name=n, status="skip", detail="no EKS access entry") for n in ("Ray RBAC (ray.io)", "Ray endpoint operator")
            ]
        checks.append(
            Check(
                name="EKS access entry",
                status="warn",
                detail=f"cannot read access entries ({code}): the role lacks eks:DescribeAccessEntry",
                fix="nothing to do if the checks below pass; otherwise ask an admin to check the access entry",
            )
        )
    except BotoCoreError as exc:
        checks.append(Check(name="EKS access entry", status="warn", detail=f"EKS unreachable ({type(exc).__name__})", fix="retry"))
    try:
        if api_client is None:
            from hyperpod_rl.cluster.access import eks_api_client

            api_client = eks_api_client(eks_cluster, region=where, session=session)
    except ClusterError as err:
        return checks + [
            Check(name="Ray RBAC (ray.io)", status="fail", detail=str(err), fix="the role needs eks:DescribeCluster"),
            Check(name="Ray endpoint operator", status="skip", detail="no Kubernetes client"),
        ]
    return checks + check_k8s_access(api_client, namespace, principal=principal.principal_arn)
