"""RayCluster lifecycle on Kubernetes through the official ``kubernetes`` client.

Every call goes through an injected ``kubernetes.client.ApiClient``; nothing here reads a
kubeconfig on its own (use ``load_api_client`` or ``access.eks_api_client``). API errors
become `ClusterError`s that say what to do: missing CRD, RBAC forbidden, namespace not found,
quota exceeded, invalid object. Readiness reads the ``HeadPodReady`` and
``RayClusterProvisioned`` conditions (never ``status.state``), then probes the dashboard.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as _Urllib3Error

from hyperpod_rl.cluster.manifest import identity
from hyperpod_rl.cluster.rules import validate_manifest
from hyperpod_rl.cluster.spec import ClusterSpec
from hyperpod_rl.cluster.status import ClusterStatus, StatusReading, read_status
from hyperpod_rl.errors import ClusterError, ClusterNotReady, ClusterRefused, ClusterTimeout

__all__ = [
    "ClusterReport",
    "DashboardProbe",
    "EventInfo",
    "PodInfo",
    "RayClusterClient",
    "http_probe",
    "load_api_client",
]

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "ray.io", "v1", "rayclusters"
FIELD_MANAGER = "hyperpod-rl"
_NETWORK_ERRORS = (_Urllib3Error, OSError)
GPU, EFA = "nvidia.com/gpu", "vpc.amazonaws.com/efa"
DashboardProbe = Callable[[], int]
"""Returns the HTTP status of ``GET /api/version`` on the dashboard (0 when unreachable)."""


def load_api_client(*, context: str | None = None, kubeconfig: str | None = None) -> k8s.ApiClient:
    """An ApiClient from a kubeconfig (``aws eks update-kubeconfig`` writes one), else in-cluster.

    Raises:
        ClusterError: neither a kubeconfig nor an in-cluster service account is available.
    """
    import os

    from kubernetes import config

    try:  # KUBECONFIG read now, not when kubernetes was imported (a notebook may set it later)
        return config.new_client_from_config(config_file=kubeconfig or os.environ.get("KUBECONFIG"), context=context)
    except (config.ConfigException, OSError, TypeError, ValueError) as exc:  # no usable kubeconfig: try in-cluster
        first = exc
    try:
        cfg = k8s.Configuration()
        config.load_incluster_config(client_configuration=cfg)
        return k8s.ApiClient(cfg)
    except config.ConfigException:
        raise ClusterError(
            f"no Kubernetes credentials: kubeconfig failed ({type(first).__name__}) and not in a pod; "
            "run `aws eks update-kubeconfig --name <eks-cluster>` or use hyperpod_rl.cluster.access.eks_api_client"
        ) from None


def http_probe(
    address: str,
    *,
    headers: dict[str, str] | None = None,
    cookies: dict[str, str] | None = None,
    timeout_s: float = 5.0,
    verify: bool | str = True,
) -> DashboardProbe:
    """A `DashboardProbe` that GETs ``{address}/api/version`` with ``requests``.

    Args:
        address: dashboard base URL, e.g. ``http://127.0.0.1:8265``.
        headers / cookies: credentials (never logged).
        timeout_s: per-request timeout in seconds.
    """
    import requests

    def probe() -> int:
        try:
            return requests.get(
                f"{address.rstrip('/')}/api/version", headers=headers, cookies=cookies, timeout=timeout_s, verify=verify
            ).status_code
        except requests.RequestException:
            return 0

    return probe


@dataclass(frozen=True)
class PodInfo:
    """One Ray pod as Kubernetes reports it."""

    name: str
    node_type: str  # "head" | "worker" (label ray.io/node-type)
    group: str  # label ray.io/group
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    ready: bool
    reason: str = ""  # e.g. "Unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."


@dataclass(frozen=True)
class EventInfo:
    """A Kubernetes event about the RayCluster or one of its pods."""

    type: str  # Normal | Warning
    reason: str
    object: str  # "Pod/name" or "RayCluster/name"
    message: str
    count: int = 1


@dataclass(frozen=True)
class ClusterReport:
    """Status of one RayCluster: conditions, pods, recent events and the dashboard probe."""

    name: str
    namespace: str
    reading: StatusReading
    pods: tuple[PodInfo, ...] = ()
    events: tuple[EventInfo, ...] = ()
    dashboard_status: int | None = None
    """HTTP status of the dashboard probe; None when not probed (cluster not ready yet)."""

    @property
    def status(self) -> ClusterStatus:
        """The `ClusterStatus` from the conditions."""
        return self.reading.status

    @property
    def usable(self) -> bool:
        """Ready by conditions and the dashboard answered 200."""
        return self.status.is_ready() and self.dashboard_status == 200

    def summary(self) -> str:
        """A few lines for people: status, pods not ready, warning events."""
        lines = [f"RayCluster {self.namespace}/{self.name}: {self.status.value} ({self.reading.message})"]
        if self.status.is_ready() and self.dashboard_status not in (None, 200):
            lines.append(f"dashboard answered {self.dashboard_status or 'nothing'} (not serving jobs yet)")
        for pod in self.pods:
            if not pod.ready:
                lines.append(f"pod {pod.name} ({pod.node_type}/{pod.group}): {pod.phase} {pod.reason}".rstrip())
        for ev in self.events:
            if ev.type == "Warning":
                lines.append(f"event {ev.reason} on {ev.object}: {ev.message}")
        lines.extend(self.hints())
        return "\n  ".join(lines)

    def hints(self) -> list[str]:
        """What to do about pods stuck Pending for lack of GPUs/EFA or with image pull errors."""
        reasons = " ".join(p.reason for p in self.pods if not p.ready)
        out = []
        for resource, what in ((GPU, "GPUs"), (EFA, "EFA interfaces")):
            if f"Insufficient {resource}" in reasons:
                out.append(
                    f"hint: not enough free {what} ({resource}) on schedulable nodes of the requested instance type; "
                    "lower replicas or per-worker GPUs, pick another instance_type, or wait for capacity"
                )
        if "ImagePullBackOff" in reasons or "ErrImagePull" in reasons:
            out.append("hint: the image cannot be pulled; check ClusterSpec.image and the node role's ECR access")
        return out


def _pod_info(pod: dict[str, Any]) -> PodInfo:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    labels = meta.get("labels") or {}
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    ready = (conds.get("Ready") or {}).get("status") == "True"
    reason = ""
    sched = conds.get("PodScheduled") or {}
    if sched.get("status") == "False":
        reason = f"{sched.get('reason', '')}: {sched.get('message', '')}"
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting and not reason:
            reason = f"{waiting.get('reason', '')}: {waiting.get('message', '')}".rstrip(": ")
    return PodInfo(
        meta.get("name", "?"),
        labels.get("ray.io/node-type", "?"),
        labels.get("ray.io/group", "?"),
        status.get("phase", "Unknown"),
        ready,
        reason,
    )


class RayClusterClient:
    """Apply, read, list, delete and wait for RayClusters.

    Args:
        api_client: a configured ``kubernetes.client.ApiClient`` (see `load_api_client`).
        field_manager: server-side-apply manager name.
        sleep / clock: injectable for tests (seconds).

    Example:
        >>> rc = RayClusterClient(load_api_client())  # doctest: +SKIP
        >>> rc.apply(ClusterSpec.from_preset("seed", name="maze"))  # doctest: +SKIP
        >>> rc.wait_ready("maze", timeout_s=900, dashboard=http_probe("http://127.0.0.1:8265"))  # doctest: +SKIP
    """

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        field_manager: str = FIELD_MANAGER,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api_client = api_client
        self.custom = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)
        self.field_manager = field_manager
        self._sleep, self._clock = sleep, clock

    def __repr__(self) -> str:
        return f"RayClusterClient(host={self.api_client.configuration.host!r})"

    # ----- CRUD -------------------------------------------------------------------------------
    def apply(self, spec: ClusterSpec | dict[str, Any]) -> dict[str, Any]:
        """Server-side apply a RayCluster (create or update), after validating it against the CRD.

        Uses ``PATCH`` with ``application/apply-patch+yaml``, ``fieldManager=hyperpod-rl``,
        ``force=true`` and ``fieldValidation=Strict``.

        Returns:
            The RayCluster as stored by the API server.

        Raises:
            ConfigError: the manifest breaks a rule of the KubeRay 1.7 rule set (``cluster.rules``).
            ClusterError: missing CRD, forbidden, namespace not found, quota exceeded...
        """
        manifest = spec.to_manifest() if isinstance(spec, ClusterSpec) else spec
        validate_manifest(manifest)
        name, ns = identity(manifest)
        try:
            stored = self.custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                ns,
                PLURAL,
                name,
                manifest,
                field_manager=self.field_manager,
                force=True,
                field_validation="Strict",
                _content_type="application/apply-patch+yaml",
            )
        except ApiException as exc:
            raise _cluster_error(exc, verb="apply", name=name, namespace=ns) from None
        except _NETWORK_ERRORS as exc:
            raise _unreachable(exc, self.api_client) from None
        if stored is None:  # kubernetes>=35 maps only 200 to a body; a create answers 201
            stored = self.get(name, ns)
        if stored is None:
            raise ClusterError(f"applied RayCluster {ns}/{name} but cannot read it back; check `kubectl get raycluster -n {ns}`")
        return stored

    def get(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """The RayCluster object, or None when it does not exist."""
        try:
            return self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        except ApiException as exc:
            if exc.status == 404 and _reason(exc)[2] == "rayclusters":
                return None
            raise _cluster_error(exc, verb="get", name=name, namespace=namespace) from None
        except _NETWORK_ERRORS as exc:
            raise _unreachable(exc, self.api_client) from None

    def list(self, namespace: str = "default") -> list[dict[str, Any]]:
        """All RayClusters in ``namespace``."""
        try:
            return self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL).get("items", [])
        except ApiException as exc:
            raise _cluster_error(exc, verb="list", name="", namespace=namespace) from None
        except _NETWORK_ERRORS as exc:
            raise _unreachable(exc, self.api_client) from None

    def delete(self, name: str, namespace: str = "default") -> bool:
        """Delete a RayCluster (pods go with it). Returns False when it did not exist."""
        try:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, propagation_policy="Background")
            return True
        except ApiException as exc:
            if exc.status == 404 and _reason(exc)[2] == "rayclusters":
                return False
            raise _cluster_error(exc, verb="delete", name=name, namespace=namespace) from None
        except _NETWORK_ERRORS as exc:
            raise _unreachable(exc, self.api_client) from None

    # ----- status -----------------------------------------------------------------------------
    def pods(self, name: str, namespace: str = "default") -> list[PodInfo]:
        """Ray pods of the cluster (label ``ray.io/cluster=<name>``), head first."""
        try:
            raw = self.core.list_namespaced_pod(namespace, label_selector=f"ray.io/cluster={name}", _preload_content=False)
        except ApiException as exc:
            if exc.status == 403:  # pods are context for people; a role without them can still wait
                log.warning("listing pods in %s is forbidden; status shows conditions only", namespace)
                return []
            raise _cluster_error(exc, verb="list pods of", name=name, namespace=namespace) from None
        items = json.loads(raw.data).get("items", [])
        return sorted((_pod_info(p) for p in items), key=lambda p: (p.node_type != "head", p.name))

    def _raw_events(self, name: str, namespace: str, pod_names: tuple[str, ...]) -> list[dict[str, Any]]:
        """Event objects about the RayCluster and its pods, oldest first ([] when events are forbidden)."""
        try:
            raw = self.core.list_namespaced_event(namespace, _preload_content=False)
        except ApiException as exc:
            if exc.status == 403:  # events are nice to have; a role without them still works
                return []
            raise _cluster_error(exc, verb="list events of", name=name, namespace=namespace) from None
        wanted = {("RayCluster", name)} | {("Pod", p) for p in pod_names}
        return [ev for ev in json.loads(raw.data).get("items", []) if _about(ev) in wanted]

    def events(self, name: str, namespace: str = "default", pod_names: tuple[str, ...] = (), limit: int = 20) -> list[EventInfo]:
        """Recent events about the RayCluster and its pods (newest last, at most ``limit``)."""
        return [_event_info(ev) for ev in self._raw_events(name, namespace, pod_names)][-limit:]

    def report(self, name: str, namespace: str = "default", *, dashboard: DashboardProbe | None = None) -> ClusterReport:
        """Conditions + pods + events; the dashboard is probed only once conditions say ready.

        A Warning event ``InvalidRayClusterSpec`` / ``InvalidRayClusterMetadata`` about the current
        object makes the status `ClusterStatus.REFUSED` (see ``cluster.status.find_refusal``).
        """
        obj = self.get(name, namespace)
        if obj is None:
            return ClusterReport(name, namespace, read_status(None))
        pods = tuple(self.pods(name, namespace))
        raw_events = self._raw_events(name, namespace, tuple(p.name for p in pods))
        reading = read_status(obj, raw_events)
        probed = dashboard() if (dashboard is not None and reading.status.is_ready()) else None
        return ClusterReport(name, namespace, reading, pods, tuple(_event_info(ev) for ev in raw_events[-20:]), probed)

    def wait_ready(
        self,
        name: str,
        namespace: str = "default",
        *,
        timeout_s: float = 900.0,
        poll_interval_s: float = 5.0,
        dashboard: DashboardProbe | str | None = None,
        on_report: Callable[[ClusterReport], None] | None = None,
    ) -> ClusterReport:
        """Wait until the conditions say ready and the dashboard answers ``/api/version`` with 200.

        Args:
            name / namespace: the RayCluster.
            timeout_s: give up after this many seconds.
            poll_interval_s: seconds between polls.
            dashboard: probe of the dashboard (`http_probe`, or an access object's ``probe``), or a
                dashboard address to GET without credentials (``auth_mode="disabled"`` clusters);
                None trusts the conditions alone (not recommended: a submit right after
                "ready" can get 503).
            on_report: called with every `ClusterReport` (progress display).

        Returns:
            The first usable `ClusterReport`.

        Raises:
            ClusterRefused: at once, when the KubeRay operator refused the RayCluster (the
                message carries its event).
            ClusterNotReady: at once when waiting cannot help otherwise: suspended, failed (e.g.
                quota), deleted or absent, or the dashboard rejects the credentials (401/403).
            ClusterTimeout: not usable after ``timeout_s`` seconds; the message carries the last
                status, pods that are not ready (e.g. Pending for lack of GPUs) and warnings.
        """
        if isinstance(dashboard, str):
            dashboard = http_probe(dashboard)
        deadline = self._clock() + timeout_s
        while True:
            report = self.report(name, namespace, dashboard=dashboard)
            if on_report is not None:
                on_report(report)
            if report.status.is_ready() and (dashboard is None or report.dashboard_status == 200):
                return report
            if report.status is ClusterStatus.REFUSED:
                raise ClusterRefused(report.summary())
            if report.status.is_terminal():
                raise ClusterNotReady(report.summary())
            if report.dashboard_status in (401, 403):
                raise ClusterNotReady(
                    f"{report.summary()}\n  the dashboard rejected the credentials ({report.dashboard_status}); "
                    "pass the Ray auth token or re-acquire the dashboard cookie"
                )
            if self._clock() >= deadline:
                raise ClusterTimeout(f"not usable after {timeout_s:g} s: {report.summary()}")
            self._sleep(poll_interval_s)


def _about(ev: dict[str, Any]) -> tuple[Any, Any]:
    """(kind, name) an event is about: ``involvedObject`` (core/v1) or ``regarding`` (events.k8s.io/v1)."""
    obj = ev.get("involvedObject") or ev.get("regarding") or {}
    return obj.get("kind"), obj.get("name")


def _event_info(ev: dict[str, Any]) -> EventInfo:
    kind, name = _about(ev)
    count = ev.get("count") or (ev.get("series") or {}).get("count") or 1
    return EventInfo(
        ev.get("type", "Normal"), ev.get("reason", ""), f"{kind}/{name}", ev.get("message") or ev.get("note") or "", int(count)
    )


# ----- errors -----------------------------------------------------------------------------------
def _reason(exc: ApiException) -> tuple[str, str, str]:
    """(reason, message, details.kind) of a Kubernetes ``Status`` body."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    if not isinstance(body, dict):
        body = {}
    return body.get("reason", exc.reason or ""), body.get("message", ""), (body.get("details") or {}).get("kind", "")


_HELP = "see docs/hyperpod-setup.md"


def _cluster_error(exc: ApiException, *, verb: str, name: str, namespace: str) -> ClusterError:
    reason, message, kind = _reason(exc)
    what = f"{verb} RayCluster {namespace}/{name}".rstrip("/") if name else f"{verb} RayClusters in {namespace}"
    status = exc.status
    if status == 404 and kind == "namespaces":
        return ClusterError(
            f"cannot {what}: namespace {namespace!r} not found; create it "
            f"(kubectl create namespace {namespace}) or set ClusterSpec.namespace"
        )
    if status == 404 and kind in ("", None) and "could not find the requested resource" in message:
        return ClusterError(
            f"cannot {what}: the RayCluster CRD (rayclusters.ray.io/v1) is not installed; "
            f"install the KubeRay operator 1.7 with Helm ({_HELP})"
        )
    if status == 403 and "exceeded quota" in message:
        return ClusterError(
            f"cannot {what}: ResourceQuota exceeded in namespace {namespace!r}: {message}; "
            "lower replicas or GPUs, delete idle clusters, or ask the admin for more quota"
        )
    if status == 403:
        return ClusterError(
            f"cannot {what}: forbidden by RBAC: {message}; ask the cluster admin to give your "
            f"role an EKS access entry with the HyperPod training policy for this namespace ({_HELP})"
        )
    if status == 401:
        return ClusterError(
            f"cannot {what}: the API server rejected the credentials (expired EKS token?); "
            "refresh them (aws sso login / new session) and retry"
        )
    if status in (400, 422):
        return ClusterError(f"cannot {what}: the API server rejected the object ({reason}): {message}")
    if status == 409:
        return ClusterError(f"cannot {what}: conflict ({reason}): {message}; retry")
    return ClusterError(f"cannot {what}: HTTP {status} {reason}: {message}".rstrip(": "))


def _unreachable(exc: Exception, api_client: k8s.ApiClient) -> ClusterError:
    return ClusterError(
        f"cannot reach the Kubernetes API at {api_client.configuration.host}: {type(exc).__name__}; "
        "check the network and the EKS endpoint access settings"
    )
