"""Ray clusters on SageMaker HyperPod: typed spec, KubeRay manifests, status, Kubernetes I/O, dashboard access.

``spec`` and ``status`` are pure and imported eagerly; the I/O names (``kube``, ``access``,
``manifest``) load on first use so that importing ``hyperpod_rl.cluster.spec`` stays cheap
(no kubernetes, boto3 or requests import).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hyperpod_rl.cluster.spec import ClusterSpec, HeadSpec, StorageSpec, WorkerGroupSpec
from hyperpod_rl.cluster.status import ClusterStatus

if TYPE_CHECKING:
    from hyperpod_rl.cluster.access import (
        HyperPodDashboard,
        PortForwardDashboard,
        eks_api_client,
        eks_token,
        port_forward,
        read_ray_token,
    )
    from hyperpod_rl.cluster.kube import (
        ClusterReport,
        RayClusterClient,
        http_probe,
        load_api_client,
    )
    from hyperpod_rl.cluster.manifest import validate_manifest

__all__ = [
    "ClusterReport",
    "ClusterSpec",
    "ClusterStatus",
    "HeadSpec",
    "HyperPodDashboard",
    "PortForwardDashboard",
    "RayClusterClient",
    "StorageSpec",
    "WorkerGroupSpec",
    "eks_api_client",
    "eks_token",
    "http_probe",
    "load_api_client",
    "port_forward",
    "read_ray_token",
    "validate_manifest",
]

_LAZY = {
    "ClusterReport": "kube",
    "RayClusterClient": "kube",
    "http_probe": "kube",
    "load_api_client": "kube",
    "HyperPodDashboard": "access",
    "PortForwardDashboard": "access",
    "eks_api_client": "access",
    "eks_token": "access",
    "port_forward": "access",
    "read_ray_token": "access",
    "validate_manifest": "manifest",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"hyperpod_rl.cluster.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'hyperpod_rl.cluster' has no attribute {name!r}")
