"""Shared fixtures: an isolated data dir per session, one real local Ray cluster, tiny data."""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _leftovers_module():
    """``.ci/leftovers.py``, the check ``make test`` ends with (one implementation for both)."""
    import sys

    name = "hprl_ci_leftovers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / ".ci" / "leftovers.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def pytest_configure(config: pytest.Config) -> None:
    """Tag this session: every process a test starts inherits ``HPRL_RUN_TAG`` (``make test``
    exports one; a bare ``pytest`` gets its own), so what is left can be found at the end."""
    os.environ.setdefault("HPRL_RUN_TAG", f"pytest-{uuid.uuid4().hex[:12]}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when a process it started is still running after every fixture was torn
    down (a Ray cluster, Serve replica, JupyterLab or Chromium left behind), listing them."""
    left = _leftovers_module().wait_for_none(os.environ["HPRL_RUN_TAG"], 30.0)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"{len(left)} process(es) started by this test session are still running:", *(f"  {p}" for p in left)]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test session gets its own HYPERPOD_RL_HOME (cluster state file, storage)."""
    home = Path(os.environ.get("HYPERPOD_RL_TEST_HOME") or tmp_path_factory.mktemp("hprl-home"))
    os.environ["HYPERPOD_RL_HOME"] = str(home)
    os.environ.pop("HYPERPOD_RL_STORAGE", None)
    return home


@pytest.fixture(scope="session")
def tiny_setup(tmp_path_factory: pytest.TempPathFactory):
    """A small maze dataset and the tiny base model, built once per session."""
    from hyperpod_rl.quickstart import QuickstartOptions, prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    storage = tmp_path_factory.mktemp("storage")
    opts = QuickstartOptions.build(train_rows=64, heldout_rows=16, max_turns=3, steps=2, group_size=2, prompts_per_step=2)
    data = prepare_dataset(opts, storage)
    model_dir, revision = prepare_base_model(opts, storage, read_rows(data.train))
    return {"opts": opts, "storage": storage, "data": data, "model_dir": model_dir, "revision": revision}


@pytest.fixture(scope="session")
def local_cluster(_isolated_home: Path):
    """One real local Ray cluster (token auth, 127.0.0.1) for the whole session."""
    from hyperpod_rl.cluster.local import start_local_cluster

    cluster = start_local_cluster()
    yield cluster
    cluster.stop()
