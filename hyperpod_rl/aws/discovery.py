"""Find SageMaker HyperPod clusters and reach their Kubernetes API, with no kubeconfig.

The chain (AWS API references: SageMaker ``ListClusters`` / ``DescribeCluster``, EKS ``DescribeCluster``):

1. ``sagemaker.list_clusters`` through boto3's paginator (``NextToken``) -> ``ClusterSummaries``
   (name, ARN, ``ClusterStatus``; no orchestrator field);
2. ``sagemaker.describe_cluster`` -> ``Orchestrator.Eks.ClusterArn`` (absent for Slurm clusters);
3. ``eks.describe_cluster`` -> endpoint and CA, and an EKS bearer token presigned from STS
   (:func:`hyperpod_rl.cluster.access.eks_api_client`) -> a ``kubernetes`` ApiClient;
4. namespaces and RayClusters through that client, so a person picks
   HyperPod cluster -> namespace -> RayCluster instead of typing names.

Only clusters that are ``InService`` and orchestrated by EKS are offered; the others are listed
with the reason (:attr:`HyperPodCluster.reason`). An existing kubeconfig still works everywhere a
Kubernetes client is taken (:func:`hyperpod_rl.cluster.kube.load_api_client`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hyperpod_rl.aws._clients import aws_client, error_code
from hyperpod_rl.errors import ClusterError

__all__ = [
    "HyperPodCluster",
    "RayClusterChoice",
    "describe_hyperpod_cluster",
    "hyperpod_api_client",
    "list_hyperpod_clusters",
    "list_namespaces",
    "list_rayclusters",
]

_FIX_LIST = "the role needs sagemaker:ListClusters and sagemaker:DescribeCluster (docs/studio.md)"


class HyperPodCluster(BaseModel):
    """One HyperPod cluster as ``DescribeCluster`` reports it, and whether it can be offered."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str
    """``ClusterName``."""
    arn: str
    """``ClusterArn``."""
    status: str
    """``ClusterStatus``: Creating, Deleting, Failed, InService, RollingBack, SystemUpdating or Updating."""
    region: str
    """AWS region of the HyperPod cluster."""
    orchestrator: Literal["eks", "slurm", "unknown"]
    """``eks`` when ``Orchestrator.Eks.ClusterArn`` is set; ``slurm`` otherwise (or when ``Orchestrator.Slurm`` is set)."""
    eks_cluster_arn: str = ""
    """``Orchestrator.Eks.ClusterArn``, e.g. ``arn:aws:eks:us-west-2:111122223333:cluster/hp-eks``."""
    failure_message: str = ""
    """``FailureMessage`` of a failed cluster."""
    reason: str = ""
    """Why the cluster is not offered (``""`` when it is)."""

    @property
    def offered(self) -> bool:
        """True when Ray on this cluster can be used: EKS-orchestrated and ``InService``."""
        return not self.reason

    @property
    def eks_cluster_name(self) -> str:
        """The EKS cluster's name (the last part of its ARN), ``""`` for Slurm clusters."""
        return self.eks_cluster_arn.rsplit("/", 1)[-1] if self.eks_cluster_arn else ""

    @property
    def eks_region(self) -> str:
        """The EKS cluster's region (from its ARN), else the HyperPod cluster's."""
        parts = self.eks_cluster_arn.split(":")
        return parts[3] if len(parts) > 3 and parts[3] else self.region


def _reason(status: str, orchestrator: str, failure: str) -> str:
    if orchestrator == "slurm":
        return "orchestrated by Slurm: Ray on HyperPod needs an EKS-orchestrated cluster (KubeRay)"
    if orchestrator != "eks":
        return "no EKS orchestrator in DescribeCluster: cannot reach a Kubernetes API"
    if status != "InService":
        why = f" ({failure})" if failure else ""
        return f"status {status}{why}: wait until it is InService (SageMaker console > HyperPod clusters)"
    return ""


def describe_hyperpod_cluster(name: str, *, client: Any = None, session: Any = None, region: str | None = None) -> HyperPodCluster:
    """One HyperPod cluster by name (``DescribeCluster``).

    Args:
        name: the HyperPod cluster's name (or ARN).
        client: a boto3 ``sagemaker`` client (default: one from ``session`` / ``region``).

    Raises:
        ClusterError: no such cluster, or the role may not describe it.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    sm = client or aws_client("sagemaker", session=session, region=region)
    try:
        info = sm.describe_cluster(ClusterName=name)
    except ClientError as exc:
        code = error_code(exc)
        if code in ("ResourceNotFound", "ValidationException"):
            raise ClusterError(f"no HyperPod cluster {name!r} in {sm.meta.region_name}: check the name and the region") from None
        raise ClusterError(f"cannot describe HyperPod cluster {name!r}: {code}; {_FIX_LIST}") from None
    except BotoCoreError as exc:
        raise ClusterError(f"cannot describe HyperPod cluster {name!r}: {type(exc).__name__}; configure AWS credentials") from None
    orch = info.get("Orchestrator") or {}
    eks_arn = str((orch.get("Eks") or {}).get("ClusterArn", ""))
    orchestrator: Literal["eks", "slurm", "unknown"] = "eks" if eks_arn else "slurm" if ("Slurm" in orch or not orch) else "unknown"
    status = str(info.get("ClusterStatus", ""))
    failure = str(info.get("FailureMessage", ""))
    return HyperPodCluster(
        name=str(info["ClusterName"]),
        arn=str(info["ClusterArn"]),
        status=status,
        region=sm.meta.region_name,
        orchestrator=orchestrator,
        eks_cluster_arn=eks_arn,
        failure_message=failure,
        reason=_reason(status, orchestrator, failure),
    )


def list_hyperpod_clusters(*, client: Any = None, session: Any = None, region: str | None = None) -> list[HyperPodCluster]:
    """Every HyperPod cluster of the account in the region, offered ones first, then by name.

    Pages through ``ListClusters`` with boto3's paginator, then describes each cluster for its
    orchestrator. A cluster deleted between the two calls is left out.

    Example:
        >>> [c.name for c in list_hyperpod_clusters(region="us-west-2") if c.offered]  # doctest: +SKIP
        ['ml-cluster']

    Args:
        client: a boto3 ``sagemaker`` client (default: one from ``session`` / ``region``).
        session: a ``boto3.Session``; region: AWS region (default: the session's).

    Raises:
        ClusterError: no credentials, or the role may not list or describe clusters.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    sm = client or aws_client("sagemaker", session=session, region=region)
    names: list[str] = []
    try:
        for page in sm.get_paginator("list_clusters").paginate():
            names += [s["ClusterName"] for s in page.get("ClusterSummaries", [])]
    except ClientError as exc:
        raise ClusterError(f"cannot list HyperPod clusters in {sm.meta.region_name}: {error_code(exc)}; {_FIX_LIST}") from None
    except BotoCoreError as exc:
        raise ClusterError(
            f"cannot list HyperPod clusters: {type(exc).__name__}; configure AWS credentials (Studio execution role, aws sso login or AWS_PROFILE)"
        ) from None
    out: list[HyperPodCluster] = []
    for name in names:
        try:
            out.append(describe_hyperpod_cluster(name, client=sm))
        except ClusterError as err:
            if "no HyperPod cluster" in str(err):
                continue  # deleted since it was listed
            raise
    return sorted(out, key=lambda c: (not c.offered, c.name))


def hyperpod_api_client(cluster: HyperPodCluster | str, *, session: Any = None, region: str | None = None) -> Any:
    """A ``kubernetes`` ApiClient for a HyperPod cluster's EKS API, from IAM credentials alone.

    Args:
        cluster: a :class:`HyperPodCluster` or a HyperPod cluster name (described first).

    Raises:
        ClusterError: the cluster is not offered (Slurm, not InService: the message says why), or
            its EKS cluster cannot be described.
    """
    from hyperpod_rl.cluster.access import eks_api_client

    if isinstance(cluster, str):
        cluster = describe_hyperpod_cluster(cluster, session=session, region=region)
    if not cluster.offered:
        raise ClusterError(f"HyperPod cluster {cluster.name!r} cannot be used: {cluster.reason}")
    return eks_api_client(cluster.eks_cluster_name, region=cluster.eks_region, session=session)


def list_namespaces(api_client: Any, *, fallback: tuple[str, ...] = ("default",)) -> tuple[list[str], str]:
    """Namespaces a person may pick, task-governance namespaces (``hyperpod-ns-*``) first.

    Args:
        api_client: a ``kubernetes`` ApiClient.
        fallback: offered when listing namespaces is forbidden (namespace-scoped access).

    Returns:
        ``(names, note)``; the note says why the fallback was used (``""`` otherwise).

    Raises:
        ClusterError: the API is unreachable or rejects the credentials.
    """
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    try:
        items = k8s.CoreV1Api(api_client).list_namespace(_request_timeout=15).items
    except ApiException as exc:
        if exc.status == 403:
            return list(fallback), "not allowed to list namespaces (access scoped to namespaces): type yours if it is not listed"
        if exc.status == 401:
            raise ClusterError("the Kubernetes API rejected the credentials: check the EKS access entry (hyperpod-rl doctor)") from None
        raise ClusterError(f"cannot list namespaces: HTTP {exc.status}") from None
    except OSError as exc:
        raise ClusterError(f"cannot reach the Kubernetes API: {type(exc).__name__}") from None
    names = [ns.metadata.name for ns in items if not ns.metadata.name.startswith("kube-")]
    return sorted(names, key=lambda n: (not n.startswith("hyperpod-ns-"), n != "default", n)), ""


class RayClusterChoice(BaseModel):
    """A RayCluster a person may connect to."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str
    """``metadata.name``."""
    namespace: str
    """``metadata.namespace``."""
    ready: bool
    """``HeadPodReady`` condition is True."""
    created_by: str = ""
    """``sagemaker.user/created-by`` label (AWS's tools set it; only the creator may open the dashboard)."""

    @property
    def address(self) -> str:
        """``sagemaker_ray://<name>/<namespace>``, the address AWS's Ray tools use."""
        return f"sagemaker_ray://{self.name}/{self.namespace}"


def list_rayclusters(api_client: Any, namespace: str) -> list[RayClusterChoice]:
    """The RayClusters of a namespace, ready ones first.

    Raises:
        ClusterError: the RayCluster CRD is missing, or listing is forbidden (the message names
            the policy to associate).
    """
    from hyperpod_rl.cluster.kube import RayClusterClient

    out = []
    for obj in RayClusterClient(api_client).list(namespace):
        meta = obj.get("metadata") or {}
        conditions = (obj.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "HeadPodReady" and c.get("status") == "True" for c in conditions)
        labels = meta.get("labels") or {}
        out.append(
            RayClusterChoice(
                name=meta.get("name", ""), namespace=namespace, ready=ready, created_by=str(labels.get("sagemaker.user/created-by", ""))
            )
        )
    return sorted(out, key=lambda c: (not c.ready, c.name))
