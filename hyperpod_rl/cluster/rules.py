"""The one rule set for RayClusters: CRD schema (after CRD defaults) + the KubeRay operator's rules.

`ClusterSpec` (on construction and export), `validate_manifest` and ``hyperpod-rl cluster validate``
all run `check_manifest`. Every finding names a stable rule id, the JSON path, and the fix.

Rule families (the table with every id is in docs/cluster.md; `RULES` holds them):

* ``CRD-*`` -- the vendored CRD: ``openAPIV3Schema`` after the CRD's defaults (what the API server
  does before anything else), unknown fields (``fieldValidation=Strict``), served/deprecated
  versions, and the CRD's CEL rule on ``spec.managedBy``.
* ``KR-*`` -- what the KubeRay operator refuses although the schema accepts it. Sources, at the
  release tag of each supported version: ``ray-operator/controllers/ray/utils/validation.go``
  (``ValidateRayClusterMetadata``, ``ValidateRayClusterSpec``, ``ValidateRayClusterUpgradeOptions``),
  ``controllers/ray/raycluster_controller.go`` (``rayClusterReconcile``: which refusal becomes which
  Warning event) and ``pkg/webhooks/v1/raycluster_webhook.go``. The operator refuses a RayCluster
  by leaving it without status and recording a Warning event ``InvalidRayClusterMetadata`` or
  ``InvalidRayClusterSpec`` (see ``cluster.status``); each rule names the event it leads to.
* ``K8S-*`` -- Kubernetes' own validation of objects KubeRay creates from the RayCluster
  (``apimachinery/pkg/util/validation``): label syntax, namespace names, the ``ray.io/group``
  pod label KubeRay sets to the group name. These fail later, at pod creation.
* ``HP-*`` -- this project's rules (HyperPod conventions and settings KubeRay would silently change).

Each rule records ``since``: the first supported KubeRay version whose operator enforces it; the
rules of KubeRay 1.5 are those with ``since <= 1.5``. Rules that need an operator feature gate
report a *warning* when the gate's state is unknown and it is off by default, an *error* when
the caller says the gate is off (``feature_gates={"RayClusterMTLS": False}``).

Pure apart from reading the packaged CRD (through ``cluster.crd``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hyperpod_rl.cluster import crd as _crd
from hyperpod_rl.cluster import manifest as _m
from hyperpod_rl.errors import ConfigError

__all__ = [
    "FEATURE_GATE_DEFAULTS",
    "RULES",
    "Rule",
    "RuleReport",
    "Violation",
    "check_manifest",
    "rules_for",
    "validate_manifest",
]

Severity = Literal["error", "warning"]

FEATURE_GATE_DEFAULTS: dict[str, dict[str, bool]] = {
    # ray-operator/pkg/features/features.go at each tag
    "1.7": {
        "RayJobDeletionPolicy": True,
        "RayClusterNetworkPolicy": False,
        "GCSFaultToleranceEmbeddedStorage": False,
        "RayClusterMTLS": False,
        "RayClusterHistoryServer": False,
    },
    "1.5": {"RayJobDeletionPolicy": False},
}
"""Defaults of the operator feature gates that RayCluster validation reads, per KubeRay version."""

MAX_NAME_LENGTH = 53  # utils/constant.go MaxRayClusterNameLength (1.5 and 1.7)
_AUTH_MIN_RAY = (2, 52, 0)
_K8S_AUTH_MIN_RAY = (2, 55, 0)
_PRIORITY_MIN_RAY = (2, 56, 0)


# ----- Kubernetes name and label syntax (apimachinery/pkg/util/validation/validation.go) ----------
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def dns1035_problems(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1035 label (``IsDNS1035Label``); empty when it is one."""
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.fullmatch(value):
        out.append("must consist of lower case alphanumeric characters or '-', start with a letter and end with a letter or digit")
    return out


def dns1123_label_problems(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1123 label (``IsDNS1123Label``)."""
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(value):
        out.append("must consist of lower case alphanumeric characters or '-', and start and end with one")
    return out


def label_value_problems(value: str) -> list[str]:
    """Why ``value`` is not a valid label value (``IsValidLabelValue``)."""
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        out.append("must be empty or consist of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric")
    return out


def label_key_problems(key: str) -> list[str]:
    """Why ``key`` is not a qualified name (``IsQualifiedName``: ``[prefix/]name``)."""
    prefix, _, name = key.rpartition("/")
    out = []
    if "/" in key and not prefix:
        out.append("prefix part must be non-empty")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        out.append("prefix part must be a lowercase DNS-1123 subdomain")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        out.append("name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric")
    return out


def _parse_version(text: Any) -> tuple[int, ...] | None:
    """Go's ``version.ParseGeneric``: ``v?MAJOR.MINOR[.PATCH...]`` with anything after; None if unparseable."""
    match = re.match(r"^\s*v?([0-9]+(?:\.[0-9]+)+)", str(text or ""))
    if not match:
        return None
    parts = tuple(int(p) for p in match.group(1).split("."))
    return parts + (0,) * (3 - len(parts))


def _kuberay_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


# ----- findings and rules ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Violation:
    """One finding: ``[rule] path: message`` (the message ends with the fix)."""

    rule: str
    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"[{self.rule}] {self.path}: {self.message}"


@dataclass(frozen=True)
class _Finding:
    path: str
    message: str
    severity: Severity | None = None


@dataclass(frozen=True)
class Rule:
    """A rule: stable id, what it checks, where it comes from, from which KubeRay version on."""

    id: str
    summary: str
    source: str
    since: str
    severity: Severity
    event: str | None
    """The operator's Warning event reason when it refuses (None: not an operator refusal)."""
    check: Callable[[_Context], Iterator[_Finding]] = field(repr=False)


RULES: list[Rule] = []
"""Every rule, in the order they are checked (operator rules in the operator's order)."""


def _rule(
    rule_id: str,
    summary: str,
    *,
    source: str,
    since: str = "1.5",
    severity: Severity = "error",
    event: str | None = "InvalidRayClusterSpec",
) -> Callable[[Callable[[_Context], Iterator[_Finding]]], Callable[[_Context], Iterator[_Finding]]]:
    def register(fn: Callable[[_Context], Iterator[_Finding]]) -> Callable[[_Context], Iterator[_Finding]]:
        RULES.append(Rule(rule_id, summary, source, since, severity, event, fn))
        return fn

    return register


def rules_for(kuberay: str = _crd.DEFAULT_KUBERAY) -> list[Rule]:
    """The rules that apply to a supported KubeRay version (``since <= kuberay``)."""
    _crd.kuberay_tag(kuberay)
    return [r for r in RULES if _kuberay_key(r.since) <= _kuberay_key(kuberay)]


@dataclass
class _Context:
    obj: dict[str, Any]
    kuberay: str
    gates: dict[str, bool | None]

    def __post_init__(self) -> None:
        meta = self.obj.get("metadata") or {}
        self.name = str(meta.get("name") or "")
        self.namespace = meta.get("namespace")
        self.annotations: dict[str, Any] = meta.get("annotations") or {}
        self.labels: dict[str, Any] = meta.get("labels") or {}
        self.spec: dict[str, Any] = self.obj.get("spec") or {}
        self.head: dict[str, Any] = self.spec.get("headGroupSpec") or {}
        self.head_template: dict[str, Any] = self.head.get("template") or {}
        self.head_container = _m.ray_container(self.head_template) or {}
        self.head_path = "$.spec.headGroupSpec.template.spec.containers[0]"
        self.groups = _m.worker_groups(self.obj)
        self.autoscaling = self.spec.get("enableInTreeAutoscaling") is True
        self.autoscaler: dict[str, Any] = self.spec.get("autoscalerOptions") or {}
        self.autoscaler_v2 = self.autoscaler.get("version") == "v2"
        self.gcs_ft = self.spec.get("gcsFaultToleranceOptions")
        self.auth: dict[str, Any] = self.spec.get("authOptions") or {}

    def env(self, name: str, container: Mapping[str, Any] | None = None, path: str | None = None) -> tuple[str, dict[str, Any]] | None:
        """``(path, entry)`` of the first env var called ``name`` (head Ray container by default)."""
        container = self.head_container if container is None else container
        for i, entry in enumerate(_m.env_entries(container)):
            if entry.get("name") == name:
                return f"{path or self.head_path}.env[{i}]", entry
        return None

    def gate(self, name: str) -> bool | None:
        """True/False when known (given by the caller, or on by default), None when unknown and off by default."""
        return self.gates.get(name)

    def ray_version(self) -> tuple[int, ...] | None:
        return _parse_version(self.spec.get("rayVersion"))


def _gate_finding(ctx: _Context, gate: str, path: str, what: str) -> Iterator[_Finding]:
    state = ctx.gate(gate)
    if state is True:
        return
    if state is False:
        yield _Finding(
            path,
            f"{what} requires the {gate} feature gate, which is off in your operator; enable it (Helm value featureGates) or remove the field",
        )
    else:
        yield _Finding(
            path,
            f"{what} requires the {gate} feature gate (alpha, off by default in KubeRay {ctx.kuberay}); the operator refuses the "
            f"RayCluster unless it runs with {gate}=true: enable it or remove the field",
            "warning",
        )


# ----- CRD rule outside the schema -------------------------------------------------------------------
@_rule(
    "CRD-MANAGED-BY",
    "spec.managedBy is 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
    source="CRD x-kubernetes-validations on spec.managedBy",
    event=None,
)
def _managed_by(ctx: _Context) -> Iterator[_Finding]:
    value = ctx.spec.get("managedBy")
    if value is not None and value not in ("ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue"):
        yield _Finding(
            "$.spec.managedBy", f"{value!r} is not allowed; set 'ray.io/kuberay-operator' (or remove it) or 'kueue.x-k8s.io/multikueue'"
        )


# ----- metadata (InvalidRayClusterMetadata) -----------------------------------------------------------
@_rule(
    "KR-NAME-LENGTH",
    f"metadata.name has at most {MAX_NAME_LENGTH} characters",
    source="validation.go ValidateRayClusterMetadata (MaxRayClusterNameLength)",
    event="InvalidRayClusterMetadata",
)
def _name_length(ctx: _Context) -> Iterator[_Finding]:
    if len(ctx.name) > MAX_NAME_LENGTH:
        yield _Finding(
            "$.metadata.name",
            f"RayCluster name {ctx.name!r} has {len(ctx.name)} characters, more than {MAX_NAME_LENGTH} "
            "(KubeRay appends suffixes to build pod and service names); shorten it",
        )


@_rule(
    "KR-NAME-DNS1035",
    "metadata.name is a DNS-1035 label",
    source="validation.go ValidateRayClusterMetadata (IsDNS1035Label)",
    event="InvalidRayClusterMetadata",
)
def _name_dns(ctx: _Context) -> Iterator[_Finding]:
    problems = [p for p in dns1035_problems(ctx.name) if not (len(ctx.name) > MAX_NAME_LENGTH and "63 characters" in p)]
    if problems:  # an over-long name is KR-NAME-LENGTH's finding
        suggestion = re.sub(r"[^a-z0-9-]+", "-", ctx.name.lower()).strip("-")
        suggestion = re.sub(r"^[^a-z]+", "", suggestion)[:MAX_NAME_LENGTH].rstrip("-") or "ray-cluster"
        yield _Finding(
            "$.metadata.name",
            f"RayCluster name {ctx.name!r} is not a DNS-1035 label: {'; '.join(problems)}; use e.g. {suggestion!r}",
        )


# ----- webhook ---------------------------------------------------------------------------------------
@_rule(
    "KR-GROUP-UNIQUE",
    "worker group names are unique",
    source="webhooks/v1/raycluster_webhook.go validateWorkerGroups (optional webhook); pods of both groups would share the ray.io/group label",
    event=None,
)
def _group_unique(ctx: _Context) -> Iterator[_Finding]:
    seen: set[Any] = set()
    for path, group in ctx.groups:
        name = group.get("groupName")
        if name in seen:
            yield _Finding(f"{path}.groupName", f"worker group name {name!r} is used twice; worker group names must be unique, rename one")
        seen.add(name)


# ----- spec (InvalidRayClusterSpec), in ValidateRayClusterSpec's order ----------------------------------
@_rule("KR-HEAD-CONTAINER", "the head pod has at least one container", source="validation.go ValidateRayClusterSpec")
def _head_container(ctx: _Context) -> Iterator[_Finding]:
    if not _m.ray_container(ctx.head_template):
        yield _Finding(
            "$.spec.headGroupSpec.template.spec.containers",
            "headGroupSpec should have at least one container; add the Ray container at index 0",
        )


def _group_resource_findings(params: Mapping[str, Any], resources: Any, path: str, who: str) -> Iterator[_Finding]:
    conflicting = [k for k in ("num-cpus", "num-gpus", "memory", "resources") if params.get(k)]
    if conflicting and resources:
        yield _Finding(
            f"{path}.resources",
            f"{who}: resources are set both in rayStartParams ({', '.join(conflicting)}) and in the group's resources field; keep only one of them",
        )


def _group_label_findings(params: Mapping[str, Any], labels: Any, path: str, who: str) -> Iterator[_Finding]:
    if "labels" in params:
        yield _Finding(
            f"{path}.rayStartParams.labels",
            f"{who}: rayStartParams['labels'] is not supported; move the labels to the group's labels field",
        )
    for key, value in (labels or {}).items():
        for problem in label_key_problems(str(key)):
            yield _Finding(f"{path}.labels", f"{who}: invalid label key {key!r}: {problem}")
        for problem in label_value_problems(str(value)):
            yield _Finding(f"{path}.labels[{key!r}]", f"{who}: invalid label value {value!r}: {problem}")


@_rule(
    "KR-GROUP-RESOURCES",
    "Ray resources are set in rayStartParams or in the group's resources field, not both",
    source="validation.go validateRayGroupResources",
)
def _group_resources(ctx: _Context) -> Iterator[_Finding]:
    yield from _group_resource_findings(
        ctx.head.get("rayStartParams") or {}, ctx.head.get("resources"), "$.spec.headGroupSpec", "head group"
    )
    for path, group in ctx.groups:
        yield from _group_resource_findings(
            group.get("rayStartParams") or {}, group.get("resources"), path, f"worker group {group.get('groupName')!r}"
        )


@_rule(
    "KR-GROUP-LABELS",
    "no rayStartParams['labels']; group labels have valid keys and values",
    source="validation.go validateRayGroupLabels",
)
def _group_labels(ctx: _Context) -> Iterator[_Finding]:
    yield from _group_label_findings(ctx.head.get("rayStartParams") or {}, ctx.head.get("labels"), "$.spec.headGroupSpec", "head group")
    for path, group in ctx.groups:
        yield from _group_label_findings(
            group.get("rayStartParams") or {}, group.get("labels"), path, f"worker group {group.get('groupName')!r}"
        )


@_rule("KR-GROUP-CONTAINER", "every worker pod has at least one container", source="validation.go ValidateRayClusterSpec")
def _group_container(ctx: _Context) -> Iterator[_Finding]:
    for path, group in ctx.groups:
        if not _m.ray_container(group.get("template") or {}):
            yield _Finding(
                f"{path}.template.spec.containers", "workerGroupSpec should have at least one container; add the Ray container at index 0"
            )


@_rule(
    "KR-GROUP-REPLICAS",
    "minReplicas and maxReplicas are not negative and minReplicas <= maxReplicas",
    source="validation.go ValidateRayClusterSpec (worker group replicas)",
    since="1.6",
)
def _group_replicas(ctx: _Context) -> Iterator[_Finding]:
    for path, group in ctx.groups:
        name = group.get("groupName")
        low, high = group.get("minReplicas"), group.get("maxReplicas")
        if isinstance(low, int) and low < 0:
            yield _Finding(f"{path}.minReplicas", f"worker group {name!r} has negative minReplicas {low}; use 0 or more")
        if isinstance(high, int) and high < 0:
            yield _Finding(f"{path}.maxReplicas", f"worker group {name!r} has negative maxReplicas {high}; use 0 or more")
        if isinstance(low, int) and isinstance(high, int) and low > high:
            yield _Finding(
                f"{path}.minReplicas",
                f"worker group {name!r} has minReplicas {low} greater than maxReplicas {high}; raise maxReplicas to at least {low} or lower minReplicas",
            )


@_rule(
    "KR-GROUP-IDLE-TIMEOUT",
    "a group's idleTimeoutSeconds is >= 0 and needs autoscaler v2",
    source="validation.go validateWorkerGroupIdleTimeout",
    since="1.6",
)
def _group_idle(ctx: _Context) -> Iterator[_Finding]:
    v2_env = ctx.env(_RAY_AUTOSCALER_V2)
    v2 = ctx.autoscaler_v2 or (v2_env is not None and v2_env[1].get("value") in ("1", "true"))
    for path, group in ctx.groups:
        timeout = group.get("idleTimeoutSeconds")
        if timeout is None:
            continue
        if isinstance(timeout, int) and timeout < 0:
            yield _Finding(
                f"{path}.idleTimeoutSeconds",
                f"worker group {group.get('groupName')!r}: idleTimeoutSeconds must be non-negative, got {timeout}",
            )
        elif not v2:
            yield _Finding(
                f"{path}.idleTimeoutSeconds",
                f"worker group {group.get('groupName')!r}: idleTimeoutSeconds needs autoscaler v2; set spec.autoscalerOptions.version: v2 (with enableInTreeAutoscaling: true) or remove it",
            )


@_rule(
    "KR-GROUP-PRIORITY",
    "a group's priority needs Ray >= 2.56.0 and autoscaler v2",
    source="validation.go validateWorkerGroupPriority",
    since="1.7",
)
def _group_priority(ctx: _Context) -> Iterator[_Finding]:
    v2_env = ctx.env(_RAY_AUTOSCALER_V2)
    v2 = ctx.autoscaler_v2 or (v2_env is not None and v2_env[1].get("value") in ("1", "true"))
    for path, group in ctx.groups:
        priority = group.get("priority")
        if not priority:
            continue
        version = ctx.ray_version()
        who = f"worker group {group.get('groupName')!r}"
        if version is None:
            yield _Finding(
                f"{path}.priority",
                f"{who}: priority needs spec.rayVersion >= 2.56.0 (got {ctx.spec.get('rayVersion')!r}); set rayVersion or remove priority",
            )
        elif version < _PRIORITY_MIN_RAY:
            yield _Finding(
                f"{path}.priority", f"{who}: priority needs Ray >= 2.56.0, got {ctx.spec.get('rayVersion')}; upgrade Ray or remove priority"
            )
        elif not v2:
            yield _Finding(
                f"{path}.priority",
                f"{who}: priority {priority} needs autoscaler v2; set spec.autoscalerOptions.version: v2 or remove priority",
            )


_RAY_AUTOSCALER_V2 = "RAY_enable_autoscaler_v2"
_FT_ANNOTATION = "ray.io/ft-enabled"
_EXTERNAL_NS_ANNOTATION = "ray.io/external-storage-namespace"


@_rule(
    "KR-FT-ANNOTATION",
    "not both the ray.io/ft-enabled annotation and gcsFaultToleranceOptions",
    source="validation.go ValidateRayClusterSpec (RayFTEnabledAnnotationKey)",
)
def _ft_annotation(ctx: _Context) -> Iterator[_Finding]:
    if ctx.annotations.get(_FT_ANNOTATION) and ctx.gcs_ft is not None:
        yield _Finding(
            "$.metadata.annotations['ray.io/ft-enabled']",
            "the ray.io/ft-enabled annotation and spec.gcsFaultToleranceOptions are both set; remove the annotation and configure GCS fault tolerance only in gcsFaultToleranceOptions",
        )


@_rule(
    "KR-REDIS-ADDRESS-WITHOUT-FT",
    "RAY_REDIS_ADDRESS on the head needs GCS fault tolerance switched on",
    source="validation.go ValidateRayClusterSpec (IsGCSFaultToleranceEnabled)",
)
def _redis_without_ft(ctx: _Context) -> Iterator[_Finding]:
    ft = str(ctx.annotations.get(_FT_ANNOTATION, "")).lower() == "true" or ctx.gcs_ft is not None
    found = ctx.env("RAY_REDIS_ADDRESS")
    if not ft and found:
        yield _Finding(
            found[0],
            "RAY_REDIS_ADDRESS switches GCS fault tolerance on behind the operator's back; set spec.gcsFaultToleranceOptions.redisAddress instead of the env var",
        )


@_rule(
    "KR-FT-OPTIONS",
    "with gcsFaultToleranceOptions, Redis settings go there (not redis-password, REDIS_PASSWORD, RAY_REDIS_ADDRESS, ray.io/external-storage-namespace)",
    source="validation.go ValidateRayClusterSpec (GcsFaultToleranceOptions)",
)
def _ft_options(ctx: _Context) -> Iterator[_Finding]:
    if ctx.gcs_ft is None:
        return
    if (ctx.head.get("rayStartParams") or {}).get("redis-password"):
        yield _Finding(
            "$.spec.headGroupSpec.rayStartParams.redis-password",
            "with gcsFaultToleranceOptions, move redis-password to gcsFaultToleranceOptions.redisPassword",
        )
    for env, where in (
        ("REDIS_PASSWORD", "gcsFaultToleranceOptions.redisPassword"),
        ("RAY_REDIS_ADDRESS", "gcsFaultToleranceOptions.redisAddress"),
    ):
        found = ctx.env(env)
        if found:
            yield _Finding(found[0], f"with gcsFaultToleranceOptions, do not set {env} on the head; use {where}")
    if ctx.annotations.get(_EXTERNAL_NS_ANNOTATION):
        yield _Finding(
            "$.metadata.annotations['ray.io/external-storage-namespace']",
            "with gcsFaultToleranceOptions, remove this annotation and set gcsFaultToleranceOptions.externalStorageNamespace",
        )


@_rule(
    "KR-FT-BACKEND",
    "the embedded RocksDB GCS backend takes no Redis settings; the Redis backend takes no storage",
    source="validation.go validateGcsFaultToleranceBackend",
    since="1.7",
)
def _ft_backend(ctx: _Context) -> Iterator[_Finding]:
    ft = ctx.gcs_ft
    if not isinstance(ft, dict):
        return
    path = "$.spec.gcsFaultToleranceOptions"
    if ft.get("backend") == "rocksdb":
        yield from _gate_finding(ctx, "GCSFaultToleranceEmbeddedStorage", f"{path}.backend", "the embedded RocksDB GCS backend")
        for key in ("redisAddress", "redisUsername", "redisPassword", "externalStorageNamespace"):
            if ft.get(key):
                yield _Finding(f"{path}.{key}", f"{key} does not apply to backend 'rocksdb'; remove it")
        storage = ft.get("storage") or {}
        if storage.get("claimName") and (storage.get("size") or storage.get("storageClassName") or storage.get("accessModes")):
            yield _Finding(
                f"{path}.storage", "storage.claimName excludes size, storageClassName and accessModes; keep one way of getting the volume"
            )
        for env in ("RAY_gcs_storage", "RAY_gcs_storage_path"):
            found = ctx.env(env)
            if found:
                yield _Finding(found[0], f"{env} is managed by KubeRay with the embedded GCS backend; remove it")
        for i, mount in enumerate(ctx.head_container.get("volumeMounts") or []):
            if mount.get("mountPath") == "/data/gcs" or mount.get("name") == "gcs-storage":
                yield _Finding(
                    f"{ctx.head_path}.volumeMounts[{i}]", "the 'gcs-storage' volume at /data/gcs is managed by KubeRay; remove this mount"
                )
        for i, volume in enumerate((ctx.head_template.get("spec") or {}).get("volumes") or []):
            if volume.get("name") == "gcs-storage":
                yield _Finding(
                    f"$.spec.headGroupSpec.template.spec.volumes[{i}]", "the 'gcs-storage' volume is managed by KubeRay; remove it"
                )
    elif ft.get("storage") is not None:
        yield _Finding(f"{path}.storage", "storage applies only to backend 'rocksdb'; remove it or set backend: rocksdb")


@_rule(
    "KR-REDIS-USERNAME",
    "no redis-username rayStartParam or REDIS_USERNAME env on the head",
    source="validation.go ValidateRayClusterSpec",
)
def _redis_username(ctx: _Context) -> Iterator[_Finding]:
    if (ctx.head.get("rayStartParams") or {}).get("redis-username"):
        yield _Finding(
            "$.spec.headGroupSpec.rayStartParams.redis-username", "set the Redis user in gcsFaultToleranceOptions.redisUsername instead"
        )
    found = ctx.env("REDIS_USERNAME")
    if found:
        yield _Finding(found[0], "set the Redis user in gcsFaultToleranceOptions.redisUsername instead of REDIS_USERNAME")


@_rule(
    "KR-GROUP-SUSPEND",
    "suspending a worker group needs the RayJobDeletionPolicy gate and autoscaling off",
    source="validation.go ValidateRayClusterSpec (workerGroup.Suspend)",
)
def _group_suspend(ctx: _Context) -> Iterator[_Finding]:
    for path, group in ctx.groups:
        if group.get("suspend") is not True:
            continue
        yield from _gate_finding(ctx, "RayJobDeletionPolicy", f"{path}.suspend", f"suspending worker group {group.get('groupName')!r}")
        if ctx.autoscaling:
            yield _Finding(
                f"{path}.suspend",
                f"worker group {group.get('groupName')!r} cannot be suspended with the autoscaler on; remove suspend or set enableInTreeAutoscaling: false",
            )


@_rule(
    "KR-AUTOSCALER-V2-ENV",
    "RAY_enable_autoscaler_v2=1/true on the head needs enableInTreeAutoscaling: true",
    source="validation.go ValidateRayClusterSpec (RAY_ENABLE_AUTOSCALER_V2)",
)
def _autoscaler_v2_env(ctx: _Context) -> Iterator[_Finding]:
    found = ctx.env(_RAY_AUTOSCALER_V2)
    if not ctx.autoscaling and found and found[1].get("value") in ("1", "true"):
        yield _Finding(
            found[0],
            f"{_RAY_AUTOSCALER_V2}={found[1].get('value')} while enableInTreeAutoscaling is false; set enableInTreeAutoscaling: true "
            "(and autoscalerOptions.version: v2) or remove the env var",
        )


@_rule(
    "KR-AUTOSCALER-VERSION",
    "with autoscaling on: not both autoscalerOptions.version and RAY_enable_autoscaler_v2; autoscaler v2 pods use restartPolicy Never",
    source="validation.go ValidateRayClusterSpec (isAutoscalingEnabled)",
)
def _autoscaler_version(ctx: _Context) -> Iterator[_Finding]:
    if not ctx.autoscaling:
        return
    found = ctx.env(_RAY_AUTOSCALER_V2)
    if ctx.autoscaler.get("version") and found:
        yield _Finding(
            found[0], f"both spec.autoscalerOptions.version and the head env var {_RAY_AUTOSCALER_V2} are set; remove the env var"
        )
    if ctx.autoscaler_v2:
        policy = (ctx.head_template.get("spec") or {}).get("restartPolicy")
        if policy not in (None, "", "Never"):
            yield _Finding(
                "$.spec.headGroupSpec.template.spec.restartPolicy",
                f"restartPolicy {policy!r} with autoscaler v2; use Never or leave it unset",
            )
        for path, group in ctx.groups:
            policy = ((group.get("template") or {}).get("spec") or {}).get("restartPolicy")
            if policy not in (None, "", "Never"):
                yield _Finding(
                    f"{path}.template.spec.restartPolicy", f"restartPolicy {policy!r} with autoscaler v2; use Never or leave it unset"
                )


@_rule(
    "KR-AUTOSCALER-V1-RESTART-POLICY",
    "with autoscaler v1, worker pods use restartPolicy Never (the operator warns and goes on)",
    source="raycluster_controller.go rayClusterReconcile (IsAutoscalingV1Enabled)",
    since="1.7",
    severity="warning",
    event=None,
)
def _autoscaler_v1_policy(ctx: _Context) -> Iterator[_Finding]:
    if not (ctx.autoscaling and ctx.autoscaler.get("version") == "v1"):
        return
    for path, group in ctx.groups:
        policy = ((group.get("template") or {}).get("spec") or {}).get("restartPolicy")
        if policy not in (None, "", "Never"):
            yield _Finding(
                f"{path}.template.spec.restartPolicy", f"restartPolicy {policy!r} with autoscaler v1; use Never or leave it unset"
            )


@_rule(
    "KR-AUTOSCALER-OPTIONS",
    "autoscalerOptions.idleTimeoutSeconds >= 0 (1.6+); no KUBERAY_GEN_AUTOSCALER_START_CMD in autoscalerOptions.env (1.7+)",
    source="validation.go ValidateRayClusterSpec (AutoscalerOptions)",
    since="1.6",
)
def _autoscaler_options(ctx: _Context) -> Iterator[_Finding]:
    timeout = ctx.autoscaler.get("idleTimeoutSeconds")
    if isinstance(timeout, int) and timeout < 0:
        yield _Finding("$.spec.autoscalerOptions.idleTimeoutSeconds", f"idleTimeoutSeconds must be non-negative, got {timeout}")
    if _kuberay_key(ctx.kuberay) >= (1, 7):
        for i, entry in enumerate(_m.env_entries(ctx.autoscaler)):
            if entry.get("name") == "KUBERAY_GEN_AUTOSCALER_START_CMD":
                yield _Finding(
                    f"$.spec.autoscalerOptions.env[{i}]",
                    "KUBERAY_GEN_AUTOSCALER_START_CMD is set by KubeRay; remove it from autoscalerOptions.env",
                )


@_rule(
    "KR-HISTORY-SERVER",
    "historyServerOptions needs its gate, collectorOptions with an image and STORAGE_BACKEND, and no container named ray-history-collector",
    source="validation.go ValidateRayClusterSpec (HistoryServerOptions), validateCollectorOptions",
    since="1.7",
)
def _history_server(ctx: _Context) -> Iterator[_Finding]:
    options = ctx.spec.get("historyServerOptions")
    if options is None:
        return
    path = "$.spec.historyServerOptions"
    yield from _gate_finding(ctx, "RayClusterHistoryServer", path, "historyServerOptions")
    collector = (options or {}).get("collectorOptions")
    if collector is None:
        yield _Finding(path, "historyServerOptions.collectorOptions must be set")
        return
    if not collector.get("image"):
        yield _Finding(f"{path}.collectorOptions.image", "historyServerOptions.collectorOptions.image must be set")
    env = {e.get("name"): e for e in _m.env_entries(collector)}
    if not (env.get("STORAGE_BACKEND") or {}).get("value"):
        yield _Finding(f"{path}.collectorOptions.env", "STORAGE_BACKEND must be set (a literal value) in collectorOptions.env")
    for pod_label, pod_path, template in _m.pod_templates(ctx.obj):
        for i, container in enumerate((template.get("spec") or {}).get("containers") or []):
            if isinstance(container, dict) and container.get("name") == "ray-history-collector":
                yield _Finding(
                    f"{pod_path}.spec.containers[{i}].name",
                    f"{pod_label}: 'ray-history-collector' is the collector's name; rename this container",
                )


@_rule(
    "KR-AUTH-RAY-VERSION",
    "authOptions.mode token needs spec.rayVersion >= 2.52.0",
    source="validation.go ValidateRayClusterSpec (IsAuthEnabled)",
)
def _auth_version(ctx: _Context) -> Iterator[_Finding]:
    if ctx.auth.get("mode") != "token":
        return
    raw = ctx.spec.get("rayVersion")
    version = ctx.ray_version()
    if not raw:
        yield _Finding(
            "$.spec.rayVersion",
            "authOptions.mode is 'token' but rayVersion is not set; set rayVersion to the image's Ray version (2.52.0 or later)",
        )
    elif version is None:
        yield _Finding("$.spec.rayVersion", f"authOptions.mode is 'token' but rayVersion {raw!r} is not a version; set e.g. '2.56.0'")
    elif version < _AUTH_MIN_RAY:
        yield _Finding(
            "$.spec.authOptions.mode",
            f"token auth needs Ray 2.52.0 or later, rayVersion is {raw}; use a Ray >= 2.52.0 image (and rayVersion) or set authOptions.mode: disabled",
        )


@_rule(
    "KR-AUTH-K8S",
    "authOptions.enableK8sTokenAuth needs mode token, Ray >= 2.55.0 and no secretName",
    source="validation.go ValidateRayClusterSpec (IsK8sAuthEnabled)",
    since="1.6",
)
def _auth_k8s(ctx: _Context) -> Iterator[_Finding]:
    if ctx.auth.get("enableK8sTokenAuth") is not True:
        return
    path = "$.spec.authOptions.enableK8sTokenAuth"
    if ctx.auth.get("mode") != "token":
        yield _Finding(path, "enableK8sTokenAuth needs authOptions.mode: token")
        return
    version = ctx.ray_version()
    if version is not None and version < _K8S_AUTH_MIN_RAY:
        yield _Finding(path, f"enableK8sTokenAuth needs Ray 2.55.0 or later, rayVersion is {ctx.spec.get('rayVersion')}")
    if ctx.auth.get("secretName"):
        yield _Finding("$.spec.authOptions.secretName", "enableK8sTokenAuth and secretName exclude each other; remove one")


@_rule(
    "KR-NETWORK-POLICY",
    "networkPolicy needs its gate, rules that match its mode, DNS-1123 group names and known groups",
    source="validation.go validateNetworkPolicy",
    since="1.7",
)
def _network_policy(ctx: _Context) -> Iterator[_Finding]:
    policy = ctx.spec.get("networkPolicy")
    if policy is None:
        return
    path = "$.spec.networkPolicy"
    yield from _gate_finding(ctx, "RayClusterNetworkPolicy", path, "spec.networkPolicy")
    mode = policy.get("mode") or "DenyAll"
    parts = [("head", policy.get("head")), ("worker", policy.get("worker"))]
    parts += [(f"workerGroups[{i}]", wg) for i, wg in enumerate(policy.get("workerGroups") or [])]
    for where, part in parts:
        part = part or {}
        if mode == "DenyAllEgress" and part.get("ingressRules"):
            yield _Finding(
                f"{path}.{where}.ingressRules",
                f"ingressRules do nothing in mode {mode!r} (ingress is not restricted); remove them or change mode",
            )
        if mode == "DenyAllIngress" and part.get("egressRules"):
            yield _Finding(
                f"{path}.{where}.egressRules",
                f"egressRules do nothing in mode {mode!r} (egress is not restricted); remove them or change mode",
            )
    names = set()
    for group_path, group in ctx.groups:
        name = str(group.get("groupName") or "")
        names.add(name)
        problems = dns1123_label_problems(name)
        if problems:
            yield _Finding(
                f"{group_path}.groupName", f"with networkPolicy, group name {name!r} must be a DNS-1123 label: {'; '.join(problems)}"
            )
    for i, wg in enumerate(policy.get("workerGroups") or []):
        if (wg or {}).get("groupName") not in names:
            yield _Finding(f"{path}.workerGroups[{i}].groupName", f"{(wg or {}).get('groupName')!r} matches no worker group; fix the name")


_TLS_ENV = ("RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY", "RAY_TLS_CA_CERT")


@_rule(
    "KR-TLS",
    "tlsOptions needs its gate and cert-manager; TLS env vars and the ray-tls mount are the operator's",
    source="validation.go ValidateRayClusterSpec (TLSOptions), validateTLSOptions; raycluster_controller.go (cert-manager)",
    since="1.7",
)
def _tls(ctx: _Context) -> Iterator[_Finding]:
    options = ctx.spec.get("tlsOptions")
    if options is None:
        return
    yield from _gate_finding(ctx, "RayClusterMTLS", "$.spec.tlsOptions", "spec.tlsOptions (mTLS, which also needs cert-manager installed)")
    if (options or {}).get("enabled") is not True:
        return
    containers = [("head Pod", ctx.head_path, ctx.head_container)]
    containers += [
        (f"worker group {g.get('groupName')!r}", f"{p}.template.spec.containers[0]", _m.ray_container(g.get("template") or {}) or {})
        for p, g in ctx.groups
    ]
    for who, path, container in containers:
        for env in _TLS_ENV:
            found = ctx.env(env, container, path)
            if found:
                yield _Finding(found[0], f"{who}: {env} is managed by the operator when tlsOptions is set; remove it")
        for i, mount in enumerate(container.get("volumeMounts") or []):
            if mount.get("name") == "ray-tls" or mount.get("mountPath") == "/etc/ray/tls":
                yield _Finding(
                    f"{path}.volumeMounts[{i}]",
                    f"{who}: the ray-tls mount at /etc/ray/tls is the operator's when tlsOptions is set; remove it",
                )


@_rule(
    "KR-UPGRADE-STRATEGY",
    "upgradeStrategy.type is Recreate or None, and only on RayClusters created directly",
    source="validation.go ValidateRayClusterUpgradeOptions",
    since="1.6",
)
def _upgrade_strategy(ctx: _Context) -> Iterator[_Finding]:
    kind = (ctx.spec.get("upgradeStrategy") or {}).get("type")
    if kind is None:
        return
    if kind not in ("Recreate", "None"):
        yield _Finding("$.spec.upgradeStrategy.type", f"{kind!r} is not an upgrade strategy; use Recreate or None")
    creator = ctx.labels.get("ray.io/originated-from-crd")
    if creator in ("RayJob", "RayService"):
        yield _Finding(
            "$.spec.upgradeStrategy", f"upgradeStrategy cannot be set on a RayCluster created by a {creator}; set it on the {creator}"
        )


# ----- Kubernetes validation of the objects KubeRay creates ----------------------------------------------
@_rule(
    "K8S-NAMESPACE",
    "metadata.namespace is a DNS-1123 label",
    source="apimachinery ValidateNamespaceName (IsDNS1123Label)",
    event=None,
)
def _namespace(ctx: _Context) -> Iterator[_Finding]:
    if ctx.namespace is None:
        return
    problems = dns1123_label_problems(str(ctx.namespace))
    if problems:
        yield _Finding(
            "$.metadata.namespace",
            f"namespace {ctx.namespace!r} is not a DNS-1123 label: {'; '.join(problems)}; use lowercase letters, digits and '-'",
        )


def _labels_findings(labels: Any, path: str) -> Iterator[_Finding]:
    for key, value in (labels or {}).items() if isinstance(labels, dict) else ():
        for problem in label_key_problems(str(key)):
            yield _Finding(f"{path}", f"label key {key!r}: {problem}")
        for problem in label_value_problems(str(value)):
            yield _Finding(f"{path}[{key!r}]", f"label value {value!r}: {problem}; label values are at most 63 of A-Z a-z 0-9 - _ .")


@_rule(
    "K8S-LABELS",
    "labels of the RayCluster and its pod templates have valid keys and values",
    source="apimachinery ValidateLabels (IsQualifiedName, IsValidLabelValue)",
    event=None,
)
def _labels(ctx: _Context) -> Iterator[_Finding]:
    yield from _labels_findings(ctx.labels, "$.metadata.labels")
    for _, path, template in _m.pod_templates(ctx.obj):
        yield from _labels_findings((template.get("metadata") or {}).get("labels"), f"{path}.metadata.labels")


@_rule(
    "K8S-GROUP-NAME",
    "groupName is a valid label value (KubeRay labels each worker pod ray.io/group=<groupName>)",
    source="common/pod.go labelPod (RayNodeGroupLabelKey); apimachinery IsValidLabelValue",
    event=None,
)
def _group_name(ctx: _Context) -> Iterator[_Finding]:
    for path, group in ctx.groups:
        name = group.get("groupName")
        if not isinstance(name, str):
            continue
        problems = label_value_problems(name) if name else ["must not be empty"]
        if problems:
            suggestion = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63] or "workers"
            yield _Finding(
                f"{path}.groupName",
                f"worker group name {name!r} cannot be the pod label ray.io/group, so KubeRay cannot create its pods: {'; '.join(problems)}; use e.g. {suggestion!r}",
            )


# ----- this project's rules ------------------------------------------------------------------------------
_TAG_VERSION = re.compile(r"^(\d+\.\d+\.\d+)(?:$|[-_.])")


def ray_version_of_image(image: str) -> str | None:
    """The Ray version in a Ray image's tag, or None when it cannot be told.

    Only repositories whose name contains ``ray`` are read (``rayproject/ray``, ``rayproject/ray-ml``,
    an ECR mirror ``.../ray``), so a custom image tagged ``1.0.0`` is not mistaken for Ray 1.0.0.
    ``rayproject/ray:2.56.0-py312-gpu`` -> ``"2.56.0"``; ``my-ecr/ray:latest`` -> None;
    ``.../maze-trainer:1.0.0`` -> None; a digest-pinned image (``...@sha256:...``) -> None.
    """
    if "@" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last or "ray" not in last.split(":", 1)[0].lower():
        return None
    match = _TAG_VERSION.match(last.split(":", 1)[1])
    return match.group(1) if match else None


@_rule(
    "HP-RAY-VERSION-IMAGE",
    "spec.rayVersion equals the Ray version in every Ray image tag that has one",
    source="hyperpod-rl: Ray refuses to connect mismatched versions; KubeRay's features are gated on rayVersion",
    event=None,
)
def _ray_version_image(ctx: _Context) -> Iterator[_Finding]:
    want = ctx.spec.get("rayVersion")
    if not want:
        return
    for label, path, template in _m.pod_templates(ctx.obj):
        image = (_m.ray_container(template) or {}).get("image")
        have = ray_version_of_image(image) if isinstance(image, str) else None
        if have and have != want:
            yield _Finding(
                f"{path}.spec.containers[0].image",
                f"{label}: image {image!r} is Ray {have} but spec.rayVersion is {want}; use one version for both (ClusterSpec: ray_version={have!r} or an image tagged {want})",
            )


@_rule(
    "HP-REPLICAS-RANGE",
    "minReplicas <= replicas <= maxReplicas (KubeRay silently clamps replicas into the range)",
    source="hyperpod-rl; KubeRay clamps replicas (utils/util.go GetWorkerGroupDesiredReplicas)",
    event=None,
)
def _replicas_range(ctx: _Context) -> Iterator[_Finding]:
    for path, group in ctx.groups:
        counts = (group.get("replicas"), group.get("minReplicas"), group.get("maxReplicas"))
        if not all(isinstance(v, int) for v in counts):
            continue
        replicas, low, high = (int(v) for v in counts)  # type: ignore[arg-type]
        if low > high and _kuberay_key(ctx.kuberay) < (1, 6):  # from 1.6 on, KR-GROUP-REPLICAS reports it
            yield _Finding(
                f"{path}.minReplicas",
                f"worker group {group.get('groupName')!r}: minReplicas {low} is greater than maxReplicas {high} (KubeRay {ctx.kuberay} accepts it, "
                "1.6 and later refuse it); raise maxReplicas or lower minReplicas",
            )
        elif low <= high and not low <= replicas <= high:
            yield _Finding(
                f"{path}.replicas",
                f"worker group {group.get('groupName')!r}: replicas {replicas} is outside [minReplicas {low}, maxReplicas {high}] and KubeRay would "
                f"silently use {min(max(replicas, low), high)}; set replicas within the range or widen it",
            )


@_rule(
    "HP-AUTH-SECRET",
    "authOptions.secretName is used only with mode token",
    source="hyperpod-rl; KubeRay reads secretName only for token auth (raycluster_controller.go reconcileAuthSecret)",
    event=None,
)
def _auth_secret(ctx: _Context) -> Iterator[_Finding]:
    if ctx.auth.get("secretName") and ctx.auth.get("mode") != "token":
        yield _Finding(
            "$.spec.authOptions.secretName",
            "secretName is ignored unless authOptions.mode is 'token'; set mode: token or remove secretName",
        )


# ----- running the rule set ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuleReport:
    """The result of `check_manifest`: which KubeRay version's rules, and every finding."""

    kuberay: str
    """Supported KubeRay version whose CRD and rules were applied (``"1.7"``)."""
    tag: str
    """Its vendored release tag (``"v1.7.0"``)."""
    errors: tuple[Violation, ...] = ()
    warnings: tuple[Violation, ...] = ()
    converted_from: str | None = None
    """The apiVersion the object was written in when it was not ``ray.io/v1``."""

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors

    def message(self, what: str = "RayCluster") -> str:
        """Errors then warnings, one per line, headed by the KubeRay version."""
        lines = [str(v) for v in self.errors] + [f"warning: {v}" for v in self.warnings]
        return f"{what} breaks {len(self.errors)} rule(s) of KubeRay {self.kuberay} ({self.tag}):\n  " + "\n  ".join(lines)


def _schema_findings(obj: dict[str, Any], api_version: str, kuberay: str, strict: bool) -> list[Violation]:
    defaulted = _crd.apply_defaults(obj, api_version=api_version, kuberay=kuberay)
    return [
        Violation(
            "CRD-UNKNOWN-FIELD" if e.unknown_field else "CRD-SCHEMA",
            e.path,
            f"{e.message}" + ("; remove it or fix its spelling" if e.unknown_field else ""),
        )
        for e in _crd.schema_errors(defaulted, api_version=api_version, kuberay=kuberay, strict=strict)
    ]


def check_manifest(
    obj: Any,
    *,
    kuberay: str = _crd.DEFAULT_KUBERAY,
    strict: bool = True,
    feature_gates: Mapping[str, bool] | None = None,
) -> RuleReport:
    """Run the rule set of one KubeRay version on a RayCluster dict; never raises for findings.

    Steps, as a cluster would apply them: apiVersion served by the CRD (``ray.io/v1alpha1`` is
    converted, with the CRD's deprecation warning); the CRD's defaults; the CRD schema (``strict``:
    unknown fields too); then every `Rule` of `rules_for(kuberay)` on the defaulted object.

    Args:
        obj: the RayCluster (a dict from YAML/JSON).
        kuberay: a supported KubeRay version (``cluster.crd.KUBERAY_VERSIONS``).
        strict: report fields the CRD does not define (the API server's ``fieldValidation=Strict``).
        feature_gates: operator feature gates known to be on/off; the others take their
            defaults when on by default and are "unknown" (warnings) when off by default.

    Raises:
        ConfigError: ``kuberay`` is not a supported version.
    """
    tag = _crd.kuberay_tag(kuberay)
    if not isinstance(obj, dict):
        return RuleReport(kuberay, tag, (Violation("CRD-SCHEMA", "$", f"a RayCluster must be a mapping, got {type(obj).__name__}"),))
    errors: list[Violation] = []
    warnings: list[Violation] = []
    if obj.get("kind") != _m.KIND:
        errors.append(Violation("CRD-KIND", "$.kind", f"must be {_m.KIND!r}, got {obj.get('kind')!r}"))
    api_version = obj.get("apiVersion")
    served = _crd.served_versions(kuberay)
    converted = None
    if api_version not in served:
        errors.append(Violation("CRD-VERSION", "$.apiVersion", f"KubeRay {kuberay} serves {served}, got {api_version!r}; use 'ray.io/v1'"))
    elif api_version != _m.API_VERSION:
        converted = api_version
        note = _crd.deprecation_warning(api_version, kuberay)
        warnings.append(
            Violation(
                "CRD-DEPRECATED-VERSION",
                "$.apiVersion",
                f"{note.rstrip('.') + '; ' if note else ''}read as ray.io/v1 (the CRD converts with strategy None and every {api_version} field exists in v1); change apiVersion to ray.io/v1",
                "warning",
            )
        )
    if errors:  # not a RayCluster of a served version: its schema and rules say nothing useful
        return RuleReport(kuberay, tag, tuple(errors), tuple(warnings), converted)
    errors.extend(_schema_findings(obj, str(api_version), kuberay, strict))
    defaulted = _crd.apply_defaults(obj, api_version=str(api_version), kuberay=kuberay)
    defaulted["apiVersion"] = _m.API_VERSION
    gates: dict[str, bool | None] = {k: (True if v else None) for k, v in FEATURE_GATE_DEFAULTS[kuberay].items()}
    gates.update(feature_gates or {})
    ctx = _Context(defaulted, kuberay, gates)
    for rule in rules_for(kuberay):
        try:
            findings = list(rule.check(ctx))
        except (AttributeError, TypeError, KeyError, IndexError):
            if errors:  # malformed shapes: the schema findings already say what is wrong
                continue
            raise
        for f in findings:
            severity = f.severity or rule.severity
            (errors if severity == "error" else warnings).append(Violation(rule.id, f.path, f.message, severity))
    return RuleReport(kuberay, tag, tuple(errors), tuple(warnings), converted)


def validate_manifest(
    obj: Any,
    *,
    kuberay: str = _crd.DEFAULT_KUBERAY,
    strict: bool = True,
    feature_gates: Mapping[str, bool] | None = None,
) -> RuleReport:
    """`check_manifest`, raising when there is any error.

    Returns:
        The `RuleReport` (it may hold warnings: deprecated apiVersion, feature gates).

    Raises:
        ConfigError: every error, one line each: ``[RULE-ID] $.json.path: problem; fix``, headed by
            the KubeRay version whose rules were applied.
    """
    report = check_manifest(obj, kuberay=kuberay, strict=strict, feature_gates=feature_gates)
    if report.errors:
        name = obj.get("metadata", {}).get("name") if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) else None
        raise ConfigError(report.message(f"RayCluster {name!r}" if name else "RayCluster"))
    return report
