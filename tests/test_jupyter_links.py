"""Where the notebook runs: the Jupyter server behind the kernel, Studio's metadata, and links a browser there can open."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hyperpod_rl.jupyter import STUDIO_BASE_URL, JupyterServer, browser_link, current_server, studio_space


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HYPERPOD_RL_JUPYTER_BASE_URL", raising=False)
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("HYPERPOD_RL_STUDIO_METADATA", str(tmp_path / "absent.json"))


def write_server(runtime: Path, pid: int, base_url: str) -> None:
    runtime.mkdir(exist_ok=True)
    info = {"url": f"http://127.0.0.1:8888{base_url}", "base_url": base_url, "token": "s3cret", "pid": pid, "port": 8888}
    (runtime / f"jpserver-{pid}.json").write_text(json.dumps(info))


def test_local_ports_go_through_the_server_proxy() -> None:
    server = JupyterServer(base_url="/jupyterlab/default/")
    assert browser_link("http://127.0.0.1:8265", "Ray dashboard", server=server).href == "/jupyterlab/default/proxy/8265/"
    assert browser_link("http://localhost:8000/v1/models", "models", server=server).href == "/jupyterlab/default/proxy/8000/v1/models"
    remote = "https://g-abc.grafana-workspace.us-west-2.amazonaws.com/d/ray"
    assert browser_link(remote, "Grafana", server=server).href == remote  # remote links pass through
    assert browser_link("http://127.0.0.1:8265", "Ray dashboard", server=None).href == "http://127.0.0.1:8265"  # no Jupyter: as is
    html = browser_link("http://127.0.0.1:8265", "Ray <dashboard>", note="token", server=server).html()
    assert html.startswith("<a href='/jupyterlab/default/proxy/8265/' target='_blank'") and "Ray &lt;dashboard&gt;" in html


def test_the_kernel_finds_its_own_server_by_parent_pid(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    write_server(runtime, os.getpid(), "/jupyterlab/default/")
    write_server(runtime, os.getppid(), "/other/")
    assert current_server() is None  # two live servers and no parent pid: no guessing
    monkeypatch.setenv("JPY_PARENT_PID", str(os.getpid()))
    server = current_server()
    assert server is not None and server.base_url == "/jupyterlab/default/" and server.url.endswith("/jupyterlab/default/")
    assert "s3cret" not in repr(server) and server.proxy_path(8265) == "/jupyterlab/default/proxy/8265/"
    (runtime / f"jpserver-{os.getppid()}.json").unlink()
    (runtime / "jpserver-999999999.json").write_text(json.dumps({"pid": 999999999, "base_url": "/dead/"}))  # a dead server is ignored
    monkeypatch.delenv("JPY_PARENT_PID")
    assert current_server().base_url == "/jupyterlab/default/"


def test_studio_metadata_and_a_studio_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert studio_space() is None and current_server() is None
    meta = tmp_path / "resource-metadata.json"
    meta.write_text(json.dumps({"AppType": "JupyterLab", "DomainId": "d-abc123", "SpaceName": "alice", "ResourceName": "default"}))
    monkeypatch.setenv("HYPERPOD_RL_STUDIO_METADATA", str(meta))
    space = studio_space()
    assert space is not None and (space.domain_id, space.space_name, space.app_name, space.execution_role_arn) == (
        "d-abc123",
        "alice",
        "default",
        "",
    )
    assert current_server() == JupyterServer(base_url=STUDIO_BASE_URL)  # no runtime file: Studio's known base URL
    meta.write_text("not json")
    assert studio_space() is None
    monkeypatch.setenv("HYPERPOD_RL_JUPYTER_BASE_URL", "custom/base")
    assert current_server().base_url == "/custom/base/"


@pytest.mark.ray
def test_every_local_dashboard_line_has_the_proxy_path(local_cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """`local start`, `local status`, doctor's local-cluster line and quickstart's cluster line, in a Studio space."""
    from typer.testing import CliRunner

    from hyperpod_rl.cli import app
    from hyperpod_rl.quickstart import _dashboard_link
    from hyperpod_rl.readiness import doctor

    monkeypatch.setenv("HYPERPOD_RL_JUPYTER_BASE_URL", STUDIO_BASE_URL)
    port = int(local_cluster.dashboard_url.rsplit(":", 1)[1])
    proxied = f"/jupyterlab/default/proxy/{port}/"
    for command in (["local", "start"], ["local", "status"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 0, result.output
        assert f"in this JupyterLab's browser tab: {proxied}" in " ".join(result.output.split()), result.output
    assert doctor(aws=False)["Local cluster"].detail == f"up, dashboard {proxied}"
    assert _dashboard_link(local_cluster.dashboard_url).endswith(f"(in this JupyterLab's browser tab: {proxied})")
    monkeypatch.delenv("HYPERPOD_RL_JUPYTER_BASE_URL")  # a plain terminal: the address as it is
    assert _dashboard_link(local_cluster.dashboard_url) == local_cluster.dashboard_url
