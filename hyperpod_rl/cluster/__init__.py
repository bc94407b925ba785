"""Ray clusters on SageMaker HyperPod: typed spec, KubeRay manifests and rules, status, Kubernetes I/O, dashboard access.

``spec``, ``manifest`` (pure), ``rules``/``crd`` (the KubeRay rule set; read packaged CRDs) and
``status`` are imported eagerly; the I/O names (``kube``, ``access``, ``probe``) load on first use
so that importing ``hyperpod_rl.cluster.spec`` stays cheap (no kubernetes, boto3 or requests import).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hyperpod_rl.cluster.crd import KUBERAY_VERSIONS
from hyperpod_rl.cluster.rules import RuleReport, check_manifest, validate_manifest
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
    from hyperpod_rl.cluster.probe import dashboard_probe

__all__ = [
    "ClusterReport",
    "ClusterSpec",
    "ClusterStatus",
    "HeadSpec",
    "HyperPodDashboard",
    "KUBERAY_VERSIONS",
    "PortForwardDashboard",
    "RayClusterClient",
    "RuleReport",
    "StorageSpec",
    "WorkerGroupSpec",
    "check_manifest",
    "dashboard_probe",
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
    "dashboard_probe": "probe",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"hyperpod_rl.cluster.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'hyperpod_rl.cluster' has no attribute {name!r}")
