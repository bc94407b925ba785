"""ClusterStatus from recorded-shape KubeRay 1.7 RayCluster objects (conditions, never ``state``)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hyperpod_rl.cluster.status import ClusterStatus, Refusal, find_refusal, read_status
from tests.fakes import load_fixture

NOT_READY = [
    ("head_pending_workers_running.json", ClusterStatus.DEGRADED, r"head pod not ready \(Unknown"),
    (
        "no_conditions_old_operator.json",
        ClusterStatus.UNKNOWN,
        r"no conditions yet: the KubeRay operator has not reconciled.*look for Warning events",
    ),
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
        (ClusterStatus.REFUSED, False, True),
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


# ----- refused by the operator ---------------------------------------------------------------------
REFUSED_MESSAGE = (
    r"refused this RayCluster \(InvalidRayClusterSpec\): The RayCluster spec is invalid default/maze: RAY_REDIS_ADDRESS is set"
)


@pytest.mark.parametrize("events", ["events_refused_kuberay17.json", "events_refused_kuberay15.json"])
def test_a_refusal_event_makes_the_cluster_refused(events: str) -> None:
    obj = load_fixture("refused_invalid_spec.json")
    assert "status" not in obj  # the operator leaves a refused RayCluster without status
    reading = read_status(obj, load_fixture(events)["items"])
    assert reading.status is ClusterStatus.REFUSED and reading.status.is_terminal()
    assert re.search(REFUSED_MESSAGE, reading.message) and "hyperpod-rl cluster validate" in reading.message
    assert read_status(obj).status is ClusterStatus.UNKNOWN  # without the events it cannot be told


def test_metadata_refusal() -> None:
    obj = load_fixture("refused_invalid_spec.json")
    events = load_fixture("events_refused_kuberay17.json")["items"]
    events[0]["reason"] = "InvalidRayClusterMetadata"
    events[0]["message"] = "The RayCluster metadata is invalid default/maze: RayCluster name should be no more than 53 characters"
    reading = read_status(obj, events)
    assert reading.status is ClusterStatus.REFUSED and "InvalidRayClusterMetadata" in reading.message


def test_events_k8s_io_shape_is_read_too() -> None:
    obj = load_fixture("refused_invalid_spec.json")
    ev = load_fixture("events_refused_kuberay17.json")["items"][0]
    shaped = {
        "type": "Warning",
        "reason": ev["reason"],
        "note": ev["message"],
        "regarding": ev["involvedObject"],
        "eventTime": ev["eventTime"],
    }
    assert find_refusal(obj, [shaped]) == Refusal("InvalidRayClusterSpec", ev["message"])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda obj, ev: obj.update(status={"observedGeneration": 1}), "the operator reconciled this generation since"),
        (lambda obj, ev: obj["metadata"]["managedFields"][0].update(time="2026-11-29T10:30:00Z"), "the object changed after the event"),
        (lambda obj, ev: ev["involvedObject"].update(uid="another-object"), "about an earlier object of that name"),
        (lambda obj, ev: ev["involvedObject"].update(name="other"), "about another RayCluster"),
        (lambda obj, ev: ev.update(type="Normal"), "not a Warning"),
        (lambda obj, ev: ev.update(reason="InvalidRayClusterStatus"), "the operator retries this one"),
        (
            lambda obj, ev: ev.update(message="RayCluster spec warning default/maze: restartPolicy for worker groups [g] should be Never"),
            "KubeRay 1.7's warning that does not stop reconciling",
        ),
    ],
)
def test_events_that_are_not_a_current_refusal(change: Any, why: str) -> None:
    obj = load_fixture("refused_invalid_spec.json")
    events = load_fixture("events_refused_kuberay17.json")["items"]
    change(obj, events[0])
    assert find_refusal(obj, events) is None, why
    assert read_status(obj, events).status is not ClusterStatus.REFUSED


def test_refused_update_of_a_running_cluster() -> None:
    obj = load_fixture("ready.json")
    obj["metadata"]["generation"] = 3  # the new spec was refused: status stays at generation 2
    obj["status"]["observedGeneration"] = 2
    ev = load_fixture("events_refused_kuberay15.json")["items"][0]
    ev["involvedObject"].update(uid=obj["metadata"].get("uid"), name=obj["metadata"]["name"])
    assert read_status(obj, [ev]).status is ClusterStatus.REFUSED
