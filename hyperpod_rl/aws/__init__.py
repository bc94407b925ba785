"""AWS around the Ray cluster: HyperPod discovery, access checks, observability endpoints, S3 export.

Every function takes its boto3 clients (or a ``boto3.Session``) as parameters, so tests drive
them through botocore's ``Stubber`` or moto, and no call reaches AWS by accident. Names load on
first use; importing this package imports neither boto3 nor kubernetes.

- :mod:`~hyperpod_rl.aws.discovery`: ``list_hyperpod_clusters`` -> ``hyperpod_api_client`` ->
  ``list_namespaces`` -> ``list_rayclusters``.
- :mod:`~hyperpod_rl.aws.access`: ``check_access`` (STS -> EKS access entry -> ray.io RBAC -> Ray
  endpoint operator).
- :mod:`~hyperpod_rl.aws.observability`: Grafana / AMP endpoints of the HyperPod observability add-on.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "HyperPodCluster",
    "Observability",
    "Principal",
    "RayClusterChoice",
    "caller_principal",
    "check_access",
    "check_k8s_access",
    "describe_hyperpod_cluster",
    "hyperpod_api_client",
    "list_hyperpod_clusters",
    "list_namespaces",
    "list_rayclusters",
    "observability_endpoints",
]

_LAZY = {
    "HyperPodCluster": "discovery",
    "RayClusterChoice": "discovery",
    "describe_hyperpod_cluster": "discovery",
    "hyperpod_api_client": "discovery",
    "list_hyperpod_clusters": "discovery",
    "list_namespaces": "discovery",
    "list_rayclusters": "discovery",
    "Principal": "access",
    "caller_principal": "access",
    "check_access": "access",
    "check_k8s_access": "access",
    "Observability": "observability",
    "observability_endpoints": "observability",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"hyperpod_rl.aws.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'hyperpod_rl.aws' has no attribute {name!r}")
