"""User-facing RayCluster status, derived from KubeRay status conditions (never ``status.state``).

Mirrors KubeRay v1.7.0 ``ray-operator/apis/ray/v1/raycluster_types.go``:

* ``RayClusterConditionType`` (lines 641-665): ``RayClusterProvisioned`` ("all Ray Pods are
  ready for the first time"; never flips back once True), ``HeadPodReady``, ``ReplicaFailure``
  (a pod failed to be created or deleted), ``RayClusterSuspending``, ``RayClusterSuspended``;
* reasons ``AllPodRunningAndReadyFirstTime``, ``RayClusterPodsProvisioning``, ``HeadPodNotFound``,
  ``HeadPodRunningAndReady``;
* ``RayClusterStatus`` fields ``readyWorkerReplicas``, ``desiredWorkerReplicas``,
  ``observedGeneration``; ``state`` is marked "Deprecated: replaced by the Conditions field".

Conditions are on by default since KubeRay 1.3 (feature gate ``RayClusterStatusConditions``).
Because ``RayClusterProvisioned`` stays True after a worker is lost, readiness also needs
``readyWorkerReplicas >= desiredWorkerReplicas`` and ``HeadPodReady`` to be True *now*.
Pure: no I/O. The dashboard probe that completes readiness lives in ``cluster.kube``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["ClusterStatus", "Condition", "StatusReading", "read_status"]

HEAD_POD_READY = "HeadPodReady"
PROVISIONED = "RayClusterProvisioned"
REPLICA_FAILURE = "ReplicaFailure"
SUSPENDING = "RayClusterSuspending"
SUSPENDED = "RayClusterSuspended"


class ClusterStatus(StrEnum):
    """Where a RayCluster stands, as a user needs to know it."""

    NOT_FOUND = "not_found"
    """No RayCluster of that name in the namespace."""
    UNKNOWN = "unknown"
    """No status conditions: an operator older than KubeRay 1.3, or not reconciled yet."""
    PENDING = "pending"
    """The head pod is not ready yet (scheduling, pulling the image, starting Ray)."""
    PROVISIONING = "provisioning"
    """The head is ready; worker pods are still coming up, or a spec change is not observed yet."""
    READY = "ready"
    """Head ready, every desired worker ready, latest spec observed. The dashboard is probed
    separately before the cluster is called usable."""
    DEGRADED = "degraded"
    """Was provisioned once, but now the head or some workers are not ready (e.g. a node lost)."""
    FAILED = "failed"
    """KubeRay reports ``ReplicaFailure``: a pod could not be created or deleted (quota, webhook)."""
    SUSPENDING = "suspending"
    """``spec.suspend`` is true and pods are being deleted."""
    SUSPENDED = "suspended"
    """All pods deleted by suspension; set ``spec.suspend: false`` to resume."""
    DELETING = "deleting"
    """The RayCluster has a deletion timestamp."""

    def is_ready(self) -> bool:
        """True only for `READY`."""
        return self is ClusterStatus.READY

    def is_terminal(self) -> bool:
        """True when waiting cannot make the cluster ready without a user action."""
        return self in _TERMINAL


_TERMINAL = frozenset(
    {ClusterStatus.NOT_FOUND, ClusterStatus.FAILED, ClusterStatus.SUSPENDING, ClusterStatus.SUSPENDED, ClusterStatus.DELETING}
)


@dataclass(frozen=True)
class Condition:
    """One ``metav1.Condition`` of ``status.conditions``."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""

    @property
    def is_true(self) -> bool:
        """``status == "True"``."""
        return self.status == "True"


@dataclass(frozen=True)
class StatusReading:
    """The status of one RayCluster object, with the reason in words."""

    status: ClusterStatus
    message: str
    ready_workers: int = 0
    desired_workers: int = 0
    conditions: tuple[Condition, ...] = ()


def _conditions(obj: dict[str, Any]) -> dict[str, Condition]:
    out = {}
    for raw in (obj.get("status") or {}).get("conditions") or []:
        cond = Condition(raw.get("type", ""), raw.get("status", "Unknown"), raw.get("reason", ""), raw.get("message", ""))
        out[cond.type] = cond
    return out


def read_status(obj: dict[str, Any] | None) -> StatusReading:
    """Classify a RayCluster object (as returned by the API server) into a `ClusterStatus`.

    Args:
        obj: the RayCluster dict, or None when it does not exist.

    Returns:
        A `StatusReading`; ``status.is_ready()`` is True only when the head is ready, the
        cluster was provisioned, every desired worker is ready and the operator has observed
        the latest generation. ``status.state`` is never read.
    """
    if obj is None:
        return StatusReading(ClusterStatus.NOT_FOUND, "RayCluster not found")
    meta = obj.get("metadata") or {}
    st = obj.get("status") or {}
    ready = int(st.get("readyWorkerReplicas") or 0)
    desired = int(st.get("desiredWorkerReplicas") or 0)
    conds = _conditions(obj)
    parts = tuple(conds.values())

    def reading(status: ClusterStatus, message: str) -> StatusReading:
        return StatusReading(status, message, ready, desired, parts)

    if meta.get("deletionTimestamp"):
        return reading(ClusterStatus.DELETING, "RayCluster is being deleted")
    if SUSPENDED in conds and conds[SUSPENDED].is_true:
        return reading(ClusterStatus.SUSPENDED, "RayCluster is suspended; set spec.suspend=false to resume")
    if (SUSPENDING in conds and conds[SUSPENDING].is_true) or (obj.get("spec") or {}).get("suspend") is True:
        return reading(ClusterStatus.SUSPENDING, "RayCluster is suspending (spec.suspend=true)")
    if not conds:
        return reading(
            ClusterStatus.UNKNOWN,
            "status has no conditions: the operator has not reconciled this RayCluster yet, or it is "
            "older than KubeRay 1.3 / runs with feature gate RayClusterStatusConditions off; upgrade to KubeRay 1.7",
        )
    if REPLICA_FAILURE in conds and conds[REPLICA_FAILURE].is_true:
        cond = conds[REPLICA_FAILURE]
        return reading(ClusterStatus.FAILED, f"ReplicaFailure ({cond.reason}): {cond.message}")
    head = conds.get(HEAD_POD_READY)
    provisioned = conds.get(PROVISIONED)
    head_ok = head is not None and head.is_true
    generation, observed = meta.get("generation"), st.get("observedGeneration")
    if provisioned is not None and provisioned.is_true:
        if not head_ok:
            return reading(ClusterStatus.DEGRADED, f"head pod not ready ({_why(head, 'no HeadPodReady condition')})")
        if ready < desired:
            return reading(ClusterStatus.DEGRADED, f"{ready} of {desired} worker pods ready")
        if generation is not None and observed is not None and observed < generation:
            return reading(ClusterStatus.PROVISIONING, f"operator has not observed generation {generation} yet (at {observed})")
        return reading(ClusterStatus.READY, f"head ready, {ready} of {desired} worker pods ready")
    if head_ok:
        return reading(ClusterStatus.PROVISIONING, f"head ready, {ready} of {desired} worker pods ready")
    return reading(ClusterStatus.PENDING, f"head pod not ready ({_why(head, 'no HeadPodReady condition yet')})")


def _why(cond: Condition | None, default: str) -> str:
    if cond is None:
        return default
    return f"{cond.reason}: {cond.message}" if cond.message else cond.reason
