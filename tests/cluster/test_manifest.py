"""ClusterSpec -> RayCluster manifests: CRD validation, HyperPod conventions, golden files, import."""

from __future__ import annotations

import copy
import hashlib
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hyperpod_rl.cluster import ClusterSpec
from hyperpod_rl.cluster.manifest import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    HEALTH_LABEL,
    INSTANCE_TYPE_LABEL,
    crd_schema,
    validate_manifest,
)
from hyperpod_rl.cluster.spec import ray_version_of_image
from hyperpod_rl.errors import ConfigError
from tests.cluster.conftest import DATA, GOLDEN, SHARED_CRDS

# ----- varied specs ----------------------------------------------------------------------------
VARIED: dict[str, dict[str, Any]] = {
    "defaults": {},
    "seed-renamed": {"name": "maze-rl", "namespace": "team-a"},
    "no-storage": {"storage": None},
    "custom-fsx": {"storage": {"claim_name": "fsx-team", "mount_path": "/mnt/fsx", "volume_name": "shared"}},
    "auth-disabled": {"auth_mode": "disabled"},
    "auth-own-secret": {"auth_secret_name": "my-ray-token"},
    "env-and-labels": {"env": {"HF_HOME": "/fsx/hf", "RAY_OVERRIDE_JOB_RUNTIME_ENV": "1"}, "labels": {"team": "vision"}},
    "shm-limit": {"shm_size_gib": 64},
    "older-ray": {"ray_version": "2.49.1", "image": "rayproject/ray:2.49.1-py312-gpu"},
    "custom-image-no-tag-version": {"image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/maze:latest"},
    "fractional-cpu-memory": {"head": {"cpus": 1.5, "memory_gib": 6.5}},
    "two-groups": {
        "worker_groups": [
            {
                "name": "gpu",
                "instance_type": "ml.p5.48xlarge",
                "gpus_per_worker": 8,
                "efa_per_worker": 32,
                "cpus_per_worker": 180,
                "memory_gib": 1800,
                "replicas": 2,
            },
            {
                "name": "cpu",
                "cpus_per_worker": 8,
                "memory_gib": 32,
                "replicas": 0,
                "min_replicas": 0,
                "max_replicas": 10,
                "ray_start_params": {"resources": '"{\\"cpu_pool\\": 1}"'},
            },
        ]
    },
    "autoscaling-range": {"worker_groups": [{"name": "gpu", "gpus_per_worker": 1, "replicas": 1, "min_replicas": 0, "max_replicas": 8}]},
}


def _pods(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [m["spec"]["headGroupSpec"]["template"]] + [g["template"] for g in m["spec"]["workerGroupSpecs"]]


@pytest.mark.parametrize("preset", ClusterSpec.presets())
def test_presets_validate_against_shared_crd(preset: str, shared_schema: dict[str, Any]) -> None:
    manifest = ClusterSpec.from_preset(preset).to_manifest()
    validate_manifest(manifest, schema=shared_schema)  # strict: unknown fields rejected too
    validate_manifest(manifest, schema=shared_schema, strict=False)


@pytest.mark.parametrize("case", sorted(VARIED))
def test_varied_specs_validate_against_shared_crd(case: str, shared_schema: dict[str, Any]) -> None:
    spec = ClusterSpec.from_preset("seed", **VARIED[case])
    validate_manifest(spec.to_manifest(), schema=shared_schema)


def test_there_are_at_least_ten_varied_specs() -> None:
    assert len(VARIED) >= 10


def test_vendored_crd_matches_shared_copy() -> None:
    from pathlib import Path

    import hyperpod_rl.cluster as pkg

    ours = Path(pkg.__file__).parent / "crds" / "ray.io_rayclusters.yaml"
    theirs = SHARED_CRDS / "ray.io_rayclusters.yaml"
    assert hashlib.sha256(ours.read_bytes()).hexdigest() == hashlib.sha256(theirs.read_bytes()).hexdigest()
    assert "c44704442eef0c6721ad40c1d66782c8bd3fdab9d3344306a5820910a679baa1" in (ours.parent / "MANIFEST.txt").read_text()
    assert crd_schema()["properties"]["spec"]["required"] == ["headGroupSpec"]


# ----- HyperPod conventions ----------------------------------------------------------------------
def test_seed_preset_follows_hyperpod_conventions() -> None:
    spec = ClusterSpec.from_preset("seed", name="maze")
    m = spec.to_manifest()
    assert m["apiVersion"] == "ray.io/v1" and m["kind"] == "RayCluster"
    head = m["spec"]["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0" and head["rayStartParams"]["num-gpus"] == "0"
    assert head["rayStartParams"]["metrics-export-port"] == "8080"
    head_res = head["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert GPU_RESOURCE not in head_res
    assert {"name": "metrics", "containerPort": 8080} in head["template"]["spec"]["containers"][0]["ports"]
    (group,) = m["spec"]["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (3, 3, 3)
    assert group["template"]["spec"]["containers"][0]["resources"]["limits"][GPU_RESOURCE] == 2
    assert group["template"]["spec"]["nodeSelector"][INSTANCE_TYPE_LABEL] == "ml.g5.12xlarge"
    assert spec.total_gpus == 6
    for pod in _pods(m):
        assert pod["spec"]["nodeSelector"][HEALTH_LABEL] == "Schedulable"
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
        assert volumes["fsx-storage"]["persistentVolumeClaim"]["claimName"] == "fsx-claim"
        mounts = {v["mountPath"] for v in pod["spec"]["containers"][0]["volumeMounts"]}
        assert {"/dev/shm", "/fsx"} <= mounts
        assert ray_version_of_image(pod["spec"]["containers"][0]["image"]) == m["spec"]["rayVersion"] == "2.57.0"
    assert m["spec"]["authOptions"] == {"mode": "token"}


def test_efa_requested_only_where_present() -> None:
    m = ClusterSpec.from_preset("seed", **VARIED["two-groups"]).to_manifest()
    gpu, cpu = m["spec"]["workerGroupSpecs"]
    assert gpu["template"]["spec"]["containers"][0]["resources"]["requests"][EFA_RESOURCE] == 32
    assert EFA_RESOURCE not in cpu["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert GPU_RESOURCE not in cpu["template"]["spec"]["containers"][0]["resources"]["requests"]


def test_single_gpu_preset() -> None:
    spec = ClusterSpec.from_preset("single-gpu")
    assert spec.total_gpus == 1 and len(spec.worker_groups) == 1


# ----- golden files ------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ClusterSpec.presets())
def test_preset_matches_golden_yaml(preset: str) -> None:
    path = GOLDEN / f"raycluster-{preset}.yaml"
    rendered = yaml.safe_dump(ClusterSpec.from_preset(preset, name="maze").to_manifest(), sort_keys=False)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(rendered)
    assert path.exists(), f"missing {path}; run with UPDATE_GOLDEN=1 once and review the diff"
    assert yaml.safe_load(path.read_text()) == yaml.safe_load(rendered), f"{path.name} drifted; review and UPDATE_GOLDEN=1"


# ----- validation errors ------------------------------------------------------------------------
def test_validate_lists_every_violation_with_json_path() -> None:
    m = ClusterSpec.from_preset("seed").to_manifest()
    del m["spec"]["headGroupSpec"]["template"]
    m["spec"]["workerGroupSpecs"][0]["minReplicas"] = "three"
    m["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    m["spec"]["authOptions"]["mode"] = "oauth"
    with pytest.raises(ConfigError) as info:
        validate_manifest(m)
    text = str(info.value)
    assert "$.spec.headGroupSpec: 'template' is a required property" in text
    assert "$.spec.workerGroupSpecs[0].minReplicas: 'three' is not of type 'integer'" in text
    assert "$.spec.workerGroupSpecs[0].template.spec.containers[0]" in text and "imagePullPolicyy" in text
    assert "$.spec.authOptions.mode: 'oauth' is not one of ['disabled', 'token']" in text


def test_unknown_field_passes_only_without_strict() -> None:
    m = ClusterSpec.from_preset("seed").to_manifest()
    m["spec"]["headGroupSpec"]["rayStartParam"] = {"num-cpus": "0"}
    validate_manifest(m, strict=False)
    with pytest.raises(ConfigError, match=r"\$\.spec\.headGroupSpec: Additional properties .*rayStartParam"):
        validate_manifest(m)


def test_ray_version_must_match_image_in_manifest() -> None:
    m = ClusterSpec.from_preset("seed").to_manifest()
    m["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.56.0-gpu"
    with pytest.raises(ConfigError, match=r"workerGroupSpecs\[0\].*2\.56\.0 does not match spec.rayVersion 2\.57\.0"):
        validate_manifest(m)


def test_v1alpha1_rejected_by_validation() -> None:
    m = ClusterSpec.from_preset("seed").to_manifest()
    m["apiVersion"] = "ray.io/v1alpha1"
    with pytest.raises(ConfigError, match=r"\$\.apiVersion: must be 'ray.io/v1'"):
        validate_manifest(m)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"image": "rayproject/ray:2.56.0-py312-gpu"}, r"ray_version '2\.57\.0' does not match image .*set ray_version='2\.56\.0'"),
        ({"name": "Maze_RL"}, r"name 'Maze_RL' must be a lowercase DNS-1035 label"),
        (
            {"worker_groups": [{"name": "g", "replicas": 5, "max_replicas": 2}]},
            r"min_replicas <= replicas <= max_replicas, got 5 <= 5 <= 2",
        ),
        ({"worker_groups": [{"name": "g"}, {"name": "g"}]}, r"names must be unique, repeated: \['g'\]"),
        ({"worker_groups": []}, r"worker_groups is empty"),
        ({"worker_groups": [{"name": "g", "gpus_per_worker": -1}]}, r"cluster\.worker_groups\.0\.gpus_per_worker"),
        ({"storage": {"mount_path": "fsx"}}, r"mount_path must be absolute"),
        ({"auth_mode": "disabled", "auth_secret_name": "s"}, r"auth_secret_name needs auth_mode='token'"),
        ({"head_cpus": 4}, r"cluster\.head_cpus: Extra inputs are not permitted"),
    ],
)
def test_bad_spec_names_field_and_fix(overrides: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ClusterSpec.from_preset("seed", **overrides)


def test_unknown_preset_lists_choices() -> None:
    with pytest.raises(ConfigError, match=r"unknown cluster preset 'huge'; choose one of \['seed', 'single-gpu'\]"):
        ClusterSpec.from_preset("huge")


# ----- import / export -----------------------------------------------------------------------------
def _existing() -> dict[str, Any]:
    return yaml.safe_load((DATA / "existing_raycluster.yaml").read_text())


def test_import_reads_modelled_fields() -> None:
    spec = ClusterSpec.from_manifest(_existing())
    assert (spec.name, spec.namespace, spec.ray_version) == ("team-vlm", "ml-team", "2.57.0")
    assert spec.head.instance_type == "ml.m5.2xlarge" and spec.head.cpus == 4 and spec.head.memory_gib == 16
    (g,) = spec.worker_groups
    assert (g.name, g.instance_type, g.gpus_per_worker, g.efa_per_worker) == ("gpu", "ml.p5.48xlarge", 8, 32)
    assert (g.replicas, g.min_count, g.max_count, g.memory_gib) == (2, 1, 4, 900)
    assert spec.storage is not None and (spec.storage.claim_name, spec.storage.mount_path) == ("fsx-claim", "/fsx")
    assert spec.env == {"HF_HOME": "/fsx/hf"}
    assert spec.labels == {"team": "vision", "cost-center": "4711"}
    assert spec.auth_mode == "token" and spec.shm_size_gib == 32
    assert "unmodelled" not in repr(spec)


def test_import_export_keeps_unmodelled_fields(shared_schema: dict[str, Any]) -> None:
    original = _existing()
    spec = ClusterSpec.from_manifest(original)
    spec.worker_groups[0].replicas = 3  # edit something modelled
    spec.image = "rayproject/ray:2.57.0-py312-cu128"
    out = spec.to_manifest()
    validate_manifest(out, schema=shared_schema)
    assert out["metadata"]["annotations"] == {"owner": "alice@example.com"}  # server/kubectl fields dropped
    assert "uid" not in out["metadata"] and "status" not in out
    assert out["spec"]["autoscalerOptions"] == original["spec"]["autoscalerOptions"]
    assert out["spec"]["enableInTreeAutoscaling"] is True
    assert out["spec"]["headServiceAnnotations"] == original["spec"]["headServiceAnnotations"]
    head_pod = out["spec"]["headGroupSpec"]["template"]
    assert head_pod["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    assert head_pod["spec"]["serviceAccountName"] == "ray-head-sa"
    assert head_pod["spec"]["tolerations"] == original["spec"]["headGroupSpec"]["template"]["spec"]["tolerations"]
    names = [c["name"] for c in head_pod["spec"]["containers"]]
    assert names == ["ray-head", "fluent-bit"]  # Ray container stays at index 0, sidecar kept
    ray_head = head_pod["spec"]["containers"][0]
    assert ray_head["image"] == "rayproject/ray:2.57.0-py312-cu128"
    assert ray_head["lifecycle"]["preStop"]["exec"]["command"][-1] == "ray stop"
    assert {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}} in ray_head["env"]
    assert {m["mountPath"] for m in ray_head["volumeMounts"]} == {"/dev/shm", "/fsx", "/tmp/ray"}
    assert {v["name"] for v in head_pod["spec"]["volumes"]} == {"dshm", "fsx", "ray-logs"}
    assert out["spec"]["headGroupSpec"]["rayStartParams"]["object-store-memory"] == "4000000000"
    assert out["spec"]["headGroupSpec"]["serviceType"] == "ClusterIP"
    group = out["spec"]["workerGroupSpecs"][0]
    assert group["replicas"] == 3 and group["minReplicas"] == 1 and group["maxReplicas"] == 4
    assert group["template"]["spec"]["affinity"] == original["spec"]["workerGroupSpecs"][0]["template"]["spec"]["affinity"]
    worker_env = group["template"]["spec"]["containers"][0]["env"]
    assert {"name": "FI_PROVIDER", "value": "efa"} in worker_env and {"name": "HF_HOME", "value": "/fsx/hf"} in worker_env


def test_import_is_stable_under_repeated_round_trips() -> None:
    once = ClusterSpec.from_manifest(_existing()).to_manifest()
    twice = ClusterSpec.from_manifest(copy.deepcopy(once)).to_manifest()
    assert once == twice


def test_removing_modelled_things_after_import_removes_them() -> None:
    spec = ClusterSpec.from_manifest(_existing())
    spec.env = {}
    spec.storage = None
    out = spec.to_manifest()
    ray_head = out["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert [e["name"] for e in ray_head["env"]] == ["WANDB_API_KEY"]
    assert "fsx" not in {v["name"] for v in out["spec"]["headGroupSpec"]["template"]["spec"]["volumes"]}


def test_spec_owns_worker_group_list() -> None:
    spec = ClusterSpec.from_manifest(_existing())
    spec.worker_groups[0].name = "gpu-big"
    out = spec.to_manifest()
    assert [g["groupName"] for g in out["spec"]["workerGroupSpecs"]] == ["gpu-big"]


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda m: m.update(apiVersion="ray.io/v1alpha1"), r"change apiVersion to ray.io/v1"),
        (lambda m: m.update(kind="RayJob"), r"kind must be 'RayCluster', got 'RayJob'"),
        (lambda m: m["spec"].pop("headGroupSpec"), r"spec.headGroupSpec.template is required"),
        (
            lambda m: m["spec"]["workerGroupSpecs"][0]["template"]["spec"].update(containers=[]),
            r"spec.workerGroupSpecs\[0\].template.spec.containers is empty",
        ),
    ],
)
def test_import_rejects_non_rayclusters(mutate: Any, match: str) -> None:
    m = _existing()
    mutate(m)
    with pytest.raises(ConfigError, match=match):
        ClusterSpec.from_manifest(m)


def test_preset_round_trips_to_equal_spec() -> None:
    spec = ClusterSpec.from_preset("seed", name="maze", env={"A": "1"}, labels={"team": "x"})
    back = ClusterSpec.from_manifest(spec.to_manifest())
    assert back.model_dump(exclude={"unmodelled"}) == spec.model_dump(exclude={"unmodelled"})
    assert back.to_manifest() == spec.to_manifest()


_groups = st.lists(
    st.builds(
        dict,
        name=st.sampled_from(["gpu", "cpu", "big", "small"]),
        gpus_per_worker=st.integers(0, 8),
        efa_per_worker=st.integers(0, 4),
        cpus_per_worker=st.sampled_from([1, 2.5, 16, 96]),
        memory_gib=st.sampled_from([4, 7.5, 64, 512]),
        replicas=st.integers(0, 4),
        instance_type=st.sampled_from([None, "ml.g5.12xlarge", "ml.p5.48xlarge"]),
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda g: g["name"],
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=_groups, storage=st.booleans(), auth=st.sampled_from(["token", "disabled"]))
def test_any_valid_spec_validates_and_round_trips(
    groups: list[dict[str, Any]], storage: bool, auth: str, shared_schema: dict[str, Any]
) -> None:
    spec = ClusterSpec.parse({"name": "prop", "worker_groups": groups, "auth_mode": auth, **({} if storage else {"storage": None})})
    manifest = spec.to_manifest()
    validate_manifest(manifest, schema=shared_schema)
    back = ClusterSpec.from_manifest(manifest)
    assert back.model_dump(exclude={"unmodelled"}) == spec.model_dump(exclude={"unmodelled"})


def test_assignment_is_validated_with_config_error() -> None:
    spec = ClusterSpec.from_preset("seed")
    with pytest.raises(ConfigError, match=r"ray_version '2\.57\.0' does not match image"):
        spec.image = "rayproject/ray:2.56.0-py312-gpu"
    with pytest.raises(ConfigError, match=r"cluster\.replicas: Input should be greater than or equal to 0"):
        spec.worker_groups[0].replicas = -1
    assert spec.image == "rayproject/ray:2.57.0-py312-gpu" and spec.worker_groups[0].replicas == 3


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("rayproject/ray:2.57.0-py312-gpu", "2.57.0"),
        ("rayproject/ray:2.57.0", "2.57.0"),
        ("rayproject/ray-ml:2.49.1-py312-cu128", "2.49.1"),
        ("123456789012.dkr.ecr.us-west-2.amazonaws.com/ray:2.57.0-py312-gpu", "2.57.0"),
        ("rayproject/ray:latest", None),
        ("rayproject/ray@sha256:" + "a" * 64, None),
        ("123456789012.dkr.ecr.us-west-2.amazonaws.com/maze-trainer:1.0.0", None),
        ("localhost:5000/ray:2.56.0", "2.56.0"),
    ],
)
def test_ray_version_of_image(image: str, version: str | None) -> None:
    assert ray_version_of_image(image) == version


def test_custom_semver_image_is_not_taken_for_a_ray_version() -> None:
    spec = ClusterSpec.from_preset("seed", image="123456789012.dkr.ecr.us-west-2.amazonaws.com/maze-trainer:1.0.0")
    assert spec.to_manifest()["spec"]["rayVersion"] == "2.57.0"


def test_nested_edits_are_rechecked_on_export() -> None:
    spec = ClusterSpec.from_preset("seed", **VARIED["two-groups"])
    spec.worker_groups[1].name = "gpu"  # valid for the group alone, a duplicate for the cluster
    with pytest.raises(ConfigError, match=r"names must be unique, repeated: \['gpu'\]"):
        spec.to_manifest()


def test_import_keeps_unmodelled_auth_options() -> None:
    m = _existing()
    m["spec"]["authOptions"] = {"mode": "token", "secretName": "team-token", "enableK8sTokenAuth": False}
    spec = ClusterSpec.from_manifest(m)
    assert (spec.auth_mode, spec.auth_secret_name) == ("token", "team-token")
    spec.auth_secret_name = None
    assert spec.to_manifest()["spec"]["authOptions"] == {"mode": "token", "enableK8sTokenAuth": False}
