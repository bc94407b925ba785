"""In-process fakes for what cannot run here: the Kubernetes/EKS API and the HyperPod dashboard proxy.

`FakeHTTPServer` is a real HTTP server on 127.0.0.1 (``http.server`` in a thread). Tests
register routes that answer with recorded response shapes (Kubernetes ``Status`` bodies,
KubeRay 1.7 RayCluster objects, the Ray dashboard's ``/api/version``), so the real
``kubernetes`` client, ``requests`` and Ray's ``JobSubmissionClient`` are exercised end to end.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from kubernetes import client as k8s

__all__ = ["FakeHTTPServer", "Request", "Response", "k8s_status", "kube_api_client", "load_fixture"]

FIXTURES = Path(__file__).resolve().parent / "cluster" / "fixtures"


def load_fixture(name: str) -> Any:
    """A JSON fixture from ``tests/cluster/fixtures``."""
    return json.loads((FIXTURES / name).read_text())


@dataclass
class Request:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Response:
    """What a route answers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request, re.Match[str]], Response]


def k8s_status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> Response:
    """A ``metav1.Status`` failure body as the API server sends it."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}
    body["details"] = details if details is not None else {}
    return Response(code, body)


class FakeHTTPServer:
    """A threaded HTTP server on 127.0.0.1 with regex routes; use as a context manager."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.requests: list[Request] = []
        fake = self

        class _H(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                fake.requests.append(req)
                resp = fake._dispatch(req)
                payload = b"" if resp.body is None else (resp.body if isinstance(resp.body, bytes) else json.dumps(resp.body).encode())
                self.send_response(resp.status)
                headers = {"Content-Type": "application/json", **resp.headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def route(self, method: str, pattern: str, handler: Handler | Response) -> None:
        """Answer ``method`` on paths fully matching ``pattern``; later routes win."""
        fn = handler if callable(handler) else (lambda _r, _m, resp=handler: resp)
        self.routes.insert(0, (method, re.compile(pattern), fn))

    def _dispatch(self, req: Request) -> Response:
        for method, pattern, fn in self.routes:
            m = pattern.fullmatch(req.path)
            if m and method == req.method:
                return fn(req, m)
        return k8s_status(404, "NotFound", "the server could not find the requested resource")

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def kube_api_client(url: str, token: str = "fake-k8s-token") -> k8s.ApiClient:
    """A real ``kubernetes`` ApiClient pointed at a fake server (bearer auth, no TLS)."""
    cfg = k8s.Configuration()
    cfg.host = url
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    cfg.retries = 0
    return k8s.ApiClient(cfg)
