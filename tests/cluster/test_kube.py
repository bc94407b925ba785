"""RayClusterClient against a fake Kubernetes API on 127.0.0.1, through the real ``kubernetes`` client."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hyperpod_rl.cluster import ClusterSpec, ClusterStatus
from hyperpod_rl.cluster.kube import RayClusterClient, http_probe
from hyperpod_rl.errors import (
    ClusterError,
    ClusterNotReady,
    ClusterRefused,
    ClusterTimeout,
    ConfigError,
)
from tests.fakes import (
    FakeHTTPServer,
    Request,
    Response,
    k8s_status,
    kube_api_client,
    load_fixture,
)

pytestmark = pytest.mark.kube

RC = r"/apis/ray\.io/v1/namespaces/(?P<ns>[^/]+)/rayclusters/(?P<name>[^/]+)"
RC_LIST = r"/apis/ray\.io/v1/namespaces/(?P<ns>[^/]+)/rayclusters"
PODS = r"/api/v1/namespaces/default/pods"
EVENTS = r"/api/v1/namespaces/default/events"
ROLE = "arn:aws:sts::123456789012:assumed-role/AmazonSageMaker-ExecutionRole-20261101T000000/SageMaker"


class FakeClock:
    """Deterministic time: sleep() advances now()."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as srv:
        srv.route("GET", PODS, Response(200, {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []}))
        srv.route("GET", EVENTS, Response(200, {"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": []}))
        yield srv


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def rc(server: FakeHTTPServer, clock: FakeClock) -> RayClusterClient:
    return RayClusterClient(kube_api_client(server.url), sleep=clock.sleep, clock=clock)


def not_found(name: str = "maze") -> Response:
    return k8s_status(404, "NotFound", f'rayclusters.ray.io "{name}" not found', {"name": name, "group": "ray.io", "kind": "rayclusters"})


def sequence(*objects: Any) -> Any:
    """A GET handler returning the given objects in turn, then the last one forever."""
    items = list(objects)

    def handler(_req: Request, _m: Any) -> Response:
        obj = items.pop(0) if len(items) > 1 else items[0]
        return obj if isinstance(obj, Response) else Response(200, obj)

    return handler


# ----- CRUD ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("code", [200, 201])  # update answers 200, create 201
def test_apply_is_server_side_apply(server: FakeHTTPServer, rc: RayClusterClient, code: int) -> None:
    spec = ClusterSpec.from_preset("seed", name="maze")
    stored = {**spec.to_manifest(), "status": {}}
    stored["metadata"]["uid"] = "5f0c2a9e"
    server.route("PATCH", RC, Response(code, stored))
    server.route("GET", RC, Response(200, stored))
    out = rc.apply(spec)
    assert out["metadata"]["uid"] == "5f0c2a9e"
    (req,) = [r for r in server.requests if r.method == "PATCH"]
    assert req.path == "/apis/ray.io/v1/namespaces/default/rayclusters/maze"
    assert req.headers["content-type"] == "application/apply-patch+yaml"
    assert req.query == {"fieldManager": ["hyperpod-rl"], "fieldValidation": ["Strict"], "force": ["true"]}
    assert req.json() == spec.to_manifest()
    assert req.headers["authorization"] == "Bearer fake-k8s-token"


def test_apply_refuses_invalid_manifest_before_any_request(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    manifest = ClusterSpec.from_preset("seed").to_manifest()
    manifest["spec"]["workerGroupSpecs"][0]["maxReplicas"] = "many"
    with pytest.raises(ConfigError, match=r"\$\.spec\.workerGroupSpecs\[0\]\.maxReplicas"):
        rc.apply(manifest)
    assert server.requests == []


def test_get_list_delete(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    ready = load_fixture("ready.json")
    server.route("GET", RC, lambda _r, m: Response(200, ready) if m["name"] == "maze" else not_found(m["name"]))
    server.route("GET", RC_LIST, Response(200, {"apiVersion": "ray.io/v1", "kind": "RayClusterList", "metadata": {}, "items": [ready]}))
    server.route(
        "DELETE", RC, lambda _r, m: Response(200, {"kind": "Status", "status": "Success"}) if m["name"] == "maze" else not_found(m["name"])
    )
    assert rc.get("maze")["status"]["readyWorkerReplicas"] == 3
    assert rc.get("other") is None
    assert [c["metadata"]["name"] for c in rc.list()] == ["maze"]
    assert rc.delete("maze") is True
    assert rc.delete("other") is False
    (req,) = [r for r in server.requests if r.method == "DELETE" and r.path.endswith("/maze")]
    assert req.query["propagationPolicy"] == ["Background"]


@pytest.mark.parametrize(
    ("response", "match"),
    [
        (
            k8s_status(404, "NotFound", "the server could not find the requested resource"),
            r"RayCluster CRD \(rayclusters.ray.io/v1\) is not installed; install the KubeRay operator 1.7 with Helm",
        ),
        (
            k8s_status(
                403,
                "Forbidden",
                f'rayclusters.ray.io "maze" is forbidden: User "{ROLE}" cannot patch resource '
                '"rayclusters" in API group "ray.io" in the namespace "default"',
                {"name": "maze", "group": "ray.io", "kind": "rayclusters"},
            ),
            r"forbidden by RBAC: .*cannot patch resource \"rayclusters\".*EKS access entry",
        ),
        (
            k8s_status(404, "NotFound", 'namespaces "default" not found', {"name": "default", "kind": "namespaces"}),
            r"namespace 'default' not found; create it \(kubectl create namespace default\)",
        ),
        (
            k8s_status(
                403,
                "Forbidden",
                'rayclusters.ray.io "maze" is forbidden: exceeded quota: object-counts, requested: '
                "count/rayclusters.ray.io=1, used: count/rayclusters.ray.io=2, limited: count/rayclusters.ray.io=2",
                {"name": "maze", "group": "ray.io", "kind": "rayclusters"},
            ),
            r"ResourceQuota exceeded in namespace 'default': .*limited: count/rayclusters.ray.io=2",
        ),
        (k8s_status(401, "Unauthorized", "Unauthorized"), r"rejected the credentials \(expired EKS token\?\)"),
        (
            k8s_status(422, "Invalid", 'RayCluster.ray.io "maze" is invalid: spec.workerGroupSpecs[0].maxReplicas: Invalid value'),
            r"rejected the object \(Invalid\): .*maxReplicas",
        ),
    ],
)
def test_apply_errors_are_clear(server: FakeHTTPServer, rc: RayClusterClient, response: Response, match: str) -> None:
    server.route("PATCH", RC, response)
    with pytest.raises(ClusterError, match=match) as info:
        rc.apply(ClusterSpec.from_preset("seed", name="maze"))
    assert "fake-k8s-token" not in str(info.value)


def test_get_with_missing_crd_is_an_error_not_none(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    with pytest.raises(ClusterError, match="CRD .* is not installed"):
        rc.get("maze")  # no route: the fake answers like an API server without the CRD


def test_unreachable_api_server() -> None:
    with FakeHTTPServer() as srv:
        url = srv.url
    rc = RayClusterClient(kube_api_client(url))
    with pytest.raises(ClusterError, match=r"cannot reach the Kubernetes API at http://127\.0\.0\.1"):
        rc.list()


# ----- status and wait_ready ----------------------------------------------------------------------
def test_report_surfaces_pending_gpu_pods_and_warning_events(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    server.route("GET", RC, Response(200, load_fixture("provisioned_worker_lost.json")))
    server.route("GET", PODS, Response(200, load_fixture("pods_gpu_pending.json")))
    server.route("GET", EVENTS, Response(200, load_fixture("events_gpu_pending.json")))
    report = rc.report("maze")
    assert report.status is ClusterStatus.DEGRADED
    assert [p.phase for p in report.pods] == ["Running", "Running", "Running", "Pending"]
    assert report.pods[0].node_type == "head"
    pending = report.pods[-1]
    assert pending.reason.startswith("Unschedulable: 0/4 nodes are available") and "Insufficient nvidia.com/gpu" in pending.reason
    assert [e.reason for e in report.events] == ["CreatedWorkerPod", "FailedScheduling"]  # someone-else-0 filtered
    text = report.summary()
    assert "hint: not enough free GPUs (nvidia.com/gpu)" in text
    assert "pod maze-gpu-group-worker-x4c7r (worker/gpu-group): Pending Unschedulable" in text
    assert "event FailedScheduling on Pod/maze-gpu-group-worker-x4c7r" in text
    pod_query = next(r for r in server.requests if r.path == PODS).query
    assert pod_query["labelSelector"] == ["ray.io/cluster=maze"]


def test_wait_ready_waits_for_conditions_then_dashboard(server: FakeHTTPServer, rc: RayClusterClient, clock: FakeClock) -> None:
    server.route("GET", RC, sequence(load_fixture("provisioning.json"), load_fixture("ready.json")))
    answers = iter([503, 200])
    calls: list[float] = []

    def probe() -> int:
        calls.append(clock.now)
        return next(answers)

    seen: list[ClusterStatus] = []
    report = rc.wait_ready("maze", timeout_s=60, poll_interval_s=5, dashboard=probe, on_report=lambda r: seen.append(r.status))
    assert report.usable and report.dashboard_status == 200
    assert seen == [ClusterStatus.PROVISIONING, ClusterStatus.READY, ClusterStatus.READY]
    assert calls == [5.0, 10.0]  # never probed while conditions said not ready
    assert clock.sleeps == [5, 5]


@pytest.mark.parametrize(
    "fixture",
    ["head_pending_workers_running.json", "no_conditions_old_operator.json", "provisioned_worker_lost.json", "provisioning.json"],
)
def test_wait_ready_times_out_on_not_ready_objects(server: FakeHTTPServer, rc: RayClusterClient, clock: FakeClock, fixture: str) -> None:
    server.route("GET", RC, Response(200, load_fixture(fixture)))
    with pytest.raises(ClusterTimeout, match=r"not usable after 30 s: RayCluster default/maze: (degraded|unknown|provisioning)"):
        rc.wait_ready("maze", timeout_s=30, poll_interval_s=10, dashboard=lambda: 200)
    assert clock.now == 30


def test_dashboard_503_right_after_ready_is_not_usable(server: FakeHTTPServer, rc: RayClusterClient, clock: FakeClock) -> None:
    server.route("GET", RC, Response(200, load_fixture("ready.json")))
    with pytest.raises(ClusterTimeout, match=r"ready .*\n  dashboard answered 503 \(not serving jobs yet\)"):
        rc.wait_ready("maze", timeout_s=20, poll_interval_s=5, dashboard=lambda: 503)


@pytest.mark.parametrize(
    ("fixture", "match"),
    [
        ("suspended.json", r"suspended; set spec.suspend=false"),
        ("replica_failure_quota.json", r"failed \(ReplicaFailure \(FailedCreateWorkerPod\): .*exceeded quota"),
    ],
)
def test_wait_ready_stops_early_on_terminal_status(
    server: FakeHTTPServer, rc: RayClusterClient, clock: FakeClock, fixture: str, match: str
) -> None:
    server.route("GET", RC, Response(200, load_fixture(fixture)))
    with pytest.raises(ClusterNotReady, match=match):
        rc.wait_ready("maze", timeout_s=600, dashboard=lambda: 200)
    assert clock.sleeps == []


def test_wait_ready_on_missing_cluster(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    server.route("GET", RC, not_found())
    with pytest.raises(ClusterNotReady, match="not_found"):
        rc.wait_ready("maze", timeout_s=5)


def test_dashboard_rejecting_credentials_is_reported(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    server.route("GET", RC, Response(200, load_fixture("ready.json")))
    with pytest.raises(ClusterNotReady, match=r"rejected the credentials \(401\); pass the Ray auth token"):
        rc.wait_ready("maze", timeout_s=60, dashboard=lambda: 401)


def test_http_probe_against_a_dashboard() -> None:
    with FakeHTTPServer() as dash:
        dash.route(
            "GET",
            "/api/version",
            lambda r, _m: (
                Response(200, {"version": "4", "ray_version": "2.56.0"})
                if r.headers.get("authorization") == "Bearer ray-token-123"
                else Response(401, b"Unauthorized")
            ),
        )
        assert http_probe(dash.url, headers={"Authorization": "Bearer ray-token-123"})() == 200
        assert http_probe(dash.url)() == 401
        url = dash.url
    assert http_probe(url, timeout_s=0.5)() == 0


def test_fixture_objects_pass_the_rule_set() -> None:
    from hyperpod_rl.cluster import validate_manifest

    for name in ("ready.json", "suspended.json", "replica_failure_quota.json", "no_conditions_old_operator.json"):
        obj = copy.deepcopy(load_fixture(name))
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "labels")}
        validate_manifest(obj)  # status shapes match the vendored CRD's status schema
    assert json.dumps(load_fixture("ready.json")).count("HeadPodReady") == 1
    refused = load_fixture("refused_invalid_spec.json")
    refused["metadata"] = {k: v for k, v in refused["metadata"].items() if k in ("name", "namespace", "labels")}
    with pytest.raises(ConfigError, match=r"\[KR-REDIS-ADDRESS-WITHOUT-FT\]"):
        validate_manifest(refused)  # what the operator refuses, the rule set refuses before apply


def test_wait_ready_returns_at_once_when_the_operator_refused(server: FakeHTTPServer, rc: RayClusterClient, clock: FakeClock) -> None:
    server.route("GET", RC, Response(200, load_fixture("refused_invalid_spec.json")))
    server.route("GET", EVENTS, Response(200, load_fixture("events_refused_kuberay17.json")))
    with pytest.raises(
        ClusterRefused,
        match=r"refused \(the KubeRay operator refused this RayCluster \(InvalidRayClusterSpec\): The RayCluster spec is invalid default/maze: RAY_REDIS_ADDRESS",
    ):
        rc.wait_ready("maze", timeout_s=900, dashboard=lambda: 200)
    assert clock.sleeps == [] and clock.now == 0  # no polling, no timeout
    report = rc.report("maze")
    assert report.status is ClusterStatus.REFUSED
    assert [(e.type, e.reason, e.count) for e in report.events] == [("Warning", "InvalidRayClusterSpec", 3)]  # someone-else-0 filtered


def test_wait_ready_with_a_dashboard_address(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    server.route("GET", RC, Response(200, load_fixture("ready.json")))
    server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.56.0"}))
    assert rc.wait_ready("maze", timeout_s=5, dashboard=server.url).dashboard_status == 200


def test_forbidden_pod_listing_still_reports(server: FakeHTTPServer, rc: RayClusterClient) -> None:
    server.route("GET", RC, Response(200, load_fixture("provisioning.json")))
    server.route("GET", PODS, k8s_status(403, "Forbidden", 'pods is forbidden: User "x" cannot list resource "pods"'))
    report = rc.report("maze")
    assert report.status is ClusterStatus.PROVISIONING and report.pods == ()


def test_head_pending_while_workers_run_is_surfaced(server: FakeHTTPServer, rc: RayClusterClient, clock: FakeClock) -> None:
    pods = load_fixture("pods_gpu_pending.json")
    head, *workers = pods["items"]
    unscheduled = copy.deepcopy(workers[-1])  # the pending pod's status, moved to the head
    head["status"] = unscheduled["status"]
    pods["items"] = [head, *workers[:-1]]
    server.route("GET", RC, Response(200, load_fixture("head_pending_workers_running.json")))
    server.route("GET", PODS, Response(200, pods))
    with pytest.raises(ClusterTimeout) as info:
        rc.wait_ready("maze", timeout_s=10, poll_interval_s=5, dashboard=lambda: 200)
    text = str(info.value)
    assert "degraded (head pod not ready (Unknown))" in text
    assert "pod maze-head-7xk2p (head/headgroup): Pending Unschedulable: 0/4 nodes are available" in text
    assert "maze-gpu-group-worker-2kq8d" not in text  # running workers are not listed as problems
