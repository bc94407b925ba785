"""ClusterSpec data <-> ``ray.io/v1`` RayCluster objects. Pure: dicts in, dicts out.

The one module that knows how a `ClusterSpec` maps onto KubeRay's RayCluster fields. It imports
no other ``hyperpod_rl.cluster`` module, no Kubernetes client and does no I/O: spec data arrives
as plain dicts (``ClusterSpec.model_dump()``), objects leave as plain dicts.

Three operations:

* `build_manifest` -- a new RayCluster from spec data, with the HyperPod conventions below.
* `read_fields` -- spec data read from a RayCluster (CRD defaults already applied by the caller,
  see ``cluster.crd.apply_defaults``), per group: image, resources, instance type, replicas.
* `patch_manifest` -- export of an imported RayCluster: the imported object with only the
  fields whose spec value changed rewritten, in place, keeping everything else (key order,
  quantities as written, per-group env, sidecars, annotations...). Unchanged spec => identical object.

HyperPod conventions of `build_manifest` (see docs/hyperpod-setup.md and docs/cluster.md):

* node affinity on every pod: *requires* ``sagemaker.amazonaws.com/node-health-status`` In
  ``[Schedulable]`` and *prefers* ``sagemaker.amazonaws.com/deep-health-check-status`` In
  ``[Passed]`` (weight 100), as AWS's ``hyp`` CLI does; ``nodeSelector`` carries only the
  instance type, so the two never contradict;
* head ``rayStartParams`` ``num-cpus: "0"`` and ``num-gpus: "0"`` so no work lands on it;
* ``/dev/shm`` as a memory-backed emptyDir; the FSx PVC on every pod;
* metrics export port 8080 on every node (``metrics-export-port`` + a ``metrics`` port);
* GPU workers request ``nvidia.com/gpu`` and, where the instance has it, ``vpc.amazonaws.com/efa``;
* labels AWS's Ray tools read (``sagemaker.user/created-by``, ``sagemaker.amazonaws.com/cluster-name``)
  and, in task-governance namespaces ``hyperpod-ns-<team>``, Kueue's ``kueue.x-k8s.io/queue-name``
  (``<namespace>-localqueue``) and ``kueue.x-k8s.io/priority-class``.

Sources: KubeRay v1.7.0 ``ray-operator/apis/ray/v1/raycluster_types.go`` (fields),
``ray-operator/controllers/ray/utils/constant.go`` (head ports 6379/8265/10001/8080/8000, Ray
container at index 0); Kubernetes ``apimachinery/pkg/api/resource/quantity.go`` (quantities).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from hyperpod_rl.errors import ConfigError

__all__ = [
    "API_VERSION",
    "CLUSTER_NAME_LABEL",
    "CREATED_BY_LABEL",
    "DEEP_HEALTH_LABEL",
    "EFA_RESOURCE",
    "GPU_RESOURCE",
    "HEALTH_LABEL",
    "INSTANCE_TYPE_LABEL",
    "KIND",
    "KUEUE_PRIORITY_LABEL",
    "KUEUE_QUEUE_LABEL",
    "MANAGED_BY_LABEL",
    "METRICS_PORT",
    "build_manifest",
    "build_worker_group",
    "env_entries",
    "identity",
    "kueue_queue",
    "normalise",
    "parse_quantity",
    "patch_manifest",
    "pod_templates",
    "ray_container",
    "read_fields",
    "worker_groups",
]

API_VERSION = "ray.io/v1"
KIND = "RayCluster"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "hyperpod-rl"
CREATED_BY_LABEL = "sagemaker.user/created-by"
CLUSTER_NAME_LABEL = "sagemaker.amazonaws.com/cluster-name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TASK_GOVERNANCE_PREFIX = "hyperpod-ns-"
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
METRICS_PORT = 8080
SHM_VOLUME = "dshm"
SHM_PATH = "/dev/shm"
HEAD_PORTS = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("metrics", METRICS_PORT), ("serve", 8000))
HEAD_START = {"dashboard-host": "0.0.0.0", "num-cpus": "0", "num-gpus": "0", "metrics-export-port": str(METRICS_PORT)}
WORKER_START = {"metrics-export-port": str(METRICS_PORT)}
_CONVENTION_LABELS = (MANAGED_BY_LABEL, CREATED_BY_LABEL, CLUSTER_NAME_LABEL, KUEUE_QUEUE_LABEL, KUEUE_PRIORITY_LABEL)
_KUEUE_LABELS = (KUEUE_QUEUE_LABEL, KUEUE_PRIORITY_LABEL)
_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_OLDER_VERSIONS = ("ray.io/v1alpha1",)  # same fields as v1 (conversion strategy None in the CRD)

Data = Mapping[str, Any]


# ----- quantities -------------------------------------------------------------------------------
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_SUFFIX = {
    "Ki": Decimal(1024),
    "Mi": Decimal(1024) ** 2,
    "Gi": Decimal(1024) ** 3,
    "Ti": Decimal(1024) ** 4,
    "Pi": Decimal(1024) ** 5,
    "Ei": Decimal(1024) ** 6,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(1000),
    "M": Decimal(1000) ** 2,
    "G": Decimal(1000) ** 3,
    "T": Decimal(1000) ** 4,
    "P": Decimal(1000) ** 5,
    "E": Decimal(1000) ** 6,
}


def parse_quantity(value: str | int | float) -> Decimal:
    """A Kubernetes resource quantity (``"500m"``, ``"40G"``, ``"5Gi"``, ``2``) as a Decimal.

    The grammar of ``apimachinery/pkg/api/resource/quantity.go`` (the CRD's quantity pattern);
    tests check it against ``kubernetes.utils.parse_quantity``, which cannot be imported here
    without the whole ``kubernetes`` package.

    Raises:
        ConfigError: not a quantity.
    """
    if isinstance(value, bool):
        raise ConfigError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ConfigError(f"{value!r} is not a Kubernetes quantity (e.g. '500m', '4', '16Gi', '40G')")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise ConfigError(f"{value!r} is not a Kubernetes quantity") from None
    return number * _SUFFIX[match.group(2)] if match.group(2) else number


def _number(value: Decimal) -> float | int:
    f = float(value)
    return int(f) if f.is_integer() else f


def _cpu(cores: float) -> str:
    return str(int(cores)) if float(cores).is_integer() else f"{round(cores * 1000)}m"


def _memory(gib: float) -> str:
    return f"{int(gib)}Gi" if float(gib).is_integer() else f"{round(gib * 1024)}Mi"


def _gib(value: Any) -> float | int:
    return _number(parse_quantity(value) / Decimal(1024) ** 3)


# ----- object navigation (also used by cluster.rules) -------------------------------------------
def identity(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(name, namespace)`` of a RayCluster (namespace ``"default"`` when absent)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("name", "")), str(meta.get("namespace") or "default")


def worker_groups(obj: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(json path, group)`` for each ``spec.workerGroupSpecs[]`` entry that is a mapping."""
    groups = (obj.get("spec") or {}).get("workerGroupSpecs") or []
    return [(f"$.spec.workerGroupSpecs[{i}]", g) for i, g in enumerate(groups) if isinstance(g, dict)] if isinstance(groups, list) else []


def pod_templates(obj: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(group label, json path, template)`` for the head (label ``"head"``) and each worker group."""
    spec = obj.get("spec") or {}
    out: list[tuple[str, str, dict[str, Any]]] = []
    head = spec.get("headGroupSpec")
    if isinstance(head, dict) and isinstance(head.get("template"), dict):
        out.append(("head", "$.spec.headGroupSpec.template", head["template"]))
    for path, group in worker_groups(obj):
        if isinstance(group.get("template"), dict):
            out.append((f"worker group {group.get('groupName')!r}", f"{path}.template", group["template"]))
    return out


def ray_container(template: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Ray container of a pod template: ``containers[0]`` (KubeRay's ``RayContainerIndex``)."""
    containers = (template.get("spec") or {}).get("containers")
    if isinstance(containers, list) and containers and isinstance(containers[0], dict):
        return containers[0]
    return None


def env_entries(container: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The container's ``env`` entries that are mappings (name, value or valueFrom)."""
    env = (container or {}).get("env")
    return [e for e in env if isinstance(e, dict)] if isinstance(env, list) else []


def kueue_queue(namespace: str) -> str | None:
    """Kueue LocalQueue of a HyperPod task-governance namespace (``hyperpod-ns-a`` -> ``hyperpod-ns-a-localqueue``)."""
    return f"{namespace}-localqueue" if namespace.startswith(TASK_GOVERNANCE_PREFIX) else None


# ----- per-pod view: what the spec says about one pod --------------------------------------------
def _pod_view(data: Data, group: Data | None) -> dict[str, Any]:
    """The modelled values of one pod (head when ``group`` is None) as the spec data states them."""
    if group is None:
        head = data["head"]
        cpus, memory, gpus, efa, instance_type, image = head["cpus"], head["memory_gib"], 0, 0, head["instance_type"], data["image"]
    else:
        cpus, memory = group["cpus_per_worker"], group["memory_gib"]
        gpus, efa, instance_type = group["gpus_per_worker"], group["efa_per_worker"], group["instance_type"]
        image = group.get("image") or data["image"]
    return {
        "image": image,
        "env": dict(data["env"]),
        "cpu": cpus,
        "memory": memory,
        GPU_RESOURCE: gpus,
        EFA_RESOURCE: efa,
        "instance_type": instance_type,
        "storage": dict(data["storage"]) if data.get("storage") else None,
        "shm_size_gib": data["shm_size_gib"],
        "labels": dict(data["labels"]),
    }


def _cluster_labels(data: Data, *, fresh: bool) -> dict[str, str]:
    labels = {MANAGED_BY_LABEL: MANAGED_BY} if fresh else {}
    labels.update(data["labels"])
    if data.get("created_by"):
        labels[CREATED_BY_LABEL] = data["created_by"]
    if data.get("hyperpod_cluster"):
        labels[CLUSTER_NAME_LABEL] = data["hyperpod_cluster"]
    queue = kueue_queue(data["namespace"])
    if queue:  # Kueue labels only where HyperPod task governance runs Kueue: hyperpod-ns-<team>
        labels[KUEUE_QUEUE_LABEL] = queue
        if data.get("priority_class"):
            labels[KUEUE_PRIORITY_LABEL] = data["priority_class"]
    return labels


# ----- build ------------------------------------------------------------------------------------
def _resources(view: Data) -> dict[str, Any]:
    amounts: dict[str, Any] = {"cpu": _cpu(view["cpu"]), "memory": _memory(view["memory"])}
    for name in (GPU_RESOURCE, EFA_RESOURCE):
        if view[name]:
            amounts[name] = view[name]
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _volumes(view: Data) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    shm: dict[str, Any] = {"medium": "Memory"}
    if view["shm_size_gib"] is not None:
        shm["sizeLimit"] = _memory(view["shm_size_gib"])
    volumes: list[dict[str, Any]] = [{"name": SHM_VOLUME, "emptyDir": shm}]
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": SHM_PATH}]
    storage = view["storage"]
    if storage:
        volumes.append({"name": storage["volume_name"], "persistentVolumeClaim": {"claimName": storage["claim_name"]}})
        mounts.append({"name": storage["volume_name"], "mountPath": storage["mount_path"]})
    return volumes, mounts


def _affinity() -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": HEALTH_LABEL, "operator": "In", "values": ["Schedulable"]}]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [{"key": DEEP_HEALTH_LABEL, "operator": "In", "values": ["Passed"]}]}}
            ],
        }
    }


def _build_pod(view: Data, *, container_name: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    volumes, mounts = _volumes(view)
    container: dict[str, Any] = {"name": container_name}
    if view["image"]:
        container["image"] = view["image"]
    container.update({"ports": ports, "resources": _resources(view), "volumeMounts": mounts})
    if view["env"]:
        container["env"] = [{"name": k, "value": v} for k, v in view["env"].items()]
    pod: dict[str, Any] = {}
    if view["instance_type"]:
        pod["nodeSelector"] = {INSTANCE_TYPE_LABEL: view["instance_type"]}
    pod.update({"affinity": _affinity(), "containers": [container], "volumes": volumes})
    template: dict[str, Any] = {"spec": pod}
    if view["labels"]:
        template = {"metadata": {"labels": dict(view["labels"])}, **template}
    return template


def build_worker_group(data: Data, group: Data) -> dict[str, Any]:
    """One new ``spec.workerGroupSpecs[]`` entry for ``group`` (spec data of a `WorkerGroupSpec`)."""
    replicas = group["replicas"]
    return {
        "groupName": group["name"],
        "replicas": replicas,
        "minReplicas": replicas if group["min_replicas"] is None else group["min_replicas"],
        "maxReplicas": replicas if group["max_replicas"] is None else group["max_replicas"],
        "rayStartParams": {**group["ray_start_params"], **WORKER_START},
        "template": _build_pod(
            _pod_view(data, group), container_name="ray-worker", ports=[{"name": "metrics", "containerPort": METRICS_PORT}]
        ),
    }


def build_manifest(data: Data) -> dict[str, Any]:
    """A new RayCluster from spec data (``ClusterSpec.model_dump()``), with the HyperPod conventions.

    Returns:
        A fresh dict (``apiVersion``, ``kind``, ``metadata``, ``spec``); ``workerGroupSpecs`` is
        left out for a head-only cluster.
    """
    spec: dict[str, Any] = {}
    if data["ray_version"]:
        spec["rayVersion"] = data["ray_version"]
    auth: dict[str, Any] = {"mode": data["auth_mode"]}
    if data["auth_secret_name"]:
        auth["secretName"] = data["auth_secret_name"]
    spec["authOptions"] = auth
    ports = [{"name": n, "containerPort": p} for n, p in HEAD_PORTS]
    spec["headGroupSpec"] = {
        "rayStartParams": dict(HEAD_START),
        "template": _build_pod(_pod_view(data, None), container_name="ray-head", ports=ports),
    }
    if data["worker_groups"]:
        spec["workerGroupSpecs"] = [build_worker_group(data, g) for g in data["worker_groups"]]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": data["name"], "namespace": data["namespace"], "labels": _cluster_labels(data, fresh=True)},
        "spec": spec,
    }


# ----- import -----------------------------------------------------------------------------------
def normalise(obj: Any) -> tuple[dict[str, Any], str | None]:
    """The RayCluster as a user would write it: ``(object, apiVersion it was converted from)``.

    Drops ``status``, server-set metadata (``uid``, ``resourceVersion``, ``managedFields``...) and
    kubectl's last-applied annotation. A ``ray.io/v1alpha1`` object becomes ``ray.io/v1``: the CRD
    converts with strategy ``None`` and every v1alpha1 field exists in v1 (tests check both
    vendored CRDs), so only ``apiVersion`` changes.

    Raises:
        ConfigError: not a mapping, not a RayCluster, or an apiVersion the CRD does not serve.
    """
    if not isinstance(obj, dict):
        raise ConfigError(f"a RayCluster manifest must be a mapping, got {type(obj).__name__}")
    if obj.get("kind") != KIND:
        raise ConfigError(f"[CRD-KIND] $.kind: must be {KIND!r}, got {obj.get('kind')!r}")
    api_version = obj.get("apiVersion")
    if api_version != API_VERSION and api_version not in _OLDER_VERSIONS:
        raise ConfigError(f"[CRD-VERSION] $.apiVersion: must be {API_VERSION!r} (or the deprecated 'ray.io/v1alpha1'), got {api_version!r}")
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in _SERVER_FIELDS:
            meta.pop(key, None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and _LAST_APPLIED in annotations:
            annotations.pop(_LAST_APPLIED)
            if not annotations:
                meta.pop("annotations")
    converted = None
    if api_version != API_VERSION:
        out["apiVersion"] = API_VERSION
        converted = api_version
    return out, converted


def _amount(container: Mapping[str, Any], name: str) -> Any:
    res = container.get("resources") or {}
    for part in ("limits", "requests"):
        value = (res.get(part) or {}).get(name)
        if value is not None:
            return value
    return None


def _read_storage(template: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any] | None:
    mounts = {m.get("name"): m for m in container.get("volumeMounts") or [] if isinstance(m, dict)}
    for volume in (template.get("spec") or {}).get("volumes") or []:
        claim = ((volume or {}).get("persistentVolumeClaim") or {}).get("claimName")
        if claim and volume.get("name") in mounts:
            return {"claim_name": claim, "mount_path": mounts[volume["name"]].get("mountPath"), "volume_name": volume["name"]}
    return None


def _shm_volume(template: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any] | None:
    mounted = {m.get("name") for m in container.get("volumeMounts") or [] if isinstance(m, dict) and m.get("mountPath") == SHM_PATH}
    for volume in (template.get("spec") or {}).get("volumes") or []:
        empty = (volume or {}).get("emptyDir")
        if isinstance(empty, dict) and empty.get("medium") == "Memory" and volume.get("name") in mounted:
            return volume
    return None


def _literal_env(container: Mapping[str, Any]) -> dict[str, str]:
    return {
        e["name"]: e["value"] for e in env_entries(container) if "name" in e and isinstance(e.get("value"), str) and "valueFrom" not in e
    }


def _required_container(template: Mapping[str, Any], path: str, rule: str) -> dict[str, Any]:
    container = ray_container(template)
    if container is None:
        raise ConfigError(f"[{rule}] {path}.spec.containers: no containers; KubeRay needs the Ray container at index 0")
    return container


def read_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Spec data (``ClusterSpec`` field values) read from a ``ray.io/v1`` RayCluster.

    Pass the object *after* CRD defaults (``cluster.crd.apply_defaults``), so that an absent
    ``maxReplicas`` reads as KubeRay's 2147483647, not as ``replicas``.

    * a group with ``minReplicas == replicas == maxReplicas`` reads as fixed-size
      (``min_replicas``/``max_replicas`` None, so they follow ``replicas``); other counts are kept;
    * image, CPU, memory, GPUs, EFA and instance type are read per group (a worker group whose
      image differs from the head's gets its own ``image``); resources from ``limits``, else
      ``requests``; a pod without them gets the spec defaults (left out of the object on export
      unless changed);
    * ``env`` holds the literal variables every Ray container shares; the others stay per group;
    * ``storage`` is the PVC mounted in the head's Ray container; ``shm_size_gib`` the head's
      ``/dev/shm`` limit;
    * ``labels`` are the RayCluster's labels minus the conventional ones, which have fields;
    * no ``authOptions`` reads as ``auth_mode="disabled"`` (what KubeRay does with it).

    Raises:
        ConfigError: no ``metadata.name``, no head template, or a pod without containers.
    """
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        raise ConfigError("[CRD-SCHEMA] $.metadata.name: a RayCluster needs a name; set metadata.name")
    body = obj.get("spec") or {}
    head_group = body.get("headGroupSpec")
    if not isinstance(head_group, dict) or not isinstance(head_group.get("template"), dict):
        raise ConfigError("[CRD-SCHEMA] $.spec.headGroupSpec: 'template' is a required property; add the head pod template")
    head_template = head_group["template"]
    head_container = _required_container(head_template, "$.spec.headGroupSpec.template", "KR-HEAD-CONTAINER")
    containers = [head_container]
    all_labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    namespace = meta.get("namespace") or "default"
    auth = body.get("authOptions") or {}
    head_cpu, head_mem = _amount(head_container, "cpu"), _amount(head_container, "memory")
    shm = _shm_volume(head_template, head_container)
    limit = ((shm or {}).get("emptyDir") or {}).get("sizeLimit")
    data: dict[str, Any] = {
        "name": meta["name"],
        "namespace": namespace,
        "ray_version": body.get("rayVersion") or None,
        "image": head_container.get("image"),
        "head": {
            "cpus": _number(parse_quantity(head_cpu)) if head_cpu is not None else None,
            "memory_gib": _gib(head_mem) if head_mem is not None else None,
            "instance_type": ((head_template.get("spec") or {}).get("nodeSelector") or {}).get(INSTANCE_TYPE_LABEL),
        },
        "worker_groups": [],
        "storage": _read_storage(head_template, head_container),
        # outside task-governance namespaces Kueue labels are the user's own: kept as they are
        "labels": {
            k: v for k, v in all_labels.items() if k not in _CONVENTION_LABELS or (k in _KUEUE_LABELS and kueue_queue(namespace) is None)
        },
        "auth_mode": auth.get("mode") or "disabled",
        "auth_secret_name": auth.get("secretName") or None,
        "shm_size_gib": _gib(limit) if limit is not None else None,
        "created_by": all_labels.get(CREATED_BY_LABEL),
        "hyperpod_cluster": all_labels.get(CLUSTER_NAME_LABEL),
        "priority_class": all_labels.get(KUEUE_PRIORITY_LABEL) if kueue_queue(namespace) else None,
    }
    for path, group in worker_groups(obj):
        template = group.get("template") or {}
        container = _required_container(template, f"{path}.template", "KR-GROUP-CONTAINER")
        containers.append(container)
        cpu, mem = _amount(container, "cpu"), _amount(container, "memory")
        gpus, efa = _amount(container, GPU_RESOURCE), _amount(container, EFA_RESOURCE)
        image = container.get("image")
        replicas, low, high = group.get("replicas", 0), group.get("minReplicas"), group.get("maxReplicas")
        fixed = low == replicas == high  # a fixed-size group: min/max follow replicas when it changes
        data["worker_groups"].append(
            {
                "name": group.get("groupName"),
                "instance_type": ((template.get("spec") or {}).get("nodeSelector") or {}).get(INSTANCE_TYPE_LABEL),
                "image": None if image == data["image"] else image,
                "gpus_per_worker": int(parse_quantity(gpus)) if gpus is not None else 0,
                "efa_per_worker": int(parse_quantity(efa)) if efa is not None else 0,
                "cpus_per_worker": _number(parse_quantity(cpu)) if cpu is not None else None,
                "memory_gib": _gib(mem) if mem is not None else None,
                "replicas": replicas,
                "min_replicas": None if fixed else low,
                "max_replicas": None if fixed else high,
                "ray_start_params": {
                    str(k): str(v) for k, v in (group.get("rayStartParams") or {}).items() if WORKER_START.get(str(k)) != str(v)
                },
            }
        )
    shared = _literal_env(head_container)
    for container in containers[1:]:
        theirs = _literal_env(container)
        shared = {k: v for k, v in shared.items() if theirs.get(k) == v}
    data["env"] = shared
    return data


# ----- patch (export of an imported object) ------------------------------------------------------
def _put_amount(container: dict[str, Any], resource: str, old: Any, new: Any, fmt: Any) -> None:
    """Rewrite one resource amount. 0/None removes it. ``limits`` always, ``requests`` where it
    was equal to the old amount or would exceed the new one (a deliberately lower request stays)."""
    res = container.setdefault("resources", {})
    if not new:
        for part in ("limits", "requests"):
            if isinstance(res.get(part), dict):
                res[part].pop(resource, None)
                if not res[part]:
                    res.pop(part)
        if not res:
            container.pop("resources")
        return
    value = fmt(new)
    had = {part: isinstance(res.get(part), dict) and resource in res[part] for part in ("limits", "requests")}
    if not any(had.values()):
        res.setdefault("requests", {})[resource] = value
        res.setdefault("limits", {})[resource] = value
        return
    if had["limits"]:
        res["limits"][resource] = value
    if had["requests"]:
        request = parse_quantity(res["requests"][resource])
        wanted = parse_quantity(value)
        deliberate = old is not None and request != parse_quantity(fmt(old)) and request <= wanted
        if not had["limits"] or not deliberate:
            res["requests"][resource] = value


def _put_env(container: dict[str, Any], old: Mapping[str, str], new: Mapping[str, str]) -> None:
    current = container.get("env")
    env: list[Any] = current if isinstance(current, list) else []
    removed = {k for k in old if k not in new}
    kept = [e for e in env if not (isinstance(e, dict) and e.get("name") in removed and "valueFrom" not in e)]
    for key, value in new.items():
        if old.get(key) == value:
            continue
        entry = next((e for e in kept if isinstance(e, dict) and e.get("name") == key), None)
        if entry is None:
            kept.append({"name": key, "value": value})
        else:
            entry.pop("valueFrom", None)
            entry["value"] = value
    if kept:
        container["env"] = kept
    else:
        container.pop("env", None)


def _put_labels(holder: dict[str, Any], old: Mapping[str, str], new: Mapping[str, str]) -> None:
    if old == new:
        return
    meta = holder.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    for key in old:
        if key not in new:
            labels.pop(key, None)
    for key, value in new.items():
        if old.get(key) != value:
            labels[key] = value
    if not labels:
        meta.pop("labels")
    if not meta:
        holder.pop("metadata")


def _put_named(items: list[dict[str, Any]], name: str, item: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Replace the item called ``name`` (keeping its position), append it, or drop it when None."""
    out, placed = [], False
    for existing in items:
        if isinstance(existing, dict) and existing.get("name") == name:
            if item is not None and not placed:
                out.append(item)
                placed = True
            continue
        out.append(existing)
    if item is not None and not placed:
        out.append(item)
    return out


def _put_volume(
    pod: dict[str, Any], container: dict[str, Any], name: str, volume: dict[str, Any] | None, mount: dict[str, Any] | None
) -> None:
    for holder, key, item in ((pod, "volumes", volume), (container, "volumeMounts", mount)):
        items = _put_named(holder.get(key) or [], name, item)
        if items:
            holder[key] = items
        else:
            holder.pop(key, None)


def _patch_pod(template: dict[str, Any], old: Data, new: Data) -> None:
    pod = template.setdefault("spec", {})
    container = ray_container(template)
    if container is None:
        return
    if old["image"] != new["image"]:
        container["image"] = new["image"]
    if old["env"] != new["env"]:
        _put_env(container, old["env"], new["env"])
    for resource, fmt in (("cpu", _cpu), ("memory", _memory), (GPU_RESOURCE, int), (EFA_RESOURCE, int)):
        if old[resource] != new[resource]:
            _put_amount(container, resource, old[resource], new[resource], fmt)
    if old["instance_type"] != new["instance_type"]:
        selector = pod.get("nodeSelector") or {}
        if new["instance_type"]:
            selector[INSTANCE_TYPE_LABEL] = new["instance_type"]
        else:
            selector.pop(INSTANCE_TYPE_LABEL, None)
        if selector:
            pod["nodeSelector"] = selector
        else:
            pod.pop("nodeSelector", None)
    if old["storage"] != new["storage"]:
        if old["storage"]:
            _put_volume(pod, container, old["storage"]["volume_name"], None, None)
        if new["storage"]:
            s = new["storage"]
            _put_volume(
                pod,
                container,
                s["volume_name"],
                {"name": s["volume_name"], "persistentVolumeClaim": {"claimName": s["claim_name"]}},
                {"name": s["volume_name"], "mountPath": s["mount_path"]},
            )
    if old["shm_size_gib"] != new["shm_size_gib"]:
        volume = _shm_volume(template, container)
        if volume is None:
            volume = {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}
            _put_volume(pod, container, SHM_VOLUME, volume, {"name": SHM_VOLUME, "mountPath": SHM_PATH})
        if new["shm_size_gib"] is None:
            volume["emptyDir"].pop("sizeLimit", None)
        else:
            volume["emptyDir"]["sizeLimit"] = _memory(new["shm_size_gib"])
    _put_labels(template, old["labels"], new["labels"])


def _counts(group: Data) -> dict[str, int]:
    replicas = group["replicas"]
    return {
        "replicas": replicas,
        "minReplicas": replicas if group["min_replicas"] is None else group["min_replicas"],
        "maxReplicas": replicas if group["max_replicas"] is None else group["max_replicas"],
    }


def _patch_group(entry: dict[str, Any], old_data: Data, old: Data, new_data: Data, new: Data) -> None:
    if old["name"] != new["name"]:
        entry["groupName"] = new["name"]
    old_counts, new_counts = _counts(old), _counts(new)
    for key, value in new_counts.items():
        if old_counts[key] != value:
            entry[key] = value
    if old["ray_start_params"] != new["ray_start_params"]:
        params = entry.setdefault("rayStartParams", {})
        for key in old["ray_start_params"]:
            if key not in new["ray_start_params"]:
                params.pop(key, None)
        params.update({k: v for k, v in new["ray_start_params"].items() if old["ray_start_params"].get(k) != v})
    template = entry.setdefault("template", {})
    _patch_pod(template, _pod_view(old_data, old), _pod_view(new_data, new))


def patch_manifest(source: Mapping[str, Any], old: Data, new: Data, origins: list[int | None] | None = None) -> dict[str, Any]:
    """Export of an imported RayCluster: ``source`` with only what changed from ``old`` to ``new``.

    Args:
        source: the imported object (after `normalise`, without CRD defaults).
        old: spec data as imported (``read_fields`` of the defaulted ``source``).
        new: spec data now.
        origins: for each group of ``new``, the index of the imported group it came from, or None;
            None entries (and no list at all) match groups by their imported name. Unmatched
            groups are built new (`build_worker_group`); imported groups that no group matches
            are dropped. Groups come out in the order of ``new``.

    Returns:
        A new dict. Fields are rewritten only where the spec value differs, in place (lists keep
        their order, quantities not touched keep their spelling). ``new == old`` gives a copy of
        ``source``.
    """
    out = copy.deepcopy(dict(source))
    meta = out.setdefault("metadata", {})
    if old["name"] != new["name"]:
        meta["name"] = new["name"]
    if old["namespace"] != new["namespace"]:
        meta["namespace"] = new["namespace"]
    _put_labels(out, _cluster_labels(old, fresh=False), _cluster_labels(new, fresh=False))
    body = out.setdefault("spec", {})
    if old["ray_version"] != new["ray_version"]:
        if new["ray_version"]:
            body["rayVersion"] = new["ray_version"]
        else:
            body.pop("rayVersion", None)
    if (old["auth_mode"], old["auth_secret_name"]) != (new["auth_mode"], new["auth_secret_name"]):
        auth = body.setdefault("authOptions", {})
        if old["auth_mode"] != new["auth_mode"]:
            auth["mode"] = new["auth_mode"]
        if new["auth_secret_name"]:
            auth["secretName"] = new["auth_secret_name"]
        else:
            auth.pop("secretName", None)
    head = body.get("headGroupSpec")
    if isinstance(head, dict) and isinstance(head.get("template"), dict):
        _patch_pod(head["template"], _pod_view(old, None), _pod_view(new, None))
    imported = [g for _, g in worker_groups(out)]
    taken: set[int] = set()
    groups: list[dict[str, Any]] = []
    for i, group in enumerate(new["worker_groups"]):
        origin = origins[i] if origins is not None and i < len(origins) else None
        if origin is None or origin in taken or origin >= len(imported):
            origin = next((j for j, g in enumerate(old["worker_groups"]) if j not in taken and g["name"] == group["name"]), None)
        if origin is None:
            groups.append(build_worker_group(new, group))
            continue
        taken.add(origin)
        entry = imported[origin]
        _patch_group(entry, old, old["worker_groups"][origin], new, group)
        groups.append(entry)
    if groups:
        body["workerGroupSpecs"] = groups
    elif imported:  # every group removed: a head-only cluster, written as new ones are
        body.pop("workerGroupSpecs")
    return out
