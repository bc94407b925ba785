"""ClusterStatus from recorded-shape KubeRay 1.7 RayCluster objects (conditions, never ``state``)."""

from __future__ import annotations

import re

import pytest

from hyperpod_rl.cluster.status import ClusterStatus, read_status
from tests.fakes import load_fixture

NOT_READY = [
    ("head_pending_workers_running.json", ClusterStatus.DEGRADED, r"head pod not ready \(Unknown"),
    ("no_conditions_old_operator.json", ClusterStatus.UNKNOWN, r"no conditions.*upgrade to KubeRay 1\.7"),
    ("provisioned_worker_lost.json", ClusterStatus.DEGRADED, r"2 of 3 worker pods ready"),
    ("suspended.json", ClusterStatus.SUSPENDED, r"suspended; set spec.suspend=false"),
    ("provisioning.json", ClusterStatus.PROVISIONING, r"head ready, 1 of 3 worker pods ready"),
    ("replica_failure_quota.json", ClusterStatus.FAILED, r"FailedCreateWorkerPod.*exceeded quota: team-gpu-quota"),
    ("updating_generation.json", ClusterStatus.PROVISIONING, r"has not observed generation 2"),
]


@pytest.mark.parametrize(("fixture", "expected", "message"), NOT_READY)
def test_recorded_objects_are_not_ready(fixture: str, expected: ClusterStatus, message: str) -> None:
    obj = load_fixture(fixture)
    reading = read_status(obj)
    assert reading.status is expected
    assert not reading.status.is_ready()
    assert reading.message and re.search(message, reading.message), reading.message


def test_deprecated_state_is_never_trusted() -> None:
    # Three fixtures say state=ready; none of them is ready by conditions.
    for name in ("head_pending_workers_running.json", "no_conditions_old_operator.json", "provisioned_worker_lost.json"):
        obj = load_fixture(name)
        assert obj["status"]["state"] == "ready"
        assert not read_status(obj).status.is_ready()


def test_ready_fixture_is_ready() -> None:
    reading = read_status(load_fixture("ready.json"))
    assert reading.status is ClusterStatus.READY and reading.status.is_ready()
    assert (reading.ready_workers, reading.desired_workers) == (3, 3)
    assert {c.type for c in reading.conditions} == {"HeadPodReady", "RayClusterProvisioned"}


def test_ready_without_provisioned_condition_is_not_ready() -> None:
    obj = load_fixture("ready.json")
    obj["status"]["conditions"] = [c for c in obj["status"]["conditions"] if c["type"] != "RayClusterProvisioned"]
    assert read_status(obj).status is ClusterStatus.PROVISIONING


def test_missing_and_deleting() -> None:
    assert read_status(None).status is ClusterStatus.NOT_FOUND
    obj = load_fixture("ready.json")
    obj["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:00Z"
    assert read_status(obj).status is ClusterStatus.DELETING


def test_suspending_from_spec_before_conditions_update() -> None:
    obj = load_fixture("ready.json")
    obj["spec"]["suspend"] = True
    assert read_status(obj).status is ClusterStatus.SUSPENDING


@pytest.mark.parametrize(
    ("status", "ready", "terminal"),
    [
        (ClusterStatus.READY, True, False),
        (ClusterStatus.PENDING, False, False),
        (ClusterStatus.PROVISIONING, False, False),
        (ClusterStatus.DEGRADED, False, False),
        (ClusterStatus.UNKNOWN, False, False),
        (ClusterStatus.FAILED, False, True),
        (ClusterStatus.SUSPENDED, False, True),
        (ClusterStatus.SUSPENDING, False, True),
        (ClusterStatus.DELETING, False, True),
        (ClusterStatus.NOT_FOUND, False, True),
    ],
)
def test_enum_predicates(status: ClusterStatus, ready: bool, terminal: bool) -> None:
    assert status.is_ready() is ready
    assert status.is_terminal() is terminal
    assert status == status.value  # a str enum, usable as JSON
