"""The vendored KubeRay CRDs: exact copies, API-server defaulting, and the v1alpha1 -> v1 conversion claim."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import hyperpod_rl.cluster as pkg
from hyperpod_rl.cluster import crd
from hyperpod_rl.errors import ConfigError

CRDS = Path(pkg.__file__).parent / "crds"


@pytest.mark.parametrize(
    ("tag", "sha256"),
    [
        ("v1.7.0", "c44704442eef0c6721ad40c1d66782c8bd3fdab9d3344306a5820910a679baa1"),
        ("v1.5.1", "9b5ada939fdfd0edb5a6cf48f24a63bd792254c264967dd0930155a3941c2557"),
    ],
)
def test_vendored_crds_are_the_upstream_bytes(tag: str, sha256: str) -> None:
    path = CRDS / tag / "ray.io_rayclusters.yaml"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    manifest = (CRDS / "MANIFEST.txt").read_text()
    assert f"tag {tag}" in manifest and sha256 in manifest


def test_supported_versions_are_stated() -> None:
    assert crd.KUBERAY_VERSIONS == {"1.7": "v1.7.0", "1.5": "v1.5.1"}
    assert (crd.DEFAULT_KUBERAY, crd.OLDEST_KUBERAY) == ("1.7", "1.5")
    assert crd.served_versions("1.7") == ["ray.io/v1", "ray.io/v1alpha1"]
    with pytest.raises(ConfigError, match=r"KubeRay '1.2' is not supported; choose one of 1\.7, 1\.5$"):
        crd.crd_schema(kuberay="1.2")


@pytest.mark.parametrize("kuberay", ["1.7", "1.5"])
def test_every_v1alpha1_field_exists_in_v1(kuberay: str) -> None:
    """The claim behind importing v1alpha1 by changing only apiVersion (conversion strategy None)."""
    assert crd.crd(kuberay)["spec"].get("conversion") in (None, {"strategy": "None"})

    def paths(schema: dict[str, Any], prefix: str = "$") -> set[str]:
        out = {prefix}
        for key, sub in (schema.get("properties") or {}).items():
            out |= paths(sub, f"{prefix}.{key}")
        if isinstance(schema.get("items"), dict):
            out |= paths(schema["items"], f"{prefix}[]")
        if isinstance(schema.get("additionalProperties"), dict):
            out |= paths(schema["additionalProperties"], f"{prefix}{{}}")
        return out

    old, new = paths(crd.crd_schema("ray.io/v1alpha1", kuberay)), paths(crd.crd_schema("ray.io/v1", kuberay))
    assert old - new == set()
    assert "$.spec.authOptions" in new - old  # v1 has more; v1alpha1 has nothing v1 lacks


def test_only_kuberay_1_7_deprecates_v1alpha1() -> None:
    assert "deprecated" in (crd.deprecation_warning("ray.io/v1alpha1", "1.7") or "")
    assert crd.deprecation_warning("ray.io/v1alpha1", "1.5") is None
    assert crd.deprecation_warning("ray.io/v1", "1.7") is None


def test_defaults_are_applied_as_the_api_server_does() -> None:
    obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "d"},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "ports": [{"containerPort": 1}]}]}}},
            "workerGroupSpecs": [
                {"groupName": "a", "template": {"spec": {"containers": [{"name": "w"}]}}},
                {
                    "groupName": "b",
                    "replicas": 3,
                    "minReplicas": 1,
                    "maxReplicas": None,
                    "template": {"spec": {"containers": [{"name": "w"}]}},
                },
            ],
        },
    }
    out = crd.apply_defaults(obj)
    a, b = out["spec"]["workerGroupSpecs"]
    assert (a["replicas"], a["minReplicas"], a["maxReplicas"], a["numOfHosts"]) == (0, 0, 2147483647, 1)
    assert (b["replicas"], b["minReplicas"], b["maxReplicas"]) == (3, 1, 2147483647)  # null, not nullable -> default
    assert out["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"
    assert "maxReplicas" not in obj["spec"]["workerGroupSpecs"][0]  # the input is not changed


def test_schema_validates_the_defaulted_object() -> None:
    """A worker group without maxReplicas is valid once defaulted (the CRD lists it as required)."""
    obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "d"},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
            "workerGroupSpecs": [{"groupName": "a", "template": {"spec": {"containers": [{"name": "w"}]}}}],
        },
    }
    raw = crd.schema_errors(obj)
    assert [e.message for e in raw] == ["'maxReplicas' is a required property", "'minReplicas' is a required property"]
    assert crd.schema_errors(crd.apply_defaults(obj)) == []
