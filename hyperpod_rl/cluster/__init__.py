"""Ray clusters: typed spec, KubeRay manifests, status, Kubernetes I/O and dashboard access."""

from hyperpod_rl.cluster.spec import ClusterSpec, HeadSpec, StorageSpec, WorkerGroupSpec
from hyperpod_rl.cluster.status import ClusterStatus

__all__ = ["ClusterSpec", "ClusterStatus", "HeadSpec", "StorageSpec", "WorkerGroupSpec"]
