"""The dashboard-probe choice: one library function behind `cluster wait --via` and the ClusterPanel."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from hyperpod_rl.cluster import ClusterSpec
from hyperpod_rl.cluster.kube import RayClusterClient
from hyperpod_rl.cluster.probe import dashboard_probe
from hyperpod_rl.errors import ClusterNotReady, ConfigError
from tests.fakes import FakeHTTPServer, Response, k8s_status, kube_api_client, load_fixture

pytestmark = pytest.mark.kube

TOKEN = "ray-token-probe-123"
RC = r"/apis/ray\.io/v1/namespaces/default/rayclusters/maze"


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as srv:
        srv.route(
            "GET",
            "/api/version",
            lambda r, _m: Response(200, {"version": "4"}) if r.headers.get("authorization") == f"Bearer {TOKEN}" else Response(401, b"no"),
        )
        srv.route("GET", r"/api/v1/namespaces/default/pods", Response(200, {"kind": "PodList", "items": []}))
        srv.route("GET", r"/api/v1/namespaces/default/events", Response(200, {"kind": "EventList", "items": []}))
        yield srv


def test_none_trusts_the_conditions(server: FakeHTTPServer) -> None:
    assert dashboard_probe("none", kube_api_client(server.url), "maze") is None


def test_address_uses_the_clusters_token_secret(server: FakeHTTPServer) -> None:
    secret = {"kind": "Secret", "data": {"auth_token": base64.b64encode(TOKEN.encode()).decode()}}
    server.route("GET", r"/api/v1/namespaces/default/secrets/maze", Response(200, secret))
    probe = dashboard_probe("address", kube_api_client(server.url), "maze", address=server.url)
    assert probe is not None and probe() == 200


def test_address_without_a_token_secret_probes_without_auth(server: FakeHTTPServer) -> None:
    server.route("GET", r"/api/v1/namespaces/default/secrets/maze", k8s_status(404, "NotFound", 'secrets "maze" not found'))
    probe = dashboard_probe("address", kube_api_client(server.url), "maze", address=server.url)
    assert probe is not None and probe() == 401  # reached, unauthenticated


@pytest.mark.parametrize(
    ("via", "address", "match"),
    [("address", None, r"--via address needs --address"), ("pigeon", None, r"--via must be one of endpoint, address, none, got 'pigeon'")],
)
def test_bad_choices(server: FakeHTTPServer, via: str, address: str | None, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        dashboard_probe(via, kube_api_client(server.url), "maze", address=address)


def test_cluster_panel_waits_through_the_same_choice(server: FakeHTTPServer) -> None:
    from hyperpod_rl.widgets.cluster_panel import ClusterPanel

    server.route("GET", RC, Response(200, load_fixture("ready.json")))
    server.route("GET", r"/api/v1/namespaces/default/secrets/maze", k8s_status(404, "NotFound", 'secrets "maze" not found'))
    kube = RayClusterClient(kube_api_client(server.url), sleep=lambda _s: None)
    panel = ClusterPanel(
        "hyperpod", spec=ClusterSpec.from_preset("seed", name="maze"), kube=kube, via="address", address=server.url, wait_timeout_s=1
    )
    with pytest.raises(ClusterNotReady, match=r"rejected the credentials \(401\)"):
        panel.wait()  # the probe reached the dashboard without a token: 401, reported at once
    bad = ClusterPanel("hyperpod", spec=ClusterSpec.from_preset("seed", name="maze"), kube=kube, via="pigeon")
    with pytest.raises(ConfigError, match=r"--via must be one of"):
        bad.wait()
