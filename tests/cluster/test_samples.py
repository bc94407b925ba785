"""KubeRay v1.7.0's own RayCluster samples: lossless import, export that changes only what changed."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

import pytest

from hyperpod_rl.cluster import ClusterSpec, check_manifest
from hyperpod_rl.cluster.manifest import parse_quantity
from hyperpod_rl.errors import ConfigError
from tests.cluster.conftest import SAMPLES, sample, sample_names

NAMES = sample_names()

# Samples the default KubeRay 1.7 operator refuses unless a feature gate is on: they import (the
# gate is the operator's setting, not the object's), and the rule set warns with the rule named.
NEEDS_GATE = {
    "ray-cluster.embedded-gcs-ft.yaml": ("KR-FT-BACKEND", "GCSFaultToleranceEmbeddedStorage"),
    "ray-cluster.historyserver.yaml": ("KR-HISTORY-SERVER", "RayClusterHistoryServer"),
    "ray-cluster.mtls.yaml": ("KR-TLS", "RayClusterMTLS"),
    "ray-cluster.network-policy-deny-all.yaml": ("KR-NETWORK-POLICY", "RayClusterNetworkPolicy"),
}
# Samples refused on import, with the rule that refuses them: none of KubeRay's v1.7.0 samples.
REFUSED: dict[str, str] = {}


def diff(a: Any, b: Any, path: str = "$") -> set[str]:
    """JSON paths where two objects differ (a list of another length differs as a whole)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: set[str] = set()
        for key in a.keys() | b.keys():
            if key not in a or key not in b:
                out.add(f"{path}.{key}")
            else:
                out |= diff(a[key], b[key], f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return set().union(*(diff(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True))))
    return set() if a == b else {path}


def test_all_46_samples_are_vendored_unchanged() -> None:
    listed = dict(
        (name, digest) for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", (SAMPLES.parent / "SOURCE.md").read_text(), flags=re.M)
    )
    files = sorted(p.name for p in SAMPLES.glob("*.yaml"))
    assert len(files) == len(listed) == 46 == len(NAMES)
    for name in files:
        assert hashlib.sha256((SAMPLES / name).read_bytes()).hexdigest() == listed[name], name
    assert "Apache License" in (SAMPLES.parent / "LICENSE").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_sample_round_trips_to_an_identical_object(name: str) -> None:
    original = sample(name)
    if name in REFUSED:
        with pytest.raises(ConfigError, match=rf"\[{REFUSED[name]}\]"):
            ClusterSpec.from_manifest(original)
        return
    spec = ClusterSpec.from_manifest(original)
    assert spec.to_manifest() == original  # dict equality: deep, key order ignored
    again = ClusterSpec.from_manifest(spec.to_manifest())
    assert again.model_dump() == spec.model_dump()


@pytest.mark.parametrize("name", NAMES)
def test_sample_is_read_per_group(name: str) -> None:
    original = sample(name)
    spec = ClusterSpec.from_manifest(original)
    body = original["spec"]
    head = body["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert (spec.name, spec.ray_version, spec.image) == (original["metadata"]["name"], body.get("rayVersion"), head.get("image"))
    limits = head["resources"].get("limits") or head["resources"]["requests"]
    assert spec.head.cpus == float(parse_quantity(limits["cpu"]))
    assert spec.head.memory_gib == pytest.approx(float(parse_quantity(limits["memory"])) / 2**30)
    assert len(spec.worker_groups) == len(body.get("workerGroupSpecs") or [])
    for group, raw in zip(spec.worker_groups, body.get("workerGroupSpecs") or [], strict=True):
        container = raw["template"]["spec"]["containers"][0]
        assert group.name == raw["groupName"]
        assert (group.image or spec.image) == container.get("image")
        res = container.get("resources") or {}
        gpus = (res.get("limits") or {}).get("nvidia.com/gpu") or (res.get("requests") or {}).get("nvidia.com/gpu") or 0
        assert group.gpus_per_worker == int(gpus)
        assert group.replicas == raw.get("replicas", 0)  # CRD default 0
        assert group.min_count == raw.get("minReplicas", 0)  # CRD default 0
        assert group.max_count == raw.get("maxReplicas", 2147483647)  # CRD default, not `replicas`


@pytest.mark.parametrize("name", sorted(NEEDS_GATE))
def test_samples_needing_a_feature_gate_say_which(name: str) -> None:
    rule, gate = NEEDS_GATE[name]
    report = check_manifest(sample(name))
    assert report.ok and rule in {v.rule for v in report.warnings}
    assert gate in " ".join(v.message for v in report.warnings)
    assert check_manifest(sample(name), feature_gates={gate: True}).warnings == ()
    assert rule in {v.rule for v in check_manifest(sample(name), feature_gates={gate: False}).errors}


def test_other_samples_give_no_warnings() -> None:
    noisy = {n for n in NAMES if check_manifest(sample(n)).warnings}
    assert noisy == set(NEEDS_GATE)


# ----- edits change only their fields ---------------------------------------------------------------
HEAD = r"\$\.spec\.headGroupSpec\.template\.spec\.containers\[0\]"
GROUP = r"\$\.spec\.workerGroupSpecs\[\d+\]"
RAY_CONTAINER = rf"({HEAD}|{GROUP}\.template\.spec\.containers\[0\])"


def _edit_replicas(spec: ClusterSpec) -> str:
    if not spec.worker_groups:
        return r"(?!)"
    g = spec.worker_groups[0]
    fixed = g.min_replicas is None  # a fixed-size group: min and max follow replicas
    g.replicas = g.replicas + 1 if fixed or g.replicas < g.max_count else g.replicas - 1
    return r"\$\.spec\.workerGroupSpecs\[0\]\.(replicas|minReplicas|maxReplicas)"


def _edit_env(spec: ClusterSpec) -> str:
    spec.env = {**spec.env, "HYPERPOD_RL_TEST": "1"}
    return rf"{RAY_CONTAINER}\.env(\[\d+\])?"


def _edit_head_cpus(spec: ClusterSpec) -> str:
    spec.head.cpus = spec.head.cpus + 1
    return rf"{HEAD}\.resources\.(limits|requests)\.cpu"


def _edit_name(spec: ClusterSpec) -> str:
    spec.name = "renamed"
    return r"\$\.metadata\.name"


def _edit_labels(spec: ClusterSpec) -> str:
    spec.labels = {**spec.labels, "team": "vision"}
    return rf"\$\.metadata\.labels(\.team)?|\$\.spec\.headGroupSpec\.template\.metadata(\.labels(\.team)?)?|{GROUP}\.template\.metadata(\.labels(\.team)?)?"


EDITS: dict[str, Callable[[ClusterSpec], str]] = {
    "replicas": _edit_replicas,
    "env": _edit_env,
    "head-cpus": _edit_head_cpus,
    "name": _edit_name,
    "labels": _edit_labels,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("name", NAMES)
def test_an_edit_changes_only_its_fields(name: str, edit: str) -> None:
    original = sample(name)
    spec = ClusterSpec.from_manifest(original)
    allowed = re.compile(EDITS[edit](spec))
    out = spec.to_manifest()
    changed = diff(original, out)
    assert all(allowed.fullmatch(p) for p in changed), sorted(changed)
    if edit != "replicas" or spec.worker_groups:
        assert changed, "the edit must show in the export"


# ----- the failures seen in the field (issue 15) ---------------------------------------------------------
def test_a_gpu_group_keeps_its_own_image() -> None:
    spec = ClusterSpec.from_manifest(sample("ray-cluster-label-selector.yaml"))
    assert spec.image == "rayproject/ray:nightly"
    by_name = {g.name: g for g in spec.worker_groups}
    assert by_name["accelerator-group"].image == "rayproject/ray:nightly-gpu" and by_name["large-cpu-group"].image is None
    spec.head.cpus = 2
    spec.image = "rayproject/ray:2.57.0-py312"
    images = {g["groupName"]: g["template"]["spec"]["containers"][0]["image"] for g in spec.to_manifest()["spec"]["workerGroupSpecs"]}
    assert images == {
        "large-cpu-group": "rayproject/ray:2.57.0-py312",
        "accelerator-group": "rayproject/ray:nightly-gpu",
        "spot-group": "rayproject/ray:2.57.0-py312",
    }


def test_head_requests_below_limits_stay() -> None:
    spec = ClusterSpec.from_manifest(sample("ray-cluster.complete.yaml"))
    assert spec.head.memory_gib == 5
    spec.worker_groups[0].replicas = 2
    resources = spec.to_manifest()["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "1", "memory": "5Gi"}, "requests": {"cpu": "500m", "memory": "2Gi"}}
    spec.head.memory_gib = 6  # a new limit keeps the deliberately lower request
    resources = spec.to_manifest()["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "1", "memory": "6Gi"}, "requests": {"cpu": "500m", "memory": "2Gi"}}
    spec.head.memory_gib = 1.5  # below the request: the request follows, or the pod would be invalid
    resources = spec.to_manifest()["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["limits"]["memory"] == resources["requests"]["memory"] == "1536Mi"


def test_quantities_ports_and_container_names_stay_as_written() -> None:
    original = sample("ray-cluster.tpu-v4-singlehost.yaml")
    spec = ClusterSpec.from_manifest(original)
    assert spec.head.memory_gib == pytest.approx(40e9 / 2**30)
    spec.worker_groups[0].replicas = spec.worker_groups[0].replicas  # touch nothing
    spec.env = {"X": "1"}
    out = spec.to_manifest()
    head = out["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["resources"]["limits"]["memory"] == "40G"
    assert head["name"] == original["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"]
    assert head["ports"] == original["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]


@pytest.mark.parametrize("name", [n for n in NAMES if not sample(n)["spec"].get("workerGroupSpecs")])
def test_head_only_samples_import(name: str) -> None:
    spec = ClusterSpec.from_manifest(sample(name))
    assert spec.worker_groups == [] and spec.total_gpus == 0
    assert spec.to_manifest()["spec"].get("workerGroupSpecs", "absent") == sample(name)["spec"].get(
        "workerGroupSpecs", "absent"
    )  # [] stays []


def test_head_only_sample_count() -> None:
    assert len([n for n in NAMES if not sample(n)["spec"].get("workerGroupSpecs")]) == 9


def test_head_only_env_stays_on_the_head() -> None:
    original = sample("ray-cluster.embed-grafana.yaml")
    spec = ClusterSpec.from_manifest(original)
    assert "RAY_GRAFANA_HOST" not in spec.env
    spec.env = {**spec.env, "HF_HOME": "/fsx/hf"}
    out = spec.to_manifest()
    head_env = {e["name"] for e in out["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]}
    worker_env = {e["name"] for e in out["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["env"]}
    assert {"RAY_GRAFANA_HOST", "HF_HOME"} <= head_env
    assert "RAY_GRAFANA_HOST" not in worker_env and "HF_HOME" in worker_env


def test_absent_max_replicas_is_kuberays_default_not_replicas() -> None:
    m = sample("ray-cluster.sample.yaml")
    m["spec"]["enableInTreeAutoscaling"] = True
    group = m["spec"]["workerGroupSpecs"][0]
    group.pop("maxReplicas")
    group.update(minReplicas=0, replicas=1)
    spec = ClusterSpec.from_manifest(m)
    assert spec.worker_groups[0].max_count == 2147483647
    spec.worker_groups[0].replicas = 3  # the autoscaler's room stays
    out = spec.to_manifest()["spec"]["workerGroupSpecs"][0]
    assert out["replicas"] == 3 and "maxReplicas" not in out and out["minReplicas"] == 0


def test_renamed_group_keeps_its_pod_template() -> None:
    spec = ClusterSpec.from_manifest(sample("ray-cluster.complete.yaml"))
    before = spec.to_manifest()["spec"]["workerGroupSpecs"][0]
    spec.worker_groups[0].name = "cpu-workers"
    after = spec.to_manifest()["spec"]["workerGroupSpecs"][0]
    assert diff(before, after) == {"$.groupName"}


def test_added_and_removed_groups() -> None:
    spec = ClusterSpec.from_manifest(sample("ray-cluster.complete.yaml"))
    spec.worker_groups = [*spec.worker_groups, {"name": "gpu", "gpus_per_worker": 1, "replicas": 1}]  # type: ignore[list-item]
    out = spec.to_manifest()
    assert [g["groupName"] for g in out["spec"]["workerGroupSpecs"]] == ["small-group", "gpu"]
    new = out["spec"]["workerGroupSpecs"][1]["template"]["spec"]
    assert new["containers"][0]["image"] == spec.image and new["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    spec.worker_groups = spec.worker_groups[1:]
    assert [g["groupName"] for g in spec.to_manifest()["spec"]["workerGroupSpecs"]] == ["gpu"]
