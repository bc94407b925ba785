"""The suite's pytest-xdist grouping, run for real: under ``-n 2 --dist loadgroup`` every test that
uses the session's cluster (the ``local_cluster`` fixture) runs on one worker, so one local Ray
cluster serves them one after another while the other worker takes the rest, and the browser tests
come last among them (once the other worker is done). A pytest whose
``Node.nodeid`` ignores what pytest-xdist writes (9.2 with xdist 3.8) dropped the group silently;
this inner session, with the suite's own collection hook, catches it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONFTEST = """
import json, os, time
from pathlib import Path
import pytest
from tests.conftest import pytest_collection_modifyitems, pytest_itemcollected  # the suite's hooks, alone

@pytest.fixture(scope="session")
def local_cluster():
    yield "stand-in"  # the grouping is under test here, not the cluster

@pytest.fixture(autouse=True)
def _record(request):
    out = Path(os.environ["GROUPS_OUT"]) / (request.node.name + ".json")
    out.write_text(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER"), "cluster": "local_cluster" in request.fixturenames,
                               "browser": request.node.get_closest_marker("browser") is not None, "t": time.time()}))
"""

#: First in the first file: collected first, it must still run after every other cluster test.
BROWSER = """
import pytest

@pytest.mark.browser
def test_browser_first(local_cluster):
    pass
"""

# two cluster tests, then one other, in each file: dealt out in turn without the group, the cluster
# tests would land on both workers
TESTS = """
import time

def test_ray_a{n}(local_cluster):
    time.sleep(0.2)

def test_ray_b{n}(local_cluster):
    time.sleep(0.2)

def test_cpu_{n}():
    time.sleep(0.2)
"""


def test_every_cluster_test_runs_on_one_worker(tmp_path: Path) -> None:
    suite, out = tmp_path / "suite", tmp_path / "out"
    suite.mkdir()
    out.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    browser: a browser test\n    ray: uses the cluster\n")
    (suite / "test_a_browser.py").write_text(BROWSER)
    for n in range(4):
        (suite / f"test_part{n}.py").write_text(TESTS.replace("{n}", str(n)))
    env = {**os.environ, "PYTHONPATH": str(REPO), "GROUPS_OUT": str(out), "HPRL_RUN_TAG": "groups-inner"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider", "-p", "no:randomly", str(suite)],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ran = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert len(ran) == 13, sorted(ran)
    cluster_workers = {r["worker"] for r in ran.values() if r["cluster"]}
    assert len(cluster_workers) == 1 and None not in cluster_workers, ran
    assert {r["worker"] for r in ran.values()} == {"gw0", "gw1"}, ran  # the others were spread
    browser = ran.pop("test_browser_first")
    assert browser["worker"] in cluster_workers and browser["t"] > max(r["t"] for r in ran.values() if r["cluster"]), (browser, ran)
