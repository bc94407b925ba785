"""Typed description of a Ray cluster on SageMaker HyperPod (EKS + KubeRay).

`ClusterSpec` is what a user edits; `ClusterSpec.to_manifest` turns it into a ``ray.io/v1``
RayCluster (through the pure ``cluster.manifest``) and checks it with the one rule set of
``cluster.rules`` (the KubeRay CRD schema after its defaults + the operator's rules). The same
rules run when a spec is built or a top-level field is assigned, so a spec that exists is one the
operator accepts. Field meanings follow the KubeRay v1.7 RayCluster CRD
(``ray-operator/apis/ray/v1/raycluster_types.go``) and the HyperPod conventions in
docs/hyperpod-setup.md.

An imported RayCluster (`ClusterSpec.from_manifest`) keeps the imported object: export rewrites
only the fields whose spec value changed, so an unchanged import exports the same object.

Example:
    >>> spec = ClusterSpec.from_preset("seed", name="maze-rl")  # doctest: +SKIP
    >>> spec.to_manifest()["spec"]["rayVersion"]  # doctest: +SKIP
    '2.56.0'
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from hyperpod_rl.base import Model, listed
from hyperpod_rl.cluster import crd as _crd
from hyperpod_rl.cluster import manifest as _manifest
from hyperpod_rl.cluster import rules as _rules
from hyperpod_rl.cluster.rules import ray_version_of_image
from hyperpod_rl.errors import ConfigError

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_RAY_VERSION",
    "ClusterSpec",
    "HeadSpec",
    "StorageSpec",
    "WorkerGroupSpec",
    "ray_version_of_image",
]

DEFAULT_RAY_VERSION = "2.56.0"
"""Ray version of the cluster image; SkyRL 0.3.0 pins ray==2.56.0 (and so does this package, for the client)."""

DEFAULT_IMAGE = f"rayproject/ray:{DEFAULT_RAY_VERSION}-py312-gpu"
"""Official Ray image (Python 3.12, CUDA) whose tag matches `DEFAULT_RAY_VERSION`."""


class _ClusterModel(Model):
    """Editable in place (the cluster panel edits field by field); assignments are validated."""

    model_config = ConfigDict(frozen=False, validate_assignment=True)
    error_what = "ClusterSpec"
    error_prefix = "cluster."

    def __setattr__(self, name: str, value: Any) -> None:
        """A bad value raises `ConfigError` (every problem, with the rule ids) and keeps the old value."""
        if name.startswith("_"):
            super().__setattr__(name, value)
            return
        missing = object()
        old = self.__dict__.get(name, missing)
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            if old is not missing:  # pydantic has already stored it when an after-validator fails
                self.__dict__[name] = old
            raise ConfigError(self.format_error(exc)) from None


class HeadSpec(_ClusterModel):
    """The Ray head pod. In new specs it runs the GCS and dashboard and no work (``num-cpus: "0"``)."""

    cpus: float = Field(default=4, gt=0)
    """CPU cores of the head's Ray container: limit (and request) in Kubernetes ``cpu``."""
    memory_gib: float = Field(default=16, gt=0)
    """Memory limit (and request) of the head's Ray container, in GiB."""
    instance_type: str | None = None
    """HyperPod instance type for ``node.kubernetes.io/instance-type`` (e.g. ``ml.m5.2xlarge``);
    None schedules the head on any schedulable node."""


class WorkerGroupSpec(_ClusterModel):
    """One KubeRay worker group (``spec.workerGroupSpecs[]``): identical pods of one shape."""

    name: str = "gpu-group"
    """``groupName``: unique in the cluster, a valid label value (KubeRay labels pods ``ray.io/group=<name>``)."""
    instance_type: str | None = None
    """HyperPod instance type (``ml.g7e.12xlarge``, ``ml.p5.48xlarge``...); None = any node."""
    image: str | None = None
    """Container image of this group's Ray container; None = the cluster's ``image``."""
    gpus_per_worker: int = Field(default=0, ge=0)
    """``nvidia.com/gpu`` per pod; 0 means a CPU-only group."""
    cpus_per_worker: float = Field(default=4, gt=0)
    """CPU cores per pod (limit; request too, unless an imported group requests less on purpose)."""
    memory_gib: float = Field(default=16, gt=0)
    """Memory per pod in GiB (limit; request too, unless an imported group requests less on purpose)."""
    efa_per_worker: int = Field(default=0, ge=0)
    """``vpc.amazonaws.com/efa`` interfaces per pod; 0 on instance types without EFA."""
    replicas: int = Field(default=1, ge=0)
    """Desired pods (``replicas``); must lie within ``[min_replicas, max_replicas]``."""
    min_replicas: int | None = Field(default=None, ge=0)
    """``minReplicas``; None means equal to ``replicas`` (a fixed-size group)."""
    max_replicas: int | None = Field(default=None, ge=0)
    """``maxReplicas``; None means equal to ``replicas``. KubeRay's own default (field absent) is
    2147483647, which an import keeps."""
    ray_start_params: dict[str, str] = Field(default_factory=dict)
    """Extra ``rayStartParams`` (values are strings, as in the CRD)."""

    _origin: int | None = PrivateAttr(default=None)
    """Index of the imported group this one came from (kept across renames)."""

    @property
    def min_count(self) -> int:
        """``minReplicas`` as emitted."""
        return self.replicas if self.min_replicas is None else self.min_replicas

    @property
    def max_count(self) -> int:
        """``maxReplicas`` as emitted."""
        return self.replicas if self.max_replicas is None else self.max_replicas


class StorageSpec(_ClusterModel):
    """Shared storage: an FSx for Lustre PersistentVolumeClaim mounted on every pod."""

    claim_name: str = "fsx-claim"
    """Name of the existing PVC in the cluster namespace (see docs/hyperpod-setup.md)."""
    mount_path: str = "/fsx"
    """Absolute path where every Ray container sees the file system."""
    volume_name: str = "fsx-storage"
    """Pod volume name used for the claim."""

    @model_validator(mode="after")
    def _check_path(self) -> StorageSpec:
        if not self.mount_path.startswith("/"):
            raise ValueError(f"storage.mount_path must be absolute, got {self.mount_path!r}")
        return self


_PRESETS: dict[str, dict[str, Any]] = {
    # The seed topology of AWS's walkthrough of SkyRL on HyperPod (2026-09-25), as issue 29 quotes it (the
    # post could not be retrieved here): an ml.r5d.16xlarge CPU head and 3 x ml.g7e.12xlarge workers.
    # Instance sizes: ml.g7e.12xlarge = 48 vCPU, 512 GiB, 2 x RTX PRO 6000 Blackwell Server Edition, 1 EFA
    # (aws/sagemaker-hyperpod-cli, src/sagemaker/hyperpod/training/constants.py INSTANCE_RESOURCES);
    # ml.r5d.16xlarge = 64 vCPU, 512 GiB (AWS's EC2 R5 instance types page). One pod per node; each pod asks
    # for the node less 4 vCPU and 32 GiB, left to the kubelet, HyperPod's agents and the other daemonsets.
    # The head pod keeps num-cpus/num-gpus "0" (no Ray work lands on it; the trainer task runs on a GPU worker).
    "seed": {
        "head": {"cpus": 60, "memory_gib": 480, "instance_type": "ml.r5d.16xlarge"},
        "worker_groups": [
            {
                "name": "gpu-group",
                "instance_type": "ml.g7e.12xlarge",
                "gpus_per_worker": 2,
                "cpus_per_worker": 44,
                "memory_gib": 480,
                "replicas": 3,
            }
        ],
    },
    # One GPU node: ml.g5.2xlarge = 8 vCPU, 32 GiB, 1 x A10G.
    "single-gpu": {
        "head": {"cpus": 2, "memory_gib": 8},
        "worker_groups": [
            {
                "name": "gpu-group",
                "instance_type": "ml.g5.2xlarge",
                "gpus_per_worker": 1,
                "cpus_per_worker": 6,
                "memory_gib": 24,
                "replicas": 1,
            }
        ],
    },
}


def _complete(fields: dict[str, Any]) -> dict[str, Any]:
    """Fields read from an object, with spec defaults where the object sets no CPU or memory."""
    out = dict(fields)
    head = dict(out["head"])
    for key in ("cpus", "memory_gib"):
        if head[key] is None:
            head[key] = HeadSpec.model_fields[key].default
    out["head"] = head
    groups = []
    for group in out["worker_groups"]:
        group = dict(group)
        for key in ("cpus_per_worker", "memory_gib"):
            if group[key] is None:
                group[key] = WorkerGroupSpec.model_fields[key].default
        groups.append(group)
    out["worker_groups"] = groups
    return out


def _imported_fields(source: Mapping[str, Any]) -> dict[str, Any]:
    return _complete(_manifest.read_fields(_crd.apply_defaults(dict(source))))


class ClusterSpec(_ClusterModel):
    """A RayCluster on HyperPod: head, worker groups, shared storage, env, labels and auth.

    Building a spec, assigning a top-level field and `to_manifest` run the rule set of
    ``cluster.rules`` (KubeRay 1.7) on the RayCluster the spec stands for; the error lists every
    broken rule as ``[RULE-ID] $.json.path: problem; fix``.

    Example:
        >>> spec = ClusterSpec.from_preset("single-gpu", name="demo")  # doctest: +SKIP
        >>> spec.worker_groups[0].gpus_per_worker  # doctest: +SKIP
        1
    """

    name: str = "hyperpod-rl"
    """``metadata.name``: a DNS-1035 label of at most 53 characters (KubeRay's limit)."""
    namespace: str = "default"
    """Kubernetes namespace; must hold the FSx PVC. In a task-governance namespace
    ``hyperpod-ns-<team>`` the RayCluster joins Kueue's ``<namespace>-localqueue``."""
    ray_version: str | None = DEFAULT_RAY_VERSION
    """``spec.rayVersion``; must equal the version in the image tag when the tag has one.
    Token auth needs 2.52.0 or later. None leaves it unset (imports that have none)."""
    image: str | None = DEFAULT_IMAGE
    """Container image of the head's Ray container and of every group without its own ``image``."""
    head: HeadSpec = Field(default_factory=HeadSpec)
    """The head pod."""
    worker_groups: list[WorkerGroupSpec] = Field(default_factory=lambda: [WorkerGroupSpec()])
    """Worker groups, unique by name; empty for a head-only cluster."""
    storage: StorageSpec | None = Field(default_factory=StorageSpec)
    """Shared FSx volume; None mounts nothing (single-node experiments only)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Plain environment variables of every Ray container. Never put secrets here. An import
    keeps variables that only some containers have in those containers."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Labels on the RayCluster and on every pod template."""
    auth_mode: Literal["token", "disabled"] = "token"
    """Ray token auth (KubeRay ``spec.authOptions.mode``): the operator creates a Secret
    named after the cluster holding ``auth_token`` and sets ``RAY_AUTH_MODE``/``RAY_AUTH_TOKEN``
    in every Ray container. ``disabled`` leaves the dashboard open to anyone who reaches it."""
    auth_secret_name: str | None = None
    """Use this existing Secret (key ``auth_token``) instead of an operator-generated one."""
    shm_size_gib: float | None = Field(default=None, gt=0)
    """``sizeLimit`` of the ``/dev/shm`` memory volume in GiB; None = no limit."""
    created_by: str | None = None
    """Label ``sagemaker.user/created-by`` (the creator, as AWS's Ray tools show it); None = no label."""
    hyperpod_cluster: str | None = None
    """Label ``sagemaker.amazonaws.com/cluster-name``: the HyperPod cluster, so AWS's Ray Clusters
    sidebar lists this RayCluster; None = no label."""
    priority_class: str | None = None
    """Kueue ``kueue.x-k8s.io/priority-class`` label (a task-governance priority class such as
    ``training-priority``); set only in task-governance namespaces ``hyperpod-ns-<team>``, where
    Kueue runs (elsewhere the value is kept but not written); None = no label."""
    source_manifest: dict[str, Any] | None = Field(default=None, repr=False)
    """The imported RayCluster (server fields removed); export rewrites only what changed in it.
    None for new specs."""

    @model_validator(mode="after")
    def _check_rules(self) -> ClusterSpec:
        report = _rules.check_manifest(self._export())
        if report.errors:
            raise ValueError("\n".join(str(v) for v in report.errors))
        return self

    # ----- construction -----------------------------------------------------------------
    @classmethod
    def presets(cls) -> list[str]:
        """Names accepted by `from_preset`, sorted."""
        return sorted(_PRESETS)

    @classmethod
    def from_preset(cls, name: str, /, **overrides: Any) -> ClusterSpec:
        """Build a spec from a named preset, with top-level fields overridden.

        Args:
            name: (positional-only, so ``name=`` overrides the cluster name) one of
                `presets()`: ``seed`` (an ml.r5d.16xlarge CPU head + 3 workers x 2 GPUs on
                ml.g7e.12xlarge, AWS's walkthrough topology as issue 29 quotes it) or ``single-gpu``
                (one ml.g5.2xlarge worker).
            **overrides: `ClusterSpec` fields, e.g. ``name="maze"``, ``namespace="team-a"``.

        Raises:
            ConfigError: unknown preset, unknown field, or an invalid value (the message
                names the field, or the rule id and JSON path, and the fix).
        """
        if name not in _PRESETS:
            raise ConfigError(f"unknown cluster preset {name!r}; known presets: {listed(cls.presets())}")
        return cls.build({**_PRESETS[name], **overrides})

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> ClusterSpec:
        """Validate a plain dict (e.g. from JSON or a form) into a spec (same as `build`).

        Raises:
            ConfigError: listing every invalid field as ``cluster.<path>: <problem>`` and every
                broken rule as ``[RULE-ID] $.json.path: <problem>; <fix>``.
        """
        return cls.build(dict(data))

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> ClusterSpec:
        """Import an existing RayCluster (dict from YAML or ``kubectl get -o json``).

        Every field the spec does not model is kept, per group (images, env, resources as
        written, ports, container names, annotations, volumes, sidecars...), and `to_manifest`
        changes only what was changed on the spec: an unchanged import exports the same object.
        CRD defaults are applied before reading (an absent ``maxReplicas`` is KubeRay's
        2147483647). Head-only clusters import with ``worker_groups == []``. A ``ray.io/v1alpha1``
        object is read as ``ray.io/v1`` (same fields) with a `FutureWarning`.

        Raises:
            ConfigError: not a RayCluster, no head template or Ray container, or the object
                breaks a rule of the KubeRay rule set (each named by its id).
        """
        report = _rules.check_manifest(manifest)
        if report.errors:
            raise ConfigError(
                "cannot import: "
                + report.message(f"RayCluster {_manifest.identity(manifest)[0]!r}" if isinstance(manifest, Mapping) else "RayCluster")
            )
        source, converted = _manifest.normalise(manifest)
        fields = _imported_fields(source)
        spec = cls.build({**fields, "source_manifest": source})
        for i, group in enumerate(spec.worker_groups):
            group._origin = i
        if converted:
            note = (_crd.deprecation_warning(converted) or f"{converted} is an older RayCluster version").rstrip(".")
            warnings.warn(
                f"{note}; imported as ray.io/v1 (every {converted} field exists in v1) and exported as ray.io/v1",
                FutureWarning,
                stacklevel=2,
            )
        return spec

    # ----- output -------------------------------------------------------------------------
    def _export(self) -> dict[str, Any]:
        data = self.model_dump(exclude={"source_manifest"})
        if self.source_manifest is None:
            return _manifest.build_manifest(data)
        origins = [g._origin for g in self.worker_groups]
        return _manifest.patch_manifest(self.source_manifest, _imported_fields(self.source_manifest), data, origins)

    def check(self, *, kuberay: str = _crd.DEFAULT_KUBERAY, feature_gates: Mapping[str, bool] | None = None) -> _rules.RuleReport:
        """Run the rule set of a KubeRay version on this spec's RayCluster (errors and warnings).

        Args:
            kuberay: a supported KubeRay version (``"1.7"`` or ``"1.5"``).
            feature_gates: operator feature gates known to be on or off.
        """
        report = _rules.check_manifest(self._export(), kuberay=kuberay, feature_gates=feature_gates)
        if self.priority_class and _manifest.kueue_queue(self.namespace) is None:
            unused = _rules.Violation(
                "HP-KUEUE-NAMESPACE",
                f"$.metadata.labels['{_manifest.KUEUE_PRIORITY_LABEL}']",
                f"priority_class {self.priority_class!r} is not written: Kueue labels are set only in task-governance "
                f"namespaces hyperpod-ns-<team>, and {self.namespace!r} is not one; use such a namespace or drop priority_class",
                "warning",
            )
            report = dataclasses.replace(report, warnings=(*report.warnings, unused))
        return report

    def to_manifest(self) -> dict[str, Any]:
        """The ``ray.io/v1`` RayCluster for this spec (a fresh dict).

        Raises:
            ConfigError: the RayCluster breaks a rule (e.g. after nested edits such as two worker
                groups renamed to one name); every broken rule with its id, path and fix.
        """
        manifest = self._export()
        report = _rules.check_manifest(manifest)
        if report.errors:
            raise ConfigError("invalid ClusterSpec:\n  " + "\n  ".join(str(v) for v in report.errors))
        return manifest

    @property
    def total_gpus(self) -> int:
        """GPUs over all worker groups at ``replicas`` (the head has none)."""
        return sum(g.gpus_per_worker * g.replicas for g in self.worker_groups)
