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
A RayCluster the operator **refuses** gets no status at all: ``rayClusterReconcile``
(``controllers/ray/raycluster_controller.go``) records a Warning event with reason
``InvalidRayClusterMetadata`` or ``InvalidRayClusterSpec`` ("The RayCluster spec is invalid
<ns>/<name>: <why>") and returns without creating pods. Such an object reads as `REFUSED` (terminal)
when its newest refusal event is not older than the last change of the object and the operator
has not observed the current generation. An ``InvalidRayClusterSpec`` event whose note starts with
"RayCluster spec warning" (KubeRay 1.7's autoscaler-v1 restartPolicy notice) is not a refusal.

Pure: no I/O. The dashboard probe that completes readiness lives in ``cluster.kube``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = ["REFUSAL_REASONS", "ClusterStatus", "Condition", "Refusal", "StatusReading", "find_refusal", "read_status"]

HEAD_POD_READY = "HeadPodReady"
PROVISIONED = "RayClusterProvisioned"
REPLICA_FAILURE = "ReplicaFailure"
SUSPENDING = "RayClusterSuspending"
SUSPENDED = "RayClusterSuspended"
REFUSAL_REASONS = frozenset({"InvalidRayClusterSpec", "InvalidRayClusterMetadata"})
"""Warning event reasons with which the KubeRay operator (1.5-1.7) refuses a RayCluster."""
_NOT_A_REFUSAL = "RayCluster spec warning"


class ClusterStatus(StrEnum):
    """Where a RayCluster stands, as a user needs to know it."""

    NOT_FOUND = "not_found"
    """No RayCluster of that name in the namespace."""
    UNKNOWN = "unknown"
    """No status conditions and no refusal event: not reconciled yet (is the operator running and
    watching the namespace?), or an operator older than KubeRay 1.3."""
    REFUSED = "refused"
    """The operator refused the RayCluster (Warning event ``InvalidRayClusterSpec`` /
    ``InvalidRayClusterMetadata``); it creates no pods until the object is fixed and applied again."""
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
    {
        ClusterStatus.NOT_FOUND,
        ClusterStatus.REFUSED,
        ClusterStatus.FAILED,
        ClusterStatus.SUSPENDING,
        ClusterStatus.SUSPENDED,
        ClusterStatus.DELETING,
    }
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


@dataclass(frozen=True)
class Refusal:
    """The operator's refusal of a RayCluster, from its newest refusal event."""

    reason: str
    """``InvalidRayClusterSpec`` or ``InvalidRayClusterMetadata``."""
    message: str
    """The event's note, e.g. ``The RayCluster spec is invalid ns/name: <why>``."""


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _event_time(ev: Mapping[str, Any]) -> datetime | None:
    """Last time an event was seen: ``series.lastObservedTime``, ``eventTime`` (events.k8s.io
    recorders, KubeRay 1.7), else ``lastTimestamp``/``firstTimestamp`` (core recorders, 1.5)."""
    series = ev.get("series") or {}
    for value in (
        series.get("lastObservedTime"),
        ev.get("lastTimestamp"),
        ev.get("deprecatedLastTimestamp"),
        ev.get("eventTime"),
        ev.get("firstTimestamp"),
    ):
        found = _time(value)
        if found is not None:
            return found
    return None


def _last_change(meta: Mapping[str, Any]) -> datetime | None:
    """When the object's spec was last written: newest non-status ``managedFields`` time, else creation."""
    times = [
        _time(entry.get("time"))
        for entry in meta.get("managedFields") or []
        if isinstance(entry, Mapping) and entry.get("subresource") != "status"
    ]
    known = [t for t in times if t is not None]
    return max(known) if known else _time(meta.get("creationTimestamp"))


def find_refusal(obj: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> Refusal | None:
    """The operator's current refusal of ``obj``, if any.

    Args:
        obj: the RayCluster as the API server returns it.
        events: Kubernetes Event objects (``v1`` ``Event`` or ``events.k8s.io/v1``) of the namespace;
            those about other objects are ignored.

    Returns:
        The newest refusal (Warning, reason in `REFUSAL_REASONS`) about this object, unless the
        operator has observed the current generation since (``status.observedGeneration``) or the
        event is older than the object's last change (a fixed spec not yet re-reconciled).
    """
    meta = obj.get("metadata") or {}
    generation, observed = meta.get("generation"), (obj.get("status") or {}).get("observedGeneration")
    if observed is not None and (generation is None or observed >= generation):
        return None
    newest: tuple[datetime | None, Mapping[str, Any]] | None = None
    for ev in events:
        about = ev.get("involvedObject") or ev.get("regarding") or {}
        if about.get("kind") != "RayCluster" or about.get("name") != meta.get("name"):
            continue
        if about.get("uid") and meta.get("uid") and about["uid"] != meta["uid"]:
            continue  # an event about an earlier object of the same name
        note = str(ev.get("message") or ev.get("note") or "")
        if ev.get("type") != "Warning" or ev.get("reason") not in REFUSAL_REASONS or note.startswith(_NOT_A_REFUSAL):
            continue
        when = _event_time(ev)
        if newest is None or (when is not None and (newest[0] is None or when >= newest[0])):
            newest = (when, ev)
    if newest is None:
        return None
    when, ev = newest
    changed = _last_change(meta)
    if when is not None and changed is not None and when < changed:
        return None
    return Refusal(str(ev.get("reason")), str(ev.get("message") or ev.get("note") or ""))


def read_status(obj: dict[str, Any] | None, events: Iterable[Mapping[str, Any]] = ()) -> StatusReading:
    """Classify a RayCluster object (as returned by the API server) into a `ClusterStatus`.

    Args:
        obj: the RayCluster dict, or None when it does not exist.
        events: Kubernetes Events of its namespace (see `find_refusal`); without them a refused
            RayCluster reads as `UNKNOWN`.

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
    refusal = find_refusal(obj, events)
    if refusal is not None:
        return reading(
            ClusterStatus.REFUSED,
            f"the KubeRay operator refused this RayCluster ({refusal.reason}): {refusal.message}; "
            "fix it (`hyperpod-rl cluster validate` names the rule) and apply it again",
        )
    if SUSPENDED in conds and conds[SUSPENDED].is_true:
        return reading(ClusterStatus.SUSPENDED, "RayCluster is suspended; set spec.suspend=false to resume")
    if (SUSPENDING in conds and conds[SUSPENDING].is_true) or (obj.get("spec") or {}).get("suspend") is True:
        return reading(ClusterStatus.SUSPENDING, "RayCluster is suspending (spec.suspend=true)")
    if not conds:
        return reading(
            ClusterStatus.UNKNOWN,
            "status has no conditions yet: the KubeRay operator has not reconciled this RayCluster; check that it runs "
            f"and watches namespace {meta.get('namespace') or 'default'!r} and look for Warning events "
            "(an operator older than KubeRay 1.3, or with feature gate RayClusterStatusConditions off, never sets conditions)",
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
