"""The suite's order under pytest-xdist, run for real: under ``-n 2 --dist loadgroup
--no-loadscope-reorder`` (as ``make test`` runs) the tests that use the session's cluster (the
``local_cluster`` fixture) are dealt out to both workers, each starting its own session cluster
once; on each worker the ``slow`` tests run first; the browser tests run next, back to back on one
worker, while the other worker runs the rest; and no two browser tests run at the same moment. This
inner session runs the suite's own hooks and fixtures (tests/conftest.py) with stand-in tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONFTEST = """
import json, os, time, uuid
from pathlib import Path
import pytest
from tests.conftest import _one_browser_at_a_time, pytest_collection_modifyitems, pytest_itemcollected  # the suite's own

OUT = Path(os.environ["GROUPS_OUT"])

@pytest.fixture(scope="session")
def local_cluster():
    (OUT / f"cluster-{uuid.uuid4().hex}.worker").write_text(os.environ.get("PYTEST_XDIST_WORKER", ""))
    yield "stand-in"  # the order is under test here, not the cluster

@pytest.fixture(autouse=True)
def _record(request):
    start = time.time()
    yield
    (OUT / (request.node.name + ".json")).write_text(json.dumps({
        "worker": os.environ.get("PYTEST_XDIST_WORKER"), "cluster": "local_cluster" in request.fixturenames,
        "browser": request.node.get_closest_marker("browser") is not None,
        "slow": request.node.get_closest_marker("slow") is not None, "start": start, "end": time.time()}))
"""

#: Collected first, they must run after the slow tests, together on one worker, one at a time.
BROWSER = """
import time, pytest

@pytest.mark.browser
@pytest.mark.parametrize("n", range(4))
def test_browser(local_cluster, n):
    time.sleep(0.6)
"""

#: Collected last, they must run first on their worker.
SLOW = """
import time, pytest

@pytest.mark.slow
@pytest.mark.parametrize("n", range(4))
def test_slow(local_cluster, n):
    time.sleep(0.3)
"""

#: One slow test and three others sharing a module fixture: one worker runs all four together,
#: and the fixture is built once.
SHARED = """
import os, time, uuid, pytest
from pathlib import Path

@pytest.fixture(scope="module")
def app():
    (Path(os.environ["GROUPS_OUT"]) / f"app-{uuid.uuid4().hex}.built").write_text("")
    yield "app"

@pytest.mark.slow
def test_shared_slow(local_cluster, app):
    time.sleep(0.3)

@pytest.mark.parametrize("n", range(3))
def test_shared(app, n):
    time.sleep(0.2)
"""

TESTS = """
import time

def test_ray_a{n}(local_cluster):
    time.sleep(0.2)

def test_ray_b{n}(local_cluster):
    time.sleep(0.2)

def test_cpu_{n}():
    time.sleep(0.2)
"""


def _inner_pytest(suite: Path, env: dict[str, str], *args: str) -> None:
    """Run pytest (``args`` added) on the stand-in ``suite`` in a process of its own; it must pass."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args, "-p", "no:cacheprovider", "-p", "no:randomly", str(suite)],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_cluster_tests_spread_slow_first_then_browser_on_one_worker(tmp_path: Path) -> None:
    suite, out = tmp_path / "suite", tmp_path / "out"
    suite.mkdir()
    out.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    browser: a browser test\n    ray: uses the cluster\n    slow: long\n")
    (suite / "test_a_browser.py").write_text(BROWSER)
    (suite / "test_z_slow.py").write_text(SLOW)
    for n in range(4):
        (suite / f"test_part{n}.py").write_text(TESTS.replace("{n}", str(n)))
    (suite / "test_part1_shared.py").write_text(SHARED)
    _inner_pytest(
        suite,
        {**os.environ, "PYTHONPATH": str(REPO), "GROUPS_OUT": str(out), "HPRL_RUN_TAG": "groups-inner"},
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "--no-loadscope-reorder",
    )
    ran = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert len(ran) == 24, sorted(ran)
    cluster_workers = sorted(r["worker"] for r in ran.values() if r["cluster"])
    assert set(cluster_workers) == {"gw0", "gw1"}, ran  # dealt out to both workers
    started = sorted(p.read_text() for p in out.glob("cluster-*.worker"))
    assert started == ["gw0", "gw1"], started  # one session cluster per worker, each started once
    shared = {name for name in ran if name.startswith("test_shared")}
    for worker in ("gw0", "gw1"):
        mine = sorted((name for name in ran if ran[name]["worker"] == worker), key=lambda name: ran[name]["start"])
        # slow first (a shared module's whole with its slow test), then the browser tests, then the rest
        kinds = [1 if ran[name]["browser"] else 0 if ran[name]["slow"] or name in shared else 2 for name in mine]
        assert kinds == sorted(kinds), (worker, mine)
    assert len(list(out.glob("app-*.built"))) == 1  # the module fixture, built once
    (worker,) = {ran[name]["worker"] for name in shared}  # one worker runs the module
    mine = [name for name in sorted(ran, key=lambda name: ran[name]["start"]) if ran[name]["worker"] == worker]
    at = mine.index("test_shared_slow")
    assert set(mine[at : at + 4]) == shared, mine  # together, from its slow test on
    browser = sorted((r for r in ran.values() if r["browser"]), key=lambda r: r["start"])
    assert all(a["end"] <= b["start"] for a, b in zip(browser, browser[1:], strict=False)), browser  # never two at once
    (runner,) = {r["worker"] for r in browser}  # one worker runs them all, back to back ...
    other = [r for r in ran.values() if r["worker"] != runner and not r["slow"] and not r["browser"]]
    assert any(browser[0]["start"] < r["start"] < browser[-1]["end"] for r in other), other  # ... while the other works on


THREADS_CONFTEST = """
import json, os
from pathlib import Path
from tests.conftest import _share_the_cores  # the suite's own

def pytest_configure(config):
    _share_the_cores(config)
"""

THREADS_TEST = """
import json, os
from pathlib import Path

def test_threads():
    import torch
    from hyperpod_rl.jobs import default_job_threads
    Path(os.environ["GROUPS_OUT"], os.environ.get("PYTEST_XDIST_WORKER", "main") + ".json").write_text(json.dumps(
        {"env": os.environ.get("OMP_NUM_THREADS"), "torch": torch.get_num_threads(), "job": default_job_threads()}))
"""


def _threads_seen(tmp_path: Path, *args: str, env_extra: dict[str, str]) -> dict[str, dict]:
    suite, out = tmp_path / "suite", tmp_path / "out"
    suite.mkdir(parents=True)
    out.mkdir()
    (suite / "conftest.py").write_text(THREADS_CONFTEST)
    (suite / "test_t.py").write_text(THREADS_TEST)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS" and not k.startswith("PYTEST_XDIST")}
    env.update(PYTHONPATH=str(REPO), GROUPS_OUT=str(out), HPRL_RUN_TAG="threads-inner", **env_extra)
    _inner_pytest(suite, env, *args)
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}


def test_two_workers_share_the_cores_and_their_jobs_get_the_same_count(tmp_path: Path) -> None:
    """Under ``-n 2`` each worker, torch in it and the jobs it submits get ``cores // 2`` threads (at least 1);
    one process, or a user's own OMP_NUM_THREADS, is left alone."""
    share = str(max(1, (os.cpu_count() or 1) // 2))
    (seen,) = _threads_seen(tmp_path / "n2", "-n", "2", env_extra={}).values()  # one test: one worker ran it
    assert seen == {"env": share, "torch": int(share), "job": int(share)}, seen
    (alone,) = _threads_seen(tmp_path / "n0", env_extra={}).values()
    assert alone["env"] is None and alone["job"] == (os.cpu_count() or 1), alone
    own = "2" if share != "2" else "1"  # at most the cores: torch caps its count there
    (mine,) = _threads_seen(tmp_path / "own", "-n", "2", env_extra={"OMP_NUM_THREADS": own}).values()
    assert mine == {"env": own, "torch": int(own), "job": int(own)}, mine
