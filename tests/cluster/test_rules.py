"""One rule set: each broken rule gives the same id from ClusterSpec, validate_manifest and `cluster validate`."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import hyperpod_rl.cli.cluster as cli
from hyperpod_rl.cluster import ClusterSpec, check_manifest, validate_manifest
from hyperpod_rl.cluster.rules import RULES, rules_for
from hyperpod_rl.errors import ConfigError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cluster.md"
runner = CliRunner()
Mutation = Callable[[dict[str, Any]], Any]


def base() -> dict[str, Any]:
    return ClusterSpec.from_preset("seed", name="maze").to_manifest()


def head(m: dict[str, Any]) -> dict[str, Any]:
    return m["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]


def group(m: dict[str, Any]) -> dict[str, Any]:
    return m["spec"]["workerGroupSpecs"][0]


def head_env(name: str, value: str) -> Mutation:
    return lambda m: head(m).setdefault("env", []).append({"name": name, "value": value})


def spec_update(**values: Any) -> Mutation:
    return lambda m: m["spec"].update(values)


def group_update(**values: Any) -> Mutation:
    return lambda m: group(m).update(values)


def both(*mutations: Mutation) -> Mutation:
    return lambda m: [f(m) for f in mutations]


# (rule id, change to a valid RayCluster, the same input as ClusterSpec fields or None when the spec
# cannot express it: then ClusterSpec.from_manifest of the changed object is checked)
CASES: list[tuple[str, Mutation, dict[str, Any] | None]] = [
    # the inputs of issue 15
    ("KR-REDIS-ADDRESS-WITHOUT-FT", head_env("RAY_REDIS_ADDRESS", "redis:6379"), {"env": {"RAY_REDIS_ADDRESS": "redis:6379"}}),
    ("KR-REDIS-USERNAME", head_env("REDIS_USERNAME", "ray"), {"env": {"REDIS_USERNAME": "ray"}}),
    ("KR-AUTOSCALER-V2-ENV", head_env("RAY_enable_autoscaler_v2", "1"), {"env": {"RAY_enable_autoscaler_v2": "1"}}),
    (
        "KR-FT-ANNOTATION",
        both(
            lambda m: m["metadata"].update(annotations={"ray.io/ft-enabled": "true"}),
            spec_update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
        ),
        None,
    ),
    (
        "KR-AUTH-RAY-VERSION",
        both(
            spec_update(rayVersion="2.46.0"),
            lambda m: [c.update(image="rayproject/ray:2.46.0") for c in (head(m), group(m)["template"]["spec"]["containers"][0])],
        ),
        {"ray_version": "2.46.0", "image": "rayproject/ray:2.46.0"},
    ),
    ("KR-NAME-DNS1035", lambda m: m["metadata"].update(name="Maze_RL"), {"name": "Maze_RL"}),
    ("KR-NAME-LENGTH", lambda m: m["metadata"].update(name="m" * 60), {"name": "m" * 60}),
    ("K8S-GROUP-NAME", group_update(groupName="gpu group"), {"worker_groups": [{"name": "gpu group"}]}),
    (
        "KR-GROUP-REPLICAS",
        group_update(minReplicas=4, maxReplicas=2, replicas=3),
        {"worker_groups": [{"name": "g", "replicas": 3, "min_replicas": 4, "max_replicas": 2}]},
    ),
    # one more per rule
    (
        "KR-GROUP-UNIQUE",
        lambda m: m["spec"]["workerGroupSpecs"].append(copy.deepcopy(group(m))),
        {"worker_groups": [{"name": "g"}, {"name": "g"}]},
    ),
    (
        "KR-GROUP-RESOURCES",
        both(group_update(resources={"CPU": "4"}), lambda m: group(m)["rayStartParams"].update({"num-cpus": "4"})),
        None,
    ),
    (
        "KR-GROUP-LABELS",
        lambda m: group(m)["rayStartParams"].update(labels="zone=a"),
        {"worker_groups": [{"name": "g", "ray_start_params": {"labels": "zone=a"}}]},
    ),
    ("KR-HEAD-CONTAINER", lambda m: m["spec"]["headGroupSpec"]["template"]["spec"].update(containers=[]), None),
    ("KR-GROUP-CONTAINER", lambda m: group(m)["template"]["spec"].update(containers=[]), None),
    ("KR-GROUP-IDLE-TIMEOUT", group_update(idleTimeoutSeconds=60), None),
    ("KR-GROUP-PRIORITY", group_update(priority=5), None),
    ("KR-FT-OPTIONS", both(spec_update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}), head_env("REDIS_PASSWORD", "x")), None),
    ("KR-FT-BACKEND", spec_update(gcsFaultToleranceOptions={"redisAddress": "redis:6379", "storage": {"size": "1Gi"}}), None),
    ("KR-GROUP-SUSPEND", both(spec_update(enableInTreeAutoscaling=True), group_update(suspend=True)), None),
    (
        "KR-AUTOSCALER-VERSION",
        both(spec_update(enableInTreeAutoscaling=True, autoscalerOptions={"version": "v2"}), head_env("RAY_enable_autoscaler_v2", "true")),
        None,
    ),
    ("KR-AUTOSCALER-OPTIONS", spec_update(enableInTreeAutoscaling=True, autoscalerOptions={"idleTimeoutSeconds": -1}), None),
    ("KR-HISTORY-SERVER", spec_update(historyServerOptions={}), None),
    ("KR-AUTH-K8S", spec_update(authOptions={"mode": "disabled", "enableK8sTokenAuth": True}), None),
    ("KR-NETWORK-POLICY", spec_update(networkPolicy={"workerGroups": [{"groupName": "cpu-group"}]}), None),
    ("KR-TLS", both(spec_update(tlsOptions={"enabled": True}), head_env("RAY_USE_TLS", "1")), None),
    (
        "KR-UPGRADE-STRATEGY",
        both(
            spec_update(upgradeStrategy={"type": "Recreate"}),
            lambda m: m["metadata"]["labels"].update({"ray.io/originated-from-crd": "RayJob"}),
        ),
        None,
    ),
    ("K8S-NAMESPACE", lambda m: m["metadata"].update(namespace="Team_A"), {"namespace": "Team_A"}),
    ("K8S-LABELS", lambda m: m["metadata"]["labels"].update(owner="alice@example.com"), {"labels": {"owner": "alice@example.com"}}),
    (
        "HP-RAY-VERSION-IMAGE",
        lambda m: group(m)["template"]["spec"]["containers"][0].update(image="rayproject/ray:2.55.0-py312-gpu"),
        {"image": "rayproject/ray:2.55.0-py312-gpu"},
    ),
    (
        "HP-REPLICAS-RANGE",
        group_update(replicas=5, minReplicas=1, maxReplicas=2),
        {"worker_groups": [{"name": "g", "replicas": 5, "min_replicas": 1, "max_replicas": 2}]},
    ),
    (
        "HP-AUTH-SECRET",
        spec_update(authOptions={"mode": "disabled", "secretName": "s"}),
        {"auth_mode": "disabled", "auth_secret_name": "s"},
    ),
    ("CRD-MANAGED-BY", spec_update(managedBy="me"), None),
    ("CRD-SCHEMA", group_update(minReplicas="three"), None),
    ("CRD-UNKNOWN-FIELD", lambda m: m["spec"]["headGroupSpec"].update(rayStartParam={"num-cpus": "0"}), None),
    ("CRD-VERSION", lambda m: m.update(apiVersion="ray.io/v2"), None),
    ("CRD-KIND", lambda m: m.update(kind="RayJob"), None),
]
WARNINGS = {
    "CRD-DEPRECATED-VERSION": both(lambda m: m.update(apiVersion="ray.io/v1alpha1"), lambda m: m["spec"].pop("authOptions")),
    "KR-AUTOSCALER-V1-RESTART-POLICY": both(
        spec_update(enableInTreeAutoscaling=True, autoscalerOptions={"version": "v1"}),
        lambda m: group(m)["template"]["spec"].update(restartPolicy="Always"),
    ),
}


def broken(mutate: Mutation) -> dict[str, Any]:
    m = base()
    mutate(m)
    return m


def test_every_rule_has_a_case() -> None:
    covered = {rule_id for rule_id, _, _ in CASES} | set(WARNINGS)
    assert {r.id for r in RULES} - covered == set()


@pytest.mark.parametrize(("rule_id", "mutate", "fields"), CASES, ids=[c[0] for c in CASES])
def test_validate_manifest_names_the_rule(rule_id: str, mutate: Mutation, fields: dict[str, Any] | None) -> None:
    report = check_manifest(broken(mutate))
    assert rule_id in {v.rule for v in report.errors}, [str(v) for v in report.errors]
    with pytest.raises(ConfigError, match=rf"KubeRay 1\.7 \(v1\.7\.0\):\n(.*\n)*  \[{rule_id}\] \$\.\S+: .+"):
        validate_manifest(broken(mutate))


@pytest.mark.parametrize(("rule_id", "mutate", "fields"), CASES, ids=[c[0] for c in CASES])
def test_cluster_spec_names_the_rule(rule_id: str, mutate: Mutation, fields: dict[str, Any] | None) -> None:
    with pytest.raises(ConfigError, match=rf"\[{rule_id}\] \$\.\S+: "):
        if fields is None:
            ClusterSpec.from_manifest(broken(mutate))
        else:
            ClusterSpec.from_preset("seed", **fields)


@pytest.mark.parametrize(("rule_id", "mutate", "fields"), CASES, ids=[c[0] for c in CASES])
def test_cli_validate_names_the_rule_and_the_kuberay_version(rule_id: str, mutate: Mutation, fields: Any, tmp_path: Path) -> None:
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(broken(mutate)))
    result = runner.invoke(cli.app, ["validate", str(path)])
    assert result.exit_code == 1
    assert "invalid under KubeRay 1.7 rules (v1.7.0)" in result.output
    assert f"[{rule_id}] $." in result.output


@pytest.mark.parametrize("rule_id", sorted(WARNINGS))
def test_warnings_do_not_fail(rule_id: str, tmp_path: Path) -> None:
    m = broken(WARNINGS[rule_id])
    report = validate_manifest(m)
    assert report.ok and [v.rule for v in report.warnings] == [rule_id]
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(m))
    result = runner.invoke(cli.app, ["validate", str(path)])
    assert result.exit_code == 0 and f"warning: [{rule_id}]" in result.output and "valid under KubeRay 1.7 rules" in result.output


def test_issue_messages_carry_the_fix() -> None:
    messages = {
        "KR-REDIS-ADDRESS-WITHOUT-FT": "set spec.gcsFaultToleranceOptions.redisAddress instead of the env var",
        "KR-AUTH-RAY-VERSION": "token auth needs Ray 2.52.0 or later, rayVersion is 2.46.0",
        "KR-NAME-DNS1035": "use e.g. 'maze-rl'",
        "KR-NAME-LENGTH": "has 60 characters, more than 53",
        "K8S-GROUP-NAME": "use e.g. 'gpu-group'",
        "KR-GROUP-REPLICAS": "raise maxReplicas to at least 4 or lower minReplicas",
    }
    for rule_id, mutate, _ in CASES:
        if rule_id in messages:
            text = " ".join(str(v) for v in check_manifest(broken(mutate)).errors if v.rule == rule_id)
            assert messages[rule_id] in text, text


def test_rules_are_kept_per_kuberay_version() -> None:
    ids_15 = {r.id for r in rules_for("1.5")}
    ids_17 = {r.id for r in rules_for("1.7")}
    assert {"KR-GROUP-REPLICAS", "KR-GROUP-PRIORITY", "KR-TLS", "KR-AUTH-K8S"} <= ids_17 - ids_15
    assert {"KR-NAME-LENGTH", "KR-AUTH-RAY-VERSION", "KR-REDIS-ADDRESS-WITHOUT-FT"} <= ids_15 & ids_17
    # KubeRay 1.5's operator does not refuse minReplicas > maxReplicas; the project rule still says so
    m = broken(group_update(minReplicas=4, maxReplicas=2, replicas=3))
    report = check_manifest(m, kuberay="1.5")
    assert [v.rule for v in report.errors] == ["HP-REPLICAS-RANGE"] and "1.6 and later refuse it" in report.errors[0].message
    assert report.kuberay == "1.5" and report.tag == "v1.5.1"


def test_cli_validate_with_another_kuberay_version(tmp_path: Path) -> None:
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(broken(group_update(priority=5))))  # KR-GROUP-PRIORITY is a 1.7 rule
    assert runner.invoke(cli.app, ["validate", str(path)]).exit_code == 1
    result = runner.invoke(cli.app, ["validate", str(path), "--kuberay-version", "1.5", "--no-strict"])
    assert result.exit_code == 0, result.output
    assert "valid under KubeRay 1.5 rules (v1.5.1)" in result.output
    bad = runner.invoke(cli.app, ["validate", str(path), "--kuberay-version", "1.2"])
    assert bad.exit_code == 2 and "KubeRay '1.2' is not supported" in bad.output  # bad input


def test_feature_gates_turn_warnings_into_errors_or_silence(tmp_path: Path) -> None:
    m = broken(spec_update(tlsOptions={"enabled": True}))
    unknown = check_manifest(m)
    assert unknown.ok and [v.rule for v in unknown.warnings] == ["KR-TLS"]
    assert "off by default in KubeRay 1.7" in unknown.warnings[0].message
    off = check_manifest(m, feature_gates={"RayClusterMTLS": False})
    assert [v.rule for v in off.errors] == ["KR-TLS"]
    on = check_manifest(m, feature_gates={"RayClusterMTLS": True})
    assert on.ok and on.warnings == ()
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(m))
    result = runner.invoke(cli.app, ["validate", str(path), "--feature-gate", "RayClusterMTLS=false"])
    assert result.exit_code == 1 and "[KR-TLS]" in result.output
    assert runner.invoke(cli.app, ["validate", str(path), "--feature-gate", "RayClusterMTLS=true"]).exit_code == 0
    assert "NAME=true|false" in runner.invoke(cli.app, ["validate", str(path), "--feature-gate", "RayClusterMTLS"]).output


def test_every_violation_is_reported_at_once() -> None:
    m = broken(both(lambda m: m["metadata"].update(name="Maze_RL"), head_env("REDIS_USERNAME", "x"), group_update(groupName="gpu group")))
    assert {v.rule for v in check_manifest(m).errors} == {"KR-NAME-DNS1035", "KR-REDIS-USERNAME", "K8S-GROUP-NAME"}


def test_the_docs_table_lists_every_rule() -> None:
    text = DOCS.read_text()
    table_ids = set(re.findall(r"^\| `([A-Z0-9]+-[A-Z0-9-]+)` \|", text, flags=re.M))
    known = {r.id for r in RULES} | {"CRD-SCHEMA", "CRD-UNKNOWN-FIELD", "CRD-VERSION", "CRD-KIND", "CRD-DEPRECATED-VERSION"}
    assert table_ids == known
