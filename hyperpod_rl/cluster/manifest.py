"""ClusterSpec <-> ``ray.io/v1`` RayCluster manifest, and validation against the KubeRay CRD.

Pure: spec in, dict out. No Kubernetes client, no file writes (the CRD schema is read
from package data). The only module that knows KubeRay field names.

HyperPod conventions applied to every manifest (see docs/hyperpod-setup.md):

* nodeSelector ``sagemaker.amazonaws.com/node-health-status: Schedulable`` on every pod;
* head ``rayStartParams`` ``num-cpus: "0"`` and ``num-gpus: "0"`` so no work lands on it;
* ``/dev/shm`` as a memory-backed emptyDir on every pod;
* metrics export port 8080 on every node (``metrics-export-port`` + a ``metrics`` port);
* GPU workers request ``nvidia.com/gpu`` and, where the instance has it, ``vpc.amazonaws.com/efa``;
* the FSx PVC mounted on every pod;
* ``spec.rayVersion`` equal to the image tag's Ray version.

Sources: KubeRay v1.7.0 ``ray-operator/apis/ray/v1/raycluster_types.go`` (fields),
``ray-operator/controllers/ray/utils/constant.go`` (head service ports 6379/8265/10001/8080/8000,
ray container at index 0).
"""

from __future__ import annotations

import copy
import functools
from decimal import Decimal
from importlib import resources
from typing import Any

import jsonschema
import yaml
from kubernetes.utils import parse_quantity

from hyperpod_rl.cluster.spec import (
    ClusterSpec,
    HeadSpec,
    StorageSpec,
    WorkerGroupSpec,
    ray_version_of_image,
)
from hyperpod_rl.errors import ConfigError

__all__ = [
    "API_VERSION",
    "HEALTH_LABEL",
    "INSTANCE_TYPE_LABEL",
    "KIND",
    "MANAGED_BY_LABEL",
    "METRICS_PORT",
    "build_manifest",
    "crd_schema",
    "get_head_group",
    "get_metadata",
    "get_pod_template",
    "get_ray_container",
    "get_resources",
    "get_volumes",
    "get_worker_group",
    "merge_manifest",
    "parse_manifest",
    "validate_manifest",
]

API_VERSION = "ray.io/v1"
KIND = "RayCluster"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "hyperpod-rl"
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
METRICS_PORT = 8080
SHM_VOLUME = "dshm"
SHM_PATH = "/dev/shm"
HEAD_PORTS = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("metrics", METRICS_PORT), ("serve", 8000))
_HEAD_START = {"dashboard-host": "0.0.0.0", "num-cpus": "0", "num-gpus": "0", "metrics-export-port": str(METRICS_PORT)}
_WORKER_START = {"metrics-export-port": str(METRICS_PORT)}
_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


# ----- quantities ---------------------------------------------------------------------------
def _cpu(cores: float) -> str:
    return str(int(cores)) if float(cores).is_integer() else f"{round(cores * 1000)}m"


def _memory(gib: float) -> str:
    return f"{int(gib)}Gi" if float(gib).is_integer() else f"{round(gib * 1024)}Mi"


def _to_float(value: Decimal) -> float:
    f = float(value)
    return int(f) if f.is_integer() else f


# ----- build: small get_* pieces ------------------------------------------------------------
def get_metadata(spec: ClusterSpec) -> dict[str, Any]:
    """``metadata`` of the RayCluster: name, namespace and labels (plus managed-by)."""
    return {"name": spec.name, "namespace": spec.namespace, "labels": {MANAGED_BY_LABEL: MANAGED_BY, **spec.labels}}


def get_resources(*, cpus: float, memory_gib: float, gpus: int = 0, efa: int = 0) -> dict[str, Any]:
    """Container ``resources`` with requests equal to limits (Guaranteed QoS).

    Args:
        cpus: CPU cores. memory_gib: memory in GiB. gpus: ``nvidia.com/gpu`` count.
        efa: ``vpc.amazonaws.com/efa`` count (0 leaves it out).
    """
    amounts: dict[str, Any] = {"cpu": _cpu(cpus), "memory": _memory(memory_gib)}
    if gpus:
        amounts[GPU_RESOURCE] = gpus
    if efa:
        amounts[EFA_RESOURCE] = efa
    return {"requests": dict(amounts), "limits": dict(amounts)}


def get_volumes(spec: ClusterSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pod ``volumes`` and matching container ``volumeMounts``: /dev/shm and the FSx PVC."""
    shm: dict[str, Any] = {"medium": "Memory"}
    if spec.shm_size_gib is not None:
        shm["sizeLimit"] = _memory(spec.shm_size_gib)
    volumes: list[dict[str, Any]] = [{"name": SHM_VOLUME, "emptyDir": shm}]
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": SHM_PATH}]
    if spec.storage is not None:
        volumes.append({"name": spec.storage.volume_name, "persistentVolumeClaim": {"claimName": spec.storage.claim_name}})
        mounts.append({"name": spec.storage.volume_name, "mountPath": spec.storage.mount_path})
    return volumes, mounts


def get_ray_container(spec: ClusterSpec, *, name: str, resources_: dict[str, Any], ports: list[dict[str, Any]]) -> dict[str, Any]:
    """The Ray container (index 0 of the pod, as KubeRay expects)."""
    _, mounts = get_volumes(spec)
    container: dict[str, Any] = {
        "name": name,
        "image": spec.image,
        "ports": ports,
        "resources": resources_,
        "volumeMounts": mounts,
    }
    if spec.env:
        container["env"] = [{"name": k, "value": v} for k, v in spec.env.items()]
    return container


def get_pod_template(spec: ClusterSpec, *, container: dict[str, Any], instance_type: str | None) -> dict[str, Any]:
    """A pod template with the HyperPod node selector, volumes and labels."""
    selector = {HEALTH_LABEL: "Schedulable"}
    if instance_type:
        selector[INSTANCE_TYPE_LABEL] = instance_type
    volumes, _ = get_volumes(spec)
    template: dict[str, Any] = {"spec": {"nodeSelector": selector, "containers": [container], "volumes": volumes}}
    if spec.labels:
        template["metadata"] = {"labels": dict(spec.labels)}
    return template


def get_head_group(spec: ClusterSpec) -> dict[str, Any]:
    """``spec.headGroupSpec``: a CPU-only head that schedules no work."""
    head: HeadSpec = spec.head
    ports = [{"name": n, "containerPort": p} for n, p in HEAD_PORTS]
    container = get_ray_container(spec, name="ray-head", resources_=get_resources(cpus=head.cpus, memory_gib=head.memory_gib), ports=ports)
    return {
        "rayStartParams": dict(_HEAD_START),
        "template": get_pod_template(spec, container=container, instance_type=head.instance_type),
    }


def get_worker_group(spec: ClusterSpec, group: WorkerGroupSpec) -> dict[str, Any]:
    """One entry of ``spec.workerGroupSpecs``."""
    container = get_ray_container(
        spec,
        name="ray-worker",
        resources_=get_resources(
            cpus=group.cpus_per_worker, memory_gib=group.memory_gib, gpus=group.gpus_per_worker, efa=group.efa_per_worker
        ),
        ports=[{"name": "metrics", "containerPort": METRICS_PORT}],
    )
    return {
        "groupName": group.name,
        "replicas": group.replicas,
        "minReplicas": group.min_count,
        "maxReplicas": group.max_count,
        "rayStartParams": {**group.ray_start_params, **_WORKER_START},
        "template": get_pod_template(spec, container=container, instance_type=group.instance_type),
    }


def build_manifest(spec: ClusterSpec) -> dict[str, Any]:
    """The full RayCluster for ``spec``, merged over ``spec.unmodelled`` when imported.

    Returns:
        A new dict (``apiVersion``, ``kind``, ``metadata``, ``spec``); never shared with ``spec``.
    """
    auth: dict[str, Any] = {"mode": spec.auth_mode}
    if spec.auth_secret_name:
        auth["secretName"] = spec.auth_secret_name
    generated = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": get_metadata(spec),
        "spec": {
            "rayVersion": spec.ray_version,
            "authOptions": auth,
            "headGroupSpec": get_head_group(spec),
            "workerGroupSpecs": [get_worker_group(spec, g) for g in spec.worker_groups],
        },
    }
    if not spec.unmodelled:
        return generated
    return merge_manifest(spec.unmodelled, generated)


# ----- merge ---------------------------------------------------------------------------------
_LIST_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "workerGroupSpecs": "groupName",
}


def merge_manifest(base: Any, generated: Any, _key: str = "") -> Any:
    """Deep-merge ``generated`` over ``base`` (base = unmodelled fields of an import).

    Dicts merge key by key, generated winning on scalars. Named lists (containers, volumes,
    volumeMounts, env, ports) merge by their key, generated items first, base-only items
    kept after them; the first container (the Ray container) merges with the base's first.
    Worker groups are owned by the spec: base-only groups are dropped. Other lists are
    replaced by the generated one.
    """
    if isinstance(base, dict) and isinstance(generated, dict):
        out = copy.deepcopy(base)
        for k, v in generated.items():
            out[k] = merge_manifest(base[k], v, k) if k in base else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(generated, list) and _key in _LIST_KEYS:
        key = _LIST_KEYS[_key]
        remaining = [copy.deepcopy(b) for b in base]
        out_list = []
        for i, item in enumerate(generated):
            match = None
            if _key == "containers" and i == 0 and remaining:
                match = remaining.pop(0)  # the Ray container is index 0 on both sides
            if match is None:
                idx = next((j for j, b in enumerate(remaining) if isinstance(b, dict) and b.get(key) == item.get(key)), None)
                match = remaining.pop(idx) if idx is not None else None
            out_list.append(merge_manifest(match, item, "") if match is not None else copy.deepcopy(item))
        if _key != "workerGroupSpecs":
            out_list.extend(remaining)
        return out_list
    return copy.deepcopy(generated)


# ----- parse (import) -----------------------------------------------------------------------
def _ray_container(template: dict[str, Any], where: str) -> dict[str, Any]:
    containers = template.get("spec", {}).get("containers") or []
    if not containers:
        raise ConfigError(f"{where}.template.spec.containers is empty; a Ray container is required at index 0")
    return containers[0]


def _amount(res: dict[str, Any], name: str) -> Decimal | None:
    for part in ("limits", "requests"):
        value = (res.get(part) or {}).get(name)
        if value is not None:
            return parse_quantity(value)
    return None


def _strip_resources(container: dict[str, Any]) -> None:
    res = container.get("resources") or {}
    for part in ("limits", "requests"):
        amounts = res.get(part)
        if isinstance(amounts, dict):
            for name in ("cpu", "memory", GPU_RESOURCE, EFA_RESOURCE):
                amounts.pop(name, None)
            if not amounts:
                res.pop(part)
    if "resources" in container and not res:
        container.pop("resources")


def _strip_pod(template: dict[str, Any], *, env: dict[str, str], labels: dict[str, str], storage: StorageSpec | None) -> None:
    """Remove from ``template`` (in place) the fields the spec models."""
    meta = template.get("metadata") or {}
    for k in labels:
        (meta.get("labels") or {}).pop(k, None)
    if "labels" in meta and not meta["labels"]:
        meta.pop("labels")
    if "metadata" in template and not meta:
        template.pop("metadata")
    pod = template.get("spec") or {}
    selector = pod.get("nodeSelector") or {}
    selector.pop(HEALTH_LABEL, None)
    selector.pop(INSTANCE_TYPE_LABEL, None)
    if "nodeSelector" in pod and not selector:
        pod.pop("nodeSelector")
    modelled_volumes = {SHM_VOLUME} | ({storage.volume_name} if storage else set())
    if "volumes" in pod:
        pod["volumes"] = [v for v in pod["volumes"] if v.get("name") not in modelled_volumes]
        if not pod["volumes"]:
            pod.pop("volumes")
    container = (pod.get("containers") or [{}])[0]
    container.pop("image", None)
    _strip_resources(container)
    if "env" in container:
        container["env"] = [e for e in container["env"] if not ("value" in e and env.get(e.get("name")) == e["value"])]
        if not container["env"]:
            container.pop("env")
    if "volumeMounts" in container:
        container["volumeMounts"] = [m for m in container["volumeMounts"] if m.get("name") not in modelled_volumes]
        if not container["volumeMounts"]:
            container.pop("volumeMounts")


def _storage_of(template: dict[str, Any]) -> StorageSpec | None:
    pod = template.get("spec", {})
    for volume in pod.get("volumes") or []:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            for mount in _ray_container(template, "pod").get("volumeMounts") or []:
                if mount.get("name") == volume["name"]:
                    return StorageSpec(claim_name=claim, mount_path=mount["mountPath"], volume_name=volume["name"])
    return None


def _shm_of(template: dict[str, Any]) -> tuple[bool, float | None]:
    for volume in template.get("spec", {}).get("volumes") or []:
        empty = volume.get("emptyDir")
        if volume.get("name") == SHM_VOLUME and isinstance(empty, dict) and empty.get("medium") == "Memory":
            limit = empty.get("sizeLimit")
            return True, (_to_float(parse_quantity(limit) / 2**30) if limit is not None else None)
    return False, None


def parse_manifest(manifest: dict[str, Any]) -> ClusterSpec:
    """Import a RayCluster dict into a `ClusterSpec`, keeping unmodelled fields.

    The ray container is index 0 of each pod (KubeRay's convention). Resources are read
    from ``limits``, falling back to ``requests``. A manifest without ``authOptions`` is
    imported as ``auth_mode="disabled"`` (that is what KubeRay does with it).

    Raises:
        ConfigError: wrong apiVersion/kind, missing head or containers, or invalid values.
    """
    if not isinstance(manifest, dict):
        raise ConfigError(f"a RayCluster manifest must be a mapping, got {type(manifest).__name__}")
    if manifest.get("kind") != KIND:
        raise ConfigError(f"kind must be {KIND!r}, got {manifest.get('kind')!r}")
    if manifest.get("apiVersion") != API_VERSION:
        raise ConfigError(
            f"apiVersion must be {API_VERSION!r}, got {manifest.get('apiVersion')!r}; "
            "v1alpha1 is deprecated in KubeRay, change apiVersion to ray.io/v1"
        )
    base = copy.deepcopy(manifest)
    base.pop("status", None)
    meta = base.setdefault("metadata", {})
    for k in _SERVER_FIELDS:
        meta.pop(k, None)
    (meta.get("annotations") or {}).pop(_LAST_APPLIED, None)
    if "annotations" in meta and not meta["annotations"]:
        meta.pop("annotations")
    body = base.get("spec") or {}
    head_group = body.get("headGroupSpec")
    if not isinstance(head_group, dict) or "template" not in head_group:
        raise ConfigError("spec.headGroupSpec.template is required in a RayCluster")
    head_template = head_group["template"]
    head_container = _ray_container(head_template, "spec.headGroupSpec")
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != MANAGED_BY_LABEL}
    env = {e["name"]: e["value"] for e in head_container.get("env") or [] if "value" in e and "name" in e}
    storage = _storage_of(head_template)
    _, shm_gib = _shm_of(head_template)
    head_res = head_container.get("resources") or {}
    head_cpu, head_mem = _amount(head_res, "cpu"), _amount(head_res, "memory")
    auth = body.get("authOptions") or {}
    data: dict[str, Any] = {
        "name": meta.get("name", "hyperpod-rl"),
        "namespace": meta.get("namespace", "default"),
        "image": head_container.get("image", ""),
        "head": {
            "cpus": _to_float(head_cpu) if head_cpu else HeadSpec().cpus,
            "memory_gib": _to_float(head_mem / 2**30) if head_mem else HeadSpec().memory_gib,
            "instance_type": (head_template.get("spec", {}).get("nodeSelector") or {}).get(INSTANCE_TYPE_LABEL),
        },
        "storage": storage,
        "env": env,
        "labels": labels,
        "auth_mode": auth.get("mode", "token") if auth else "disabled",
        "auth_secret_name": auth.get("secretName"),
        "shm_size_gib": shm_gib,
        "worker_groups": [],
    }
    ray_version = body.get("rayVersion") or ray_version_of_image(data["image"])
    if ray_version:
        data["ray_version"] = ray_version
    groups = body.get("workerGroupSpecs") or []
    for i, group in enumerate(groups):
        where = f"spec.workerGroupSpecs[{i}]"
        container = _ray_container(group.get("template") or {}, where)
        res = container.get("resources") or {}
        cpu, mem = _amount(res, "cpu"), _amount(res, "memory")
        gpus, efa = _amount(res, GPU_RESOURCE), _amount(res, EFA_RESOURCE)
        start = {k: str(v) for k, v in (group.get("rayStartParams") or {}).items() if k not in _WORKER_START}
        replicas = group.get("replicas", group.get("minReplicas", 0))
        data["worker_groups"].append(
            {
                "name": group.get("groupName"),
                "instance_type": (group.get("template", {}).get("spec", {}).get("nodeSelector") or {}).get(INSTANCE_TYPE_LABEL),
                "gpus_per_worker": int(gpus or 0),
                "efa_per_worker": int(efa or 0),
                "cpus_per_worker": _to_float(cpu) if cpu else WorkerGroupSpec().cpus_per_worker,
                "memory_gib": _to_float(mem / 2**30) if mem else WorkerGroupSpec().memory_gib,
                "replicas": replicas,
                "min_replicas": None if group.get("minReplicas", 0) == replicas else group.get("minReplicas", 0),
                "max_replicas": None if group.get("maxReplicas", replicas) == replicas else group.get("maxReplicas"),
                "ray_start_params": start,
            }
        )
    spec = ClusterSpec.parse(data)
    # Strip what the spec now owns; what is left is re-emitted under the generated manifest.
    meta.pop("name", None)
    meta.pop("namespace", None)
    meta.pop("labels", None)
    if not meta:
        base.pop("metadata")
    body.pop("rayVersion", None)
    leftover_auth = body.get("authOptions")
    if isinstance(leftover_auth, dict):  # keep e.g. enableK8sTokenAuth; the spec owns mode/secretName
        leftover_auth.pop("mode", None)
        leftover_auth.pop("secretName", None)
        if not leftover_auth:
            body.pop("authOptions")
    for k in _HEAD_START:
        (head_group.get("rayStartParams") or {}).pop(k, None)
    _strip_pod(head_template, env=env, labels=labels, storage=storage)
    for group in groups:
        for k in ("replicas", "minReplicas", "maxReplicas"):
            group.pop(k, None)
        group["rayStartParams"] = {}
        _strip_pod(group.get("template") or {}, env=env, labels=labels, storage=storage)
    spec.unmodelled = base
    return spec


# ----- validation ---------------------------------------------------------------------------
def _strictify(schema: Any) -> Any:
    """Copy of an OpenAPI v3 (structural) schema usable by jsonschema, rejecting unknown fields.

    The API server prunes unknown fields (or rejects them with ``fieldValidation=Strict``);
    jsonschema would accept them silently, so ``additionalProperties: false`` is added to every
    object that lists ``properties`` and does not preserve unknown fields. ``nullable`` becomes a
    ``null`` type.
    """
    if isinstance(schema, list):
        return [_strictify(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strictify(v) for k, v in schema.items()}
    if out.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@functools.cache
def crd_schema(version: str = "v1") -> dict[str, Any]:
    """The ``openAPIV3Schema`` of the vendored KubeRay v1.7.0 RayCluster CRD.

    Source: ``hyperpod_rl/cluster/crds/ray.io_rayclusters.yaml`` (copied from
    ray-project/kuberay ``ray-operator/config/crd/bases``, tag v1.7.0; see MANIFEST.txt).
    """
    text = resources.files("hyperpod_rl.cluster").joinpath("crds", "ray.io_rayclusters.yaml").read_text()
    crd = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            return entry["schema"]["openAPIV3Schema"]
    raise ConfigError(f"CRD has no version {version!r}")


@functools.cache
def _validator(strict: bool) -> jsonschema.Draft7Validator:
    schema = crd_schema("v1")
    return jsonschema.Draft7Validator(_strictify(schema) if strict else schema)


_CUSTOM_VALIDATORS: dict[tuple[int, bool], tuple[dict[str, Any], jsonschema.Draft7Validator]] = {}


def validate_manifest(manifest: dict[str, Any], *, strict: bool = True, schema: dict[str, Any] | None = None) -> None:
    """Check a RayCluster against the KubeRay v1.7 ``v1`` CRD schema and HyperPod rules.

    Args:
        manifest: the RayCluster dict.
        strict: also reject fields the CRD does not define (as ``fieldValidation=Strict``).
        schema: another ``openAPIV3Schema`` to use instead of the vendored one (tests pass
            the copy in ``shared/data/kuberay-crds``).

    Raises:
        ConfigError: listing every violation as ``$.json.path: message``, sorted by path.
    """
    if schema is None:
        validator = _validator(strict)
    else:
        cached = _CUSTOM_VALIDATORS.get((id(schema), strict))
        if cached is None or cached[0] is not schema:
            cached = (schema, jsonschema.Draft7Validator(_strictify(schema) if strict else schema))
            _CUSTOM_VALIDATORS[(id(schema), strict)] = cached
        validator = cached[1]
    problems = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(manifest)]
    if isinstance(manifest, dict):
        if manifest.get("apiVersion") != API_VERSION:
            problems.append(f"$.apiVersion: must be {API_VERSION!r}, got {manifest.get('apiVersion')!r}")
        if manifest.get("kind") != KIND:
            problems.append(f"$.kind: must be {KIND!r}, got {manifest.get('kind')!r}")
        problems.extend(_version_problems(manifest))
    if problems:
        raise ConfigError("RayCluster manifest is invalid:\n  " + "\n  ".join(sorted(problems)))


def _version_problems(manifest: dict[str, Any]) -> list[str]:
    body = manifest.get("spec")
    if not isinstance(body, dict):
        return []
    want = body.get("rayVersion")
    pods = [("$.spec.headGroupSpec", body.get("headGroupSpec"))]
    pods += [(f"$.spec.workerGroupSpecs[{i}]", g) for i, g in enumerate(body.get("workerGroupSpecs") or [])]
    problems = []
    for where, group in pods:
        try:
            image = group["template"]["spec"]["containers"][0]["image"]
        except (KeyError, IndexError, TypeError):
            continue
        have = ray_version_of_image(image) if isinstance(image, str) else None
        if want and have and have != want:
            problems.append(
                f"{where}.template.spec.containers[0].image: tag Ray {have} does not match spec.rayVersion {want}; use one version for both"
            )
    return problems
