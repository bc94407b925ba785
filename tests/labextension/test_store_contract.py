"""Where the extension looks agrees with hyperpod-rl's own rules (``hyperpod_rl.paths``, ``ledger_path``),
and the status rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from hyperpod_rl_jupyterlab import store as ext_store
from hyperpod_rl_jupyterlab.status import derive_status

from hyperpod_rl import paths
from hyperpod_rl.ledger import ledger_path


@pytest.mark.parametrize("storage", [None, "fsx"])
@pytest.mark.parametrize("ledger", [None, "team.sqlite"])
def test_locations_match_hyperpod_rl(hprl_home, tmp_path, monkeypatch, storage, ledger):
    if storage:
        monkeypatch.setenv("HYPERPOD_RL_STORAGE", str(tmp_path / storage))
    if ledger:
        monkeypatch.setenv("HYPERPOD_RL_LEDGER", str(tmp_path / ledger))
    assert ext_store.data_dir() == paths.data_dir() == hprl_home
    assert ext_store.storage_root() == paths.storage_root()
    assert ext_store.ledger_path() == ledger_path()
    assert ext_store.storage_root("/elsewhere") == Path("/elsewhere")


def test_default_data_dir_is_platformdirs_like_hyperpod_rl(monkeypatch):
    monkeypatch.delenv("HYPERPOD_RL_HOME", raising=False)
    assert ext_store.data_dir() == paths.data_dir()


@pytest.mark.parametrize(
    ("kwargs", "status"),
    [
        ({"ray_status": "RUNNING", "manifest_status": "running", "submitted": True}, "running"),
        ({"ray_status": "PENDING", "manifest_status": None, "submitted": True}, "pending"),
        ({"ray_status": "STOPPED", "manifest_status": "failed", "submitted": True}, "stopped"),
        ({"ray_status": "FAILED", "manifest_status": "running", "submitted": True}, "failed"),
        ({"ray_status": "SUCCEEDED", "manifest_status": "succeeded", "submitted": True}, "succeeded"),
        ({"ray_status": None, "manifest_status": "succeeded", "submitted": True}, "succeeded"),
        ({"ray_status": None, "manifest_status": "stopped", "submitted": True}, "stopped"),
        ({"ray_status": None, "manifest_status": "running", "submitted": True}, "unknown"),
        ({"ray_status": None, "manifest_status": None, "submitted": True}, "unknown"),
        # every cluster answered and none knows the job: lost, as `hyperpod-rl job status` says LOST
        ({"ray_status": None, "manifest_status": "running", "submitted": True, "clusters_answered": True}, "lost"),
        ({"ray_status": None, "manifest_status": None, "submitted": True, "clusters_answered": True}, "lost"),
        ({"ray_status": None, "manifest_status": "succeeded", "submitted": True, "clusters_answered": True}, "succeeded"),
        ({"ray_status": None, "manifest_status": None, "submitted": False, "clusters_answered": True}, "created"),
        ({"ray_status": None, "manifest_status": None, "submitted": False}, "created"),
        ({"ray_status": None, "manifest_status": None, "submitted": False, "has_run_dir": False, "ledger_status": "failed"}, "failed"),
        ({"ray_status": None, "manifest_status": None, "submitted": False, "has_run_dir": False, "ledger_status": "running"}, "unknown"),
    ],
)
def test_status_rule(kwargs, status):
    got, detail = derive_status(**kwargs)
    assert got == status and detail


def test_sidebar_shows_what_the_cli_records(hprl_home):
    """A run stopped through ``hyperpod-rl job stop`` (or reconciled by ``runs list``) reads
    ``stopped`` in the sidebar with no cluster to ask; one still recorded ``running`` reads
    unknown there, as ``runs list`` says ``unknown (cluster not reachable)``."""
    from hyperpod_rl.cli.runs import UNREACHABLE, _shown_status
    from hyperpod_rl.runs import read_provenance, record_final_status, run_paths, update_provenance

    paths = run_paths("sidebar-stopped")
    update_provenance(paths.root, lambda _: {"run_id": paths.run_id, "status": "running"})
    manifest = read_provenance(paths.root)
    assert derive_status(ray_status=None, manifest_status=manifest["status"], submitted=True)[0] == "unknown"
    assert _shown_status(paths.run_id, manifest["status"], None) == UNREACHABLE  # None: no cluster reachable
    record_final_status(paths, "stopped", submission_id="hprl-sidebar-stopped-1", source="hyperpod-rl job stop")
    manifest = read_provenance(paths.root)
    status, detail = derive_status(ray_status=None, manifest_status=manifest["status"], submitted=True)
    assert status == "stopped" == _shown_status(paths.run_id, manifest["status"], None) and "manifest" in detail
