"""Fixtures for the JupyterLab extension's server tests (pytest-jupyter's ``jp_fetch``).

The server extension is imported from the source tree (``labextension/``), so these tests need no
build; the browser and wheel tests use the built wheel. pytest-jupyter's fixtures are imported
here, not registered as a plugin, so its autouse fixtures stay inside this directory.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "labextension"))

from pytest_jupyter.jupyter_core import *  # noqa: E402,F403
from pytest_jupyter.jupyter_server import *  # noqa: E402,F403

#: A token shaped like the local cluster's (64 hex chars); the secret scan looks for it.
FAKE_TOKEN = "f00d" * 16


@pytest.fixture
def hprl_home(tmp_path, monkeypatch):
    """An isolated hyperpod-rl data dir for one test (storage root and ledger inside)."""
    home = tmp_path / "hprl-home"
    home.mkdir()
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(home))
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    return home


@pytest.fixture
def jp_server_config():  # noqa: F811 - replaces pytest-jupyter's
    """A server that loads only this extension and allows no unauthenticated access."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"hyperpod_rl_jupyterlab": True},
            "allow_unauthenticated_access": False,
        },
        "HyperpodRL": {"request_timeout_s": 2.0},
    }


def write_cluster_state(home: Path, port: int, token: str = FAKE_TOKEN) -> Path:
    """A ``local-cluster.json`` as hyperpod-rl writes it (mode 0600), for a cluster at ``port``."""
    path = home / "local-cluster.json"
    path.write_text(
        json.dumps(
            {
                "gcs_address": "127.0.0.1:1",
                "dashboard_url": f"http://127.0.0.1:{port}",
                "metrics_export_port": 1,
                "started_at": 0.0,
                "python": sys.executable,
                "temp_dir": "/tmp/none",
                "worker_nodes": 0,
                "token": token,
            }
        )
    )
    path.chmod(0o600)
    return path
