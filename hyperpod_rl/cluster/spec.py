"""Typed description of a Ray cluster on SageMaker HyperPod (EKS + KubeRay).

`ClusterSpec` is what a user edits; `hyperpod_rl.cluster.manifest` turns it into a
``ray.io/v1`` RayCluster. Field meanings follow the KubeRay v1.7 RayCluster CRD
(``ray-operator/apis/ray/v1/raycluster_types.go``) and the HyperPod conventions in
``docs/hyperpod-setup.md``.

Example:
    >>> spec = ClusterSpec.from_preset("seed", name="maze-rl")  # doctest: +SKIP
    >>> spec.to_manifest()["spec"]["rayVersion"]  # doctest: +SKIP
    '2.57.0'
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

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

DEFAULT_RAY_VERSION = "2.57.0"
"""Ray version of the cluster image; SkyRL 0.4 pins ray==2.57.0."""

DEFAULT_IMAGE = f"rayproject/ray:{DEFAULT_RAY_VERSION}-py312-gpu"
"""Official Ray image (Python 3.12, CUDA) whose tag matches `DEFAULT_RAY_VERSION`."""

# RFC 1123 label (DNS-1035 for names KubeRay turns into Service names).
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_TAG_VERSION = re.compile(r"^(\d+\.\d+\.\d+)(?:$|[-_.])")


def ray_version_of_image(image: str) -> str | None:
    """Return the Ray version encoded in a Ray image's tag, or None when it cannot be told.

    Only repositories whose name contains ``ray`` are read (``rayproject/ray``, ``rayproject/ray-ml``,
    an ECR mirror ``.../ray``), so a custom image tagged ``1.0.0`` is not mistaken for Ray 1.0.0.
    ``rayproject/ray:2.57.0-py312-gpu`` -> ``"2.57.0"``; ``my-ecr/ray:latest`` -> None;
    ``.../maze-trainer:1.0.0`` -> None; a digest-pinned image (``...@sha256:...``) -> None.

    Args:
        image: container image reference.

    Returns:
        The ``MAJOR.MINOR.PATCH`` prefix of the tag, or None.
    """
    if "@" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last or "ray" not in last.split(":", 1)[0].lower():
        return None
    match = _TAG_VERSION.match(last.split(":", 1)[1])
    return match.group(1) if match else None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True)

    def __setattr__(self, name: str, value: Any) -> None:
        """Assignments are validated; a bad value raises `ConfigError` and leaves the old value."""
        missing = object()
        old = self.__dict__.get(name, missing)
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            if old is not missing:  # pydantic has already stored it when an after-validator fails
                self.__dict__[name] = old
            raise ConfigError(_format_validation_error(exc)) from None


class HeadSpec(_Model):
    """The Ray head pod. It runs the GCS and dashboard, never work (`num-cpus: "0"`)."""

    cpus: float = Field(default=4, gt=0)
    """CPU cores requested and limited for the head container (Kubernetes ``cpu``)."""
    memory_gib: float = Field(default=16, gt=0)
    """Memory requested and limited, in GiB."""
    instance_type: str | None = None
    """HyperPod instance type for ``node.kubernetes.io/instance-type`` (e.g. ``ml.m5.2xlarge``);
    None schedules the head on any schedulable node."""


class WorkerGroupSpec(_Model):
    """One KubeRay worker group (``spec.workerGroupSpecs[]``): identical pods of one shape."""

    name: str = "gpu-group"
    """``groupName``: a DNS-1123 label, unique within the cluster."""
    instance_type: str | None = None
    """HyperPod instance type (``ml.g5.12xlarge``, ``ml.p5.48xlarge``...); None = any node."""
    gpus_per_worker: int = Field(default=0, ge=0)
    """``nvidia.com/gpu`` per pod; 0 means a CPU-only group."""
    cpus_per_worker: float = Field(default=4, gt=0)
    """CPU cores per pod (request = limit)."""
    memory_gib: float = Field(default=16, gt=0)
    """Memory per pod in GiB (request = limit)."""
    efa_per_worker: int = Field(default=0, ge=0)
    """``vpc.amazonaws.com/efa`` interfaces per pod; 0 on instance types without EFA."""
    replicas: int = Field(default=1, ge=0)
    """Desired pods (``replicas``); must lie within ``[min_replicas, max_replicas]``."""
    min_replicas: int | None = Field(default=None, ge=0)
    """``minReplicas``; None means equal to ``replicas`` (a fixed-size group)."""
    max_replicas: int | None = Field(default=None, ge=0)
    """``maxReplicas``; None means equal to ``replicas``."""
    ray_start_params: dict[str, str] = Field(default_factory=dict)
    """Extra ``rayStartParams`` (values are strings, as in the CRD)."""

    @model_validator(mode="after")
    def _check_replicas(self) -> WorkerGroupSpec:
        if not _DNS_LABEL.match(self.name) or len(self.name) > 63:
            raise ValueError(
                f"worker group name {self.name!r} must be a lowercase DNS label (a-z, 0-9, '-', starting with a letter, at most 63 chars)"
            )
        low = self.replicas if self.min_replicas is None else self.min_replicas
        high = self.replicas if self.max_replicas is None else self.max_replicas
        if not low <= self.replicas <= high:
            raise ValueError(
                f"worker group {self.name!r}: need min_replicas <= replicas <= max_replicas, "
                f"got {low} <= {self.replicas} <= {high}; raise max_replicas or lower replicas"
            )
        return self

    @property
    def min_count(self) -> int:
        """``minReplicas`` as emitted."""
        return self.replicas if self.min_replicas is None else self.min_replicas

    @property
    def max_count(self) -> int:
        """``maxReplicas`` as emitted."""
        return self.replicas if self.max_replicas is None else self.max_replicas


class StorageSpec(_Model):
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
    # The seed topology: one CPU-only head, 3 GPU workers with 2 GPUs each.
    # ml.g5.12xlarge = 48 vCPU, 192 GiB, 4 x A10G; two workers fit one node with headroom.
    "seed": {
        "head": {"cpus": 4, "memory_gib": 16},
        "worker_groups": [
            {
                "name": "gpu-group",
                "instance_type": "ml.g5.12xlarge",
                "gpus_per_worker": 2,
                "cpus_per_worker": 20,
                "memory_gib": 80,
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


class ClusterSpec(_Model):
    """A RayCluster on HyperPod: head, worker groups, shared storage, env and auth.

    Fields not modelled here survive an import/export round trip through `unmodelled`.

    Example:
        >>> spec = ClusterSpec.from_preset("single-gpu", name="demo")  # doctest: +SKIP
        >>> spec.worker_groups[0].gpus_per_worker  # doctest: +SKIP
        1
    """

    name: str = "hyperpod-rl"
    """``metadata.name``; a DNS-1035 label of at most 50 chars (KubeRay appends suffixes)."""
    namespace: str = "default"
    """Kubernetes namespace; must hold the FSx PVC."""
    ray_version: str = DEFAULT_RAY_VERSION
    """``spec.rayVersion``; must equal the version in the image tag when the tag has one."""
    image: str = DEFAULT_IMAGE
    """Container image of every Ray container."""
    head: HeadSpec = Field(default_factory=HeadSpec)
    worker_groups: list[WorkerGroupSpec] = Field(default_factory=lambda: [WorkerGroupSpec()])
    """One or more worker groups, unique by name."""
    storage: StorageSpec | None = Field(default_factory=StorageSpec)
    """Shared FSx volume; None mounts nothing (single-node experiments only)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Plain environment variables set on every Ray container. Never put secrets here."""
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
    unmodelled: dict[str, Any] = Field(default_factory=dict, repr=False)
    """Imported manifest minus the fields modelled above; merged under the generated
    manifest so tolerations, sidecars, annotations... are kept. Empty for new specs."""

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        problems: list[str] = []
        if not _DNS_LABEL.match(self.name) or len(self.name) > 50:
            problems.append(
                f"name {self.name!r} must be a lowercase DNS-1035 label of at most 50 chars (a-z, 0-9, '-', starting with a letter)"
            )
        if not _NAMESPACE.match(self.namespace) or len(self.namespace) > 63:
            problems.append(f"namespace {self.namespace!r} must be a lowercase DNS label")
        tag_version = ray_version_of_image(self.image)
        if tag_version is not None and tag_version != self.ray_version:
            problems.append(
                f"ray_version {self.ray_version!r} does not match image {self.image!r} "
                f"(tag says {tag_version}); set ray_version={tag_version!r} or pick an image "
                f"tagged {self.ray_version}"
            )
        if not self.worker_groups:
            problems.append("worker_groups is empty; add at least one worker group")
        names = [g.name for g in self.worker_groups]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            problems.append(f"worker_groups names must be unique, repeated: {dupes}")
        if self.auth_secret_name is not None and self.auth_mode != "token":
            problems.append("auth_secret_name needs auth_mode='token'")
        if problems:
            raise ValueError("; ".join(problems))
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
                `presets()`: ``seed`` (CPU head + 3 workers x 2 GPUs on
                ml.g5.12xlarge) or ``single-gpu`` (one ml.g5.2xlarge worker).
            **overrides: `ClusterSpec` fields, e.g. ``name="maze"``, ``namespace="team-a"``.

        Returns:
            A validated `ClusterSpec`.

        Raises:
            ConfigError: unknown preset, unknown field, or an invalid value (the message
                names the field and the fix).
        """
        if name not in _PRESETS:
            raise ConfigError(f"unknown cluster preset {name!r}; choose one of {cls.presets()}")
        data: dict[str, Any] = {**_PRESETS[name], **overrides}
        return cls.parse(data)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> ClusterSpec:
        """Validate a plain dict (e.g. from JSON) into a spec.

        Raises:
            ConfigError: listing every invalid field as ``cluster.<path>: <problem>``.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_format_validation_error(exc)) from None

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> ClusterSpec:
        """Import an existing ``ray.io/v1`` RayCluster (dict from YAML) into a spec.

        Fields the spec does not model are kept in `unmodelled` and re-emitted by
        `to_manifest`.

        Raises:
            ConfigError: the manifest is not a RayCluster or its modelled fields are invalid.
        """
        from hyperpod_rl.cluster.manifest import parse_manifest

        return parse_manifest(manifest)

    # ----- output -------------------------------------------------------------------------
    def to_manifest(self) -> dict[str, Any]:
        """The ``ray.io/v1`` RayCluster for this spec (a fresh dict; pure).

        Raises:
            ConfigError: the spec became invalid through nested edits (e.g. two worker groups
                renamed to the same name); cross-field rules are checked again here.
        """
        from hyperpod_rl.cluster.manifest import build_manifest

        type(self).parse(self.model_dump())

        return build_manifest(self)

    @property
    def total_gpus(self) -> int:
        """GPUs over all worker groups at ``replicas`` (the head has none)."""
        return sum(g.gpus_per_worker * g.replicas for g in self.worker_groups)


def _format_validation_error(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"])
        where = f"cluster.{path}" if path else "cluster"
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {msg}")
    return "invalid ClusterSpec:\n  " + "\n  ".join(lines)
