"""The vendored KubeRay RayCluster CRDs: schema per KubeRay version, API-server defaulting, schema errors.

The CRDs are package data (``hyperpod_rl/cluster/crds/<tag>/ray.io_rayclusters.yaml``, copied from
ray-project/kuberay ``ray-operator/config/crd/bases``; tags and sha256 sums in ``crds/MANIFEST.txt``).
Two KubeRay versions are supported: **1.7** (v1.7.0, the default) and **1.5** (v1.5.1, the oldest:
the first release with ``spec.authOptions``, which every RayCluster built here sets).

What the Kubernetes API server does with a custom resource before the operator sees it, and what
is reproduced here:

1. **Defaulting** (`apply_defaults`): every ``default:`` of the structural schema is filled in where
   the field is absent (or ``null`` and not ``nullable``), e.g. a worker group's ``minReplicas: 0``,
   ``maxReplicas: 2147483647``, ``replicas: 0``, ``numOfHosts: 1``. Implemented with jsonschema's
   documented validator extension (a ``properties`` hook), so the walk is jsonschema's own.
2. **Validation** (`schema_errors`): the ``openAPIV3Schema`` of the requested version; with
   ``strict=True`` unknown fields are errors too (the API server's ``fieldValidation=Strict``).
   The CRD's CEL rule on ``spec.managedBy`` (``x-kubernetes-validations``) lives in
   ``cluster.rules`` with the operator's rules.

Reads package data (no network); nothing else.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from hyperpod_rl.base import listed
from hyperpod_rl.errors import ConfigError

__all__ = [
    "DEFAULT_KUBERAY",
    "KUBERAY_VERSIONS",
    "OLDEST_KUBERAY",
    "SchemaError",
    "apply_defaults",
    "crd",
    "crd_schema",
    "deprecation_warning",
    "kuberay_tag",
    "schema_errors",
    "served_versions",
]

KUBERAY_VERSIONS: dict[str, str] = {"1.7": "v1.7.0", "1.5": "v1.5.1"}
"""Supported KubeRay minor version -> the release tag whose CRD is vendored."""
DEFAULT_KUBERAY = "1.7"
"""The KubeRay version whose rules apply unless another is asked for."""
OLDEST_KUBERAY = "1.5"
"""The oldest supported KubeRay (first with ``spec.authOptions``)."""


def kuberay_tag(kuberay: str) -> str:
    """The vendored release tag of a supported KubeRay version (``"1.7"`` -> ``"v1.7.0"``).

    Raises:
        ConfigError: not a supported version; the message lists the supported ones.
    """
    if kuberay not in KUBERAY_VERSIONS:
        raise ConfigError(f"KubeRay {kuberay!r} is not supported; choose one of {listed(sorted(KUBERAY_VERSIONS, reverse=True))}")
    return KUBERAY_VERSIONS[kuberay]


@functools.cache
def crd(kuberay: str = DEFAULT_KUBERAY) -> dict[str, Any]:
    """The vendored RayCluster ``CustomResourceDefinition`` of a KubeRay version (parsed YAML)."""
    text = resources.files("hyperpod_rl.cluster").joinpath("crds", kuberay_tag(kuberay), "ray.io_rayclusters.yaml").read_text()
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _version_entry(api_version: str, kuberay: str) -> dict[str, Any]:
    version = api_version.removeprefix("ray.io/")
    for entry in crd(kuberay)["spec"]["versions"]:
        if entry["name"] == version and entry.get("served", False):
            return entry
    raise ConfigError(f"the KubeRay {kuberay} CRD serves no RayCluster version {api_version!r}; use one of {served_versions(kuberay)}")


def served_versions(kuberay: str = DEFAULT_KUBERAY) -> list[str]:
    """``apiVersion`` values the CRD serves, storage version first (``["ray.io/v1", "ray.io/v1alpha1"]``)."""
    entries = sorted(crd(kuberay)["spec"]["versions"], key=lambda e: not e.get("storage", False))
    return [f"ray.io/{e['name']}" for e in entries if e.get("served", False)]


def crd_schema(api_version: str = "ray.io/v1", kuberay: str = DEFAULT_KUBERAY) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one served version (``"ray.io/v1"`` or ``"ray.io/v1alpha1"``).

    Raises:
        ConfigError: the version is not served by that CRD, or the KubeRay version is unsupported.
    """
    return _version_entry(api_version, kuberay)["schema"]["openAPIV3Schema"]


def deprecation_warning(api_version: str, kuberay: str = DEFAULT_KUBERAY) -> str | None:
    """The warning the API server returns for a deprecated served version (the CRD's text), else None."""
    entry = _version_entry(api_version, kuberay)
    if not entry.get("deprecated"):
        return None
    return entry.get("deprecationWarning") or f"{api_version} RayCluster is deprecated"


# ----- defaulting -------------------------------------------------------------------------------
def _set_defaults(validator: Any, properties: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    if isinstance(instance, dict):
        for name, sub in properties.items():
            if "default" not in sub:
                continue
            if name not in instance or (instance[name] is None and not sub.get("nullable", False)):
                instance[name] = copy.deepcopy(sub["default"])
    from jsonschema import validators

    yield from validators.Draft7Validator.VALIDATORS["properties"](validator, properties, instance, schema)


# jsonschema is imported where a manifest is defaulted or validated: its import (the format
# checkers' grammars) takes seconds, and the CLI imports this module for its help text.
@functools.cache
def _defaulter(api_version: str, kuberay: str) -> Any:
    from jsonschema import validators

    defaulting = validators.extend(validators.Draft7Validator, {"properties": _set_defaults})
    return defaulting(crd_schema(api_version, kuberay))


def apply_defaults(obj: dict[str, Any], *, api_version: str = "ray.io/v1", kuberay: str = DEFAULT_KUBERAY) -> dict[str, Any]:
    """A copy of ``obj`` with the CRD's ``default:`` values filled in, as the API server does.

    Defaults are applied wherever the enclosing object exists (a defaulted object is itself
    defaulted). Values that are present are never changed. Invalid shapes are left as they are
    (`schema_errors` reports them).

    Args:
        obj: a RayCluster dict.
        api_version: the schema to take defaults from.
        kuberay: supported KubeRay version (`KUBERAY_VERSIONS`).

    Returns:
        A deep copy; ``obj`` is not modified.
    """
    out = copy.deepcopy(obj)
    for _ in _defaulter(api_version, kuberay).iter_errors(out):
        pass  # walking the schema is what applies the defaults; errors are schema_errors' job
    return out


# ----- validation -------------------------------------------------------------------------------
def _strictify(schema: Any) -> Any:
    """Copy of a structural schema for jsonschema that rejects unknown fields and honours ``nullable``.

    The API server drops unknown fields (or rejects them with ``fieldValidation=Strict``); jsonschema
    accepts them silently, so ``additionalProperties: false`` is added to every object that lists
    ``properties`` and does not preserve unknown fields.
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
def _validator(api_version: str, kuberay: str, strict: bool) -> Any:
    """A ``jsonschema.Draft7Validator`` of one served version's schema."""
    import jsonschema

    schema = crd_schema(api_version, kuberay)
    return jsonschema.Draft7Validator(_strictify(schema) if strict else schema)


@dataclass(frozen=True)
class SchemaError:
    """One schema violation: JSON path, jsonschema's message, and whether it is an unknown field."""

    path: str
    message: str
    unknown_field: bool


def schema_errors(obj: Any, *, api_version: str = "ray.io/v1", kuberay: str = DEFAULT_KUBERAY, strict: bool = True) -> list[SchemaError]:
    """Every violation of the CRD schema, sorted by path (``obj`` should be defaulted first).

    Args:
        obj: the RayCluster dict (after `apply_defaults`, as the API server validates it).
        api_version: which served version's schema to use.
        kuberay: supported KubeRay version.
        strict: also report fields the schema does not define.
    """
    found = [
        SchemaError(e.json_path, e.message, e.validator == "additionalProperties")
        for e in _validator(api_version, kuberay, strict).iter_errors(obj)
    ]
    return sorted(found, key=lambda e: (e.path, e.message))
