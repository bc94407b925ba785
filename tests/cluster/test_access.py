"""Dashboard access end to end against local HTTP servers playing the Kubernetes API and the dashboard.

The connection objects and error bodies follow the Kubernetes ``Status`` shape and the HyperPod Ray
Endpoint Operator flow described in docs/hyperpod-setup.md; the dashboard answers like Ray 2.56
(``/api/version``, ``/api/jobs/``). Ray's real ``JobSubmissionClient`` talks to it.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.stub import Stubber

from hyperpod_rl.cluster.access import (
    HyperPodDashboard,
    PortForwardDashboard,
    eks_api_client,
    eks_token,
    port_forward,
    read_ray_token,
    redact,
)
from hyperpod_rl.cluster.kube import RayClusterClient
from hyperpod_rl.errors import ClusterError
from hyperpod_rl.paths import data_dir
from tests.fakes import (
    FakeHTTPServer,
    Request,
    Response,
    k8s_status,
    kube_api_client,
    load_fixture,
)

pytestmark = pytest.mark.kube

CONN = r"/apis/connection\.access\.sagemaker\.amazonaws\.com/v1alpha1/namespaces/(?P<ns>[^/]+)/raydashboardconnections"
CONN_ONE = CONN + r"/(?P<name>[^/]+)"
# JWT-shaped secrets (header.payload.signature) so a leak would be unmistakable in a scan.
JWTS = [f"eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJtYXplLXJsIiwibiI6{i}fQ.c2lnbmF0dXJlLXNlY3JldC0{i}" for i in range(1, 4)]
COOKIES = [f"rs-cookie-secret-{i}-Zx9Q" for i in range(1, 4)]
RAY_TOKEN = "ray-auth-token-5c1e9a57-secret"
VERSION = {"version": "4", "ray_version": "2.56.0", "ray_commit": "8c2f0e1", "session_name": "session_2026-11-29_10-03-12_123456_1"}


def fake_session() -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region_name="us-west-2"
    )


class Dashboard:
    """State of the fake dashboard proxy: valid JWTs, issued cookies, expired cookies."""

    def __init__(self, server: FakeHTTPServer) -> None:
        self.server = server
        self.valid_jwts: set[str] = set()
        self.cookies = iter(COOKIES)
        self.live: set[str] = set()
        self.logins = 0
        self.jobs: list[dict[str, Any]] = []
        server.route("GET", "/bearer-auth", self.login)
        server.route("GET", "/api/version", self.guard(lambda _r: Response(200, VERSION)))
        server.route("GET", "/api/jobs/", self.guard(lambda _r: Response(200, self.jobs)))
        server.route("POST", "/api/jobs/", self.guard(self.submit))

    def login(self, req: Request, _m: Any) -> Response:
        self.logins += 1
        if req.query.get("token", [""])[0] not in self.valid_jwts:
            return Response(401, b"invalid or expired token", {"Content-Type": "text/plain"})
        cookie = next(self.cookies)
        self.live.add(cookie)
        return Response(302, b"", {"Location": "/", "Set-Cookie": f"ray_session={cookie}; Path=/; HttpOnly; Secure; SameSite=Lax"})

    def guard(self, fn: Any) -> Any:
        def handler(req: Request, _m: Any) -> Response:
            cookie = dict(p.strip().split("=", 1) for p in req.headers.get("cookie", "").split(";") if "=" in p).get("ray_session")
            return fn(req) if cookie in self.live else Response(401, b"Unauthorized", {"Content-Type": "text/plain"})

        return handler

    def submit(self, req: Request) -> Response:
        body = req.json()
        self.jobs.append({"submission_id": body["submission_id"], "status": "PENDING", "entrypoint": body["entrypoint"]})
        return Response(200, {"job_id": body["submission_id"], "submission_id": body["submission_id"]})


@pytest.fixture
def servers() -> Iterator[tuple[FakeHTTPServer, FakeHTTPServer, Dashboard]]:
    with FakeHTTPServer() as kube, FakeHTTPServer() as dash:
        yield kube, dash, Dashboard(dash)


def connection(url: str | None, name: str = "maze-x7k2p") -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "connection.access.sagemaker.amazonaws.com/v1alpha1",
        "kind": "RayDashboardConnection",
        "metadata": {
            "name": name,
            "namespace": "default",
            "generateName": "maze-",
            "uid": "9d8e7f60-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
            "creationTimestamp": "2026-11-29T10:05:00Z",
        },
        "spec": {"clusterName": "maze"},
    }
    obj["status"] = {"connectionUrl": url} if url else {}
    return obj


def issue_urls(kube: FakeHTTPServer, dash: Dashboard) -> list[Request]:
    """Each POST mints a new JWT (valid at the dashboard) and answers with its connection URL."""
    jwts = iter(JWTS)
    posts: list[Request] = []

    def create(req: Request, _m: Any) -> Response:
        posts.append(req)
        jwt = next(jwts)
        dash.valid_jwts.add(jwt)
        return Response(201, connection(f"{dash.server.url}/?token={jwt}"))

    kube.route("POST", CONN, create)
    return posts


def test_eks_token_is_a_presigned_get_caller_identity() -> None:
    token = eks_token("hp-eks-cluster", region="us-west-2", session=fake_session())
    raw = token.get_secret_value()
    assert raw.startswith("k8s-aws-v1.") and "=" not in raw and str(token) == "**********"
    payload = raw.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert parts.netloc == "sts.us-west-2.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"] and query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/")


def test_eks_token_without_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    with pytest.raises(ClusterError, match="cannot build an EKS token: NoCredentialsError; configure AWS credentials"):
        eks_token("hp", region="us-west-2", session=boto3.Session(region_name="us-west-2"))


def test_eks_api_client_reaches_the_cluster_with_a_bearer_token(servers: Any) -> None:
    kube, _dash, _ = servers
    kube.route(
        "GET",
        r"/apis/ray\.io/v1/namespaces/default/rayclusters",
        Response(200, {"apiVersion": "ray.io/v1", "kind": "RayClusterList", "metadata": {}, "items": []}),
    )
    real = fake_session()
    eks = real.client("eks", region_name="us-west-2")
    stub = Stubber(eks)
    described = {
        "cluster": {
            "name": "hp-eks",
            "endpoint": kube.url,
            "certificateAuthority": {"data": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()},
        }
    }
    stub.add_response("describe_cluster", described, {"name": "hp-eks"})

    class Session:  # hands out the stubbed EKS client, real STS for signing
        region_name = "us-west-2"

        def client(self, name: str, **kw: Any) -> Any:
            return eks if name == "eks" else real.client(name, **kw)

    with stub:
        api = eks_api_client("hp-eks", region="us-west-2", session=Session())
    assert RayClusterClient(api).list() == []
    # the CA file is the cluster's own under the data dir, reused, never a new temporary file per call
    ca = Path(api.configuration.ssl_ca_cert)
    assert ca.parent == data_dir() / "eks-ca" and ca.read_bytes() == b"-----BEGIN CERTIFICATE-----\n"
    # a second connection to the same cluster adds no file (other tests' clusters may have theirs beside it)
    listed = sorted(p.name for p in ca.parent.iterdir())
    stub.add_response("describe_cluster", described, {"name": "hp-eks"})
    with stub:
        again = eks_api_client("hp-eks", region="us-west-2", session=Session())
    assert again.configuration.ssl_ca_cert == str(ca) and sorted(p.name for p in ca.parent.iterdir()) == listed
    assert not [p for p in ca.parent.iterdir() if p.name.startswith(".")]  # no staging file left beside it
    auth = kube.requests[-1].headers["authorization"]
    assert auth.startswith("Bearer k8s-aws-v1.")
    assert "k8s-aws-v1" not in repr(api.configuration.api_key_prefix)


def test_endpoint_operator_flow_end_to_end_and_no_secret_leaks(servers: Any, caplog: pytest.LogCaptureFixture) -> None:
    kube, dash_srv, dash = servers
    caplog.set_level(logging.DEBUG)
    posts = issue_urls(kube, dash)
    token = eks_token("hp-eks", region="us-west-2", session=fake_session()).get_secret_value()
    access = HyperPodDashboard("maze", api_client=kube_api_client(kube.url, token=token), ray_token=RAY_TOKEN)

    assert access.call(lambda c: c.list_jobs()) == []
    assert access.address == dash_srv.url and dash.logins == 1
    post = posts[0]
    assert post.path == "/apis/connection.access.sagemaker.amazonaws.com/v1alpha1/namespaces/default/raydashboardconnections"
    assert post.json() == {
        "apiVersion": "connection.access.sagemaker.amazonaws.com/v1alpha1",
        "kind": "RayDashboardConnection",
        "metadata": {"generateName": "maze-"},
        "spec": {"clusterName": "maze"},
    }
    assert post.headers["authorization"] == f"Bearer {token}"
    version_call = [r for r in dash_srv.requests if r.path == "/api/version"][-1]
    assert version_call.headers["x-ray-authorization"] == f"Bearer {RAY_TOKEN}"

    # The cookie expires: the next call answers 401, the flow re-acquires a new one and succeeds.
    dash.live.clear()
    sid = access.call(lambda c: c.submit_job(entrypoint="python -V", submission_id="maze-001"))
    assert sid == "maze-001" and dash.jobs[0]["entrypoint"] == "python -V"
    assert len(posts) == 2 and dash.logins == 2
    assert access.probe() == 200
    dash.live.clear()
    assert access.probe() == 200 and len(posts) == 3  # the probe re-acquires too

    # Nothing secret in logs, repr, str, state or the request URLs we logged.
    payload = token.removeprefix("k8s-aws-v1.")
    signed_url = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    signature = parse_qs(urlsplit(signed_url).query)["X-Amz-Signature"][0]
    secrets = [*JWTS, *COOKIES, RAY_TOKEN, token, signature]
    outputs = [caplog.text, repr(access), str(access), json.dumps(vars(access), default=str)]
    assert "GET /bearer-auth?token=***" in caplog.text  # urllib3 did log the URL, redacted
    for text, secret in itertools.product(outputs, secrets):
        assert secret not in text


def test_connection_url_arrives_after_a_poll(servers: Any) -> None:
    kube, dash_srv, dash = servers
    dash.valid_jwts.add(JWTS[0])
    kube.route("POST", CONN, Response(201, connection(None)))
    gets = iter([connection(None), connection(f"{dash_srv.url}/?token={JWTS[0]}")])
    kube.route("GET", CONN_ONE, lambda _r, m: Response(200, next(gets)) if m["name"] == "maze-x7k2p" else k8s_status(404, "NotFound", "x"))
    slept: list[float] = []
    access = HyperPodDashboard("maze", api_client=kube_api_client(kube.url), poll_interval_s=0.5, sleep=slept.append)
    access.connect()
    assert slept == [0.5, 0.5] and access.cookies() == {"ray_session": COOKIES[0]}


@pytest.mark.parametrize(
    ("response", "match"),
    [
        (
            k8s_status(
                403,
                "Forbidden",
                'admission webhook "vraydashboardconnection.kb.io" denied the request: only the creator '
                "of RayCluster default/maze can create a dashboard connection",
            ),
            r"not allowed to open the dashboard of RayCluster default/maze: .*only the cluster's creator connect",
        ),
        (
            k8s_status(404, "NotFound", "the server could not find the requested resource"),
            r"RayDashboardConnection API .* is not installed; install the HyperPod Ray Endpoint Operator",
        ),
        (
            k8s_status(404, "NotFound", 'rayclusters.ray.io "maze" not found', {"name": "maze", "group": "ray.io", "kind": "rayclusters"}),
            r"RayCluster default/maze not found: rayclusters.ray.io \"maze\" not found",
        ),
        (k8s_status(401, "Unauthorized", "Unauthorized"), r"rejected the credentials \(expired EKS token\?\)"),
    ],
)
def test_connection_errors(servers: Any, response: Response, match: str) -> None:
    kube, _, _ = servers
    kube.route("POST", CONN, response)
    access = HyperPodDashboard("maze", api_client=kube_api_client(kube.url))
    with pytest.raises(ClusterError, match=match):
        access.job_client()


def test_missing_connection_url(servers: Any) -> None:
    kube, _, _ = servers
    kube.route("POST", CONN, Response(201, connection(None)))
    kube.route("GET", CONN_ONE, Response(200, connection(None)))
    access = HyperPodDashboard("maze", api_client=kube_api_client(kube.url), wait_s=0.05, poll_interval_s=0.01)
    with pytest.raises(ClusterError, match=r"has no connection URL after 0.05 s .*Endpoint Operator running"):
        access.connect()


def test_login_403_is_creator_only_and_expired_jwt_is_clear(servers: Any) -> None:
    kube, dash_srv, _ = servers
    kube.route("POST", CONN, Response(201, connection(f"{dash_srv.url}/?token={JWTS[0]}")))
    access = HyperPodDashboard("maze", api_client=kube_api_client(kube.url))
    with pytest.raises(ClusterError, match=r"answered 401 without a 'ray_session' cookie; the token may have expired") as info:
        access.connect()  # the JWT was never made valid at the dashboard
    assert JWTS[0] not in str(info.value)
    dash_srv.route("GET", "/bearer-auth", Response(403, b"Forbidden"))
    with pytest.raises(ClusterError, match=r"refused the login \(403\): only the creator of RayCluster default/maze"):
        access.connect()


def test_plain_http_to_a_remote_host_is_refused(servers: Any) -> None:
    kube, _, _ = servers
    kube.route("POST", CONN, Response(201, connection(f"http://dashboard.example.com/?token={JWTS[0]}")))
    with pytest.raises(ClusterError, match=r"refusing to send a dashboard token over http:// to dashboard.example.com"):
        HyperPodDashboard("maze", api_client=kube_api_client(kube.url)).connect()


# ----- port-forward + Ray token -------------------------------------------------------------------
def test_port_forward_access_with_ray_token(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeHTTPServer() as dash:

        def guarded(body: Any) -> Any:
            return lambda r, _m: (
                Response(200, body) if r.headers.get("authorization") == f"Bearer {RAY_TOKEN}" else Response(401, b"Unauthorized")
            )

        dash.route("GET", "/api/version", guarded(VERSION))
        dash.route("GET", "/api/jobs/", guarded([]))
        access = PortForwardDashboard(dash.url, ray_token=RAY_TOKEN)
        assert access.call(lambda c: c.list_jobs()) == [] and access.probe() == 200
        with pytest.raises(ClusterError, match="rejected the Ray token; read it again with read_ray_token"):
            PortForwardDashboard(dash.url, ray_token="wrong-token").job_client()
        assert PortForwardDashboard(dash.url).probe() == 401
    assert RAY_TOKEN not in caplog.text and RAY_TOKEN not in repr(access)
    assert repr(access) == f"PortForwardDashboard(address='{dash.url}', ray_token=set)"


def test_read_ray_token_from_kuberay_secret() -> None:
    with FakeHTTPServer() as kube:
        kube.route(
            "GET",
            r"/api/v1/namespaces/default/secrets/maze",
            Response(
                200,
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "Opaque",
                    "metadata": {"name": "maze", "namespace": "default", "labels": {"ray.io/cluster": "maze"}},
                    "data": {"auth_token": base64.b64encode(RAY_TOKEN.encode()).decode()},
                },
            ),
        )
        kube.route("GET", r"/api/v1/namespaces/default/secrets/locked", k8s_status(403, "Forbidden", 'secrets "locked" is forbidden'))
        api = kube_api_client(kube.url)
        token = read_ray_token(api, "maze")
        assert token.get_secret_value() == RAY_TOKEN and RAY_TOKEN not in repr(token)
        with pytest.raises(ClusterError, match=r"Secret default/gone not found: is the RayCluster running with auth_mode='token'"):
            read_ray_token(api, "gone")
        with pytest.raises(ClusterError, match=r"reading Secret default/locked is forbidden"):
            read_ray_token(api, "locked")
    assert redact(f"Bearer {RAY_TOKEN}") == "Bearer ***"


def test_port_forward_runs_kubectl_and_stops_it(tmp_path: Path) -> None:
    args_file = tmp_path / "args"
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(f'#!/bin/sh\necho "$@" > {args_file}\necho "Forwarding from 127.0.0.1:18265 -> 8265"\nexec sleep 30\n')
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    with port_forward("maze", "team-a", local_port=18265, kubectl=str(kubectl)) as address:
        assert address == "http://127.0.0.1:18265"
    assert args_file.read_text().split() == ["port-forward", "-n", "team-a", "--address", "127.0.0.1", "svc/maze-head-svc", "18265:8265"]
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'error: services \"maze-head-svc\" not found'\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IEXEC)
    with (
        pytest.raises(ClusterError, match=r"kubectl port-forward exited with 1; is maze-head-svc in namespace default"),
        port_forward("maze", kubectl=str(broken)),
    ):
        pass


def test_wait_ready_with_access_probe(servers: Any) -> None:
    kube, _, dash = servers
    issue_urls(kube, dash)
    kube.route("GET", r"/apis/ray\.io/v1/namespaces/default/rayclusters/maze", Response(200, load_fixture("ready.json")))
    kube.route(
        "GET", r"/api/v1/namespaces/default/pods", Response(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []})
    )
    kube.route(
        "GET", r"/api/v1/namespaces/default/events", Response(200, {"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": []})
    )
    api = kube_api_client(kube.url)
    access = HyperPodDashboard("maze", api_client=api)
    report = RayClusterClient(api).wait_ready("maze", timeout_s=5, dashboard=access.probe)
    assert report.usable and dash.logins == 1
