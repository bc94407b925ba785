"""Every socket the local cluster listens on, with serving on: loopback, token-protected, or a
documented read-only metrics endpoint (docs/local-cluster.md, "What listens where").

Field report (issue 14, item 10): a Ray Serve replica's gRPC server listened on all interfaces with
no token and unpickled request bytes. Each listener is probed from the machine's own non-loopback
address without the token: HTTP ``GET /metrics`` and one real method of every Ray gRPC service.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import socket
from pathlib import Path

import grpc
import psutil
import pytest
import requests

from hyperpod_rl.cluster.local import find_free_port
from hyperpod_rl.serve.local import deploy_local, shutdown_local

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.job]

DOC = Path(__file__).resolve().parents[1] / "docs" / "local-cluster.md"
LOOPBACK = ("127.0.0.1", "::1")
#: Roles the doc lists as read-only Prometheus endpoints that answer without the token.
METRICS_ROLES = ("dashboard metrics", "metrics export", "autoscaler metrics")


def _grpc_methods() -> dict[str, str]:
    """One real method per gRPC service Ray defines (generated stubs), plus the C++-only object manager."""
    import ray.core.generated as generated
    import ray.serve.generated as serve_generated

    methods: dict[str, str] = {"ray.rpc.ObjectManagerService": "/ray.rpc.ObjectManagerService/Push"}
    for package in (generated, serve_generated):
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.endswith("_pb2_grpc"):
                source = Path(importlib.import_module(f"{package.__name__}.{info.name}").__file__).read_text()
                for path in re.findall(r"'(/ray\.[\w.]+/\w+)'", source):
                    methods.setdefault(path.split("/")[1], path)
    return methods


def _cluster_processes(cluster) -> dict[int, str]:
    """pid -> command line of every process of this cluster (found by its --temp-dir) and their children."""
    out: dict[int, str] = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if cluster.state.temp_dir in " ".join(proc.info["cmdline"] or []):
                for p in (proc, *proc.children(recursive=True)):
                    out[p.pid] = " ".join(p.cmdline())[:80]
        except psutil.Error:
            continue
    return out


def _machine_address() -> str:
    """The machine's own non-loopback IPv4 address (what a neighbour on the network would reach)."""
    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family == socket.AF_INET and not addr.address.startswith("127."):
                return addr.address
    pytest.fail("the machine has no non-loopback IPv4 address to probe from")


def _probe(host: str, port: int, methods: dict[str, str]) -> tuple[str, str]:
    """``(verdict, detail)``: ``token`` (refused without it), ``metrics`` (Prometheus text), ``open`` or ``closed``."""
    try:
        resp = requests.get(f"http://{host}:{port}/metrics", timeout=3)
        if resp.status_code in (401, 403):
            return "token", f"HTTP {resp.status_code}"
        if resp.status_code == 200 and resp.text.startswith("# HELP"):
            return "metrics", "Prometheus text"
        return "open", f"HTTP {resp.status_code} {resp.text[:60]!r}"
    except requests.ConnectionError:
        pass  # not HTTP/1: try gRPC
    except requests.RequestException as err:
        return "open", f"HTTP {type(err).__name__}"
    implemented: dict[str, str] = {}
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        for service, method in methods.items():
            call = channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            try:
                call(b"", timeout=3)
                implemented[service] = "OK"
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNIMPLEMENTED:
                    implemented[service] = f"{err.code().name}: {str(err.details())[:60]}"
    if not implemented:
        return "closed", "no Ray gRPC service and no HTTP"
    if all(v.startswith("UNAUTHENTICATED") for v in implemented.values()):
        return "token", ", ".join(sorted(implemented))
    return "open", "; ".join(f"{k} -> {v}" for k, v in sorted(implemented.items()) if not v.startswith("UNAUTHENTICATED"))


def test_no_listener_serves_without_the_token_off_loopback(local_cluster, tiny_setup):
    """Slow: a job and a Serve app run so that every listener of the cluster is up, then each is probed."""
    port = find_free_port()
    url = deploy_local(local_cluster.job_client(), tiny_setup["model_dir"], {}, port=port)
    try:
        assert requests.get(f"{url}/healthz", timeout=10).status_code == 200
        procs = _cluster_processes(local_cluster)
        replicas = [pid for pid, cmd in procs.items() if "ServeReplica" in cmd]
        assert replicas, "the serving replica is not among the cluster's processes"
        machine = _machine_address()
        methods = _grpc_methods()
        verdicts: list[tuple[str, int, str, str, str]] = []
        for conn in psutil.net_connections(kind="inet"):
            if conn.status != psutil.CONN_LISTEN or conn.pid not in procs:
                continue
            ip, lport = conn.laddr.ip, conn.laddr.port
            if ip in LOOPBACK or ip.startswith("::ffff:127."):  # IPv4 loopback on a dual-stack socket
                verdicts.append((ip, lport, procs[conn.pid], "loopback", ""))
                continue
            verdict, detail = _probe(machine if ip in ("0.0.0.0", "::") else ip, lport, methods)
            verdicts.append((ip, lport, procs[conn.pid], verdict, detail))
        table = "\n".join(f"{ip}:{p} {cmd[:50]} -> {v} {d}" for ip, p, cmd, v, d in verdicts)
        assert len(verdicts) >= 8, table
        assert not [v for v in verdicts if v[3] == "open"], f"a listener answers without the token off loopback:\n{table}"
        assert "loopback" in {v[3] for v in verdicts if "ServeReplica" in v[2]}, table
        assert all(v[3] != "open" for v in verdicts if "ServeReplica" in v[2]), table
        metrics = [v for v in verdicts if v[3] == "metrics"]
        assert 1 <= len(metrics) <= len(METRICS_ROLES), table  # only the documented read-only endpoints
        assert local_cluster.state.metrics_export_port in {v[1] for v in metrics}, table
        # The HTTP route and the dashboard stay on loopback.
        assert any(v[1] == port and v[3] == "loopback" for v in verdicts), table
        assert any(v[1] == int(local_cluster.dashboard_url.rsplit(":", 1)[1]) and v[3] == "loopback" for v in verdicts), table
    finally:
        shutdown_local(local_cluster.job_client())


def test_the_doc_lists_what_the_test_allows():
    text = DOC.read_text()
    section = text.split("## What listens where", 1)[1].split("\n## ", 1)[0]
    for role in METRICS_ROLES:
        assert role in section, role
    for phrase in ("Serve replica gRPC", "127.0.0.1", "UNAUTHENTICATED", "401", "tests/test_local_security.py"):
        assert phrase in section, phrase
