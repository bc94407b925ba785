"""Issue 14, item 9: nothing left running.

``.ci/leftovers.py`` (the check ``make test`` ends with, and ``tests/conftest.py`` runs at the end
of every pytest session) finds every process that inherited the run's ``HPRL_RUN_TAG``. Here: it
reports a tagged process and only that one, and a benchmark killed half-way (SIGTERM, as
``timeout`` sends) still stops the local Ray cluster it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHECK = REPO / ".ci" / "leftovers.py"


@pytest.fixture
def leftovers_mod():
    """``.ci/leftovers.py`` as a module (tests/conftest.py loads it under this name too)."""
    import importlib.util

    name = "hprl_ci_leftovers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, CHECK)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _spawn(tag: str) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "120"], env={**os.environ, "HPRL_RUN_TAG": tag})


def test_a_tagged_process_is_reported_until_it_stops(leftovers_mod):
    tag, other = f"t-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    mine, theirs = _spawn(tag), _spawn(other)
    try:
        found = leftovers_mod.leftovers(tag)
        assert [(p.pid, p.name) for p in found] == [(mine.pid, "sleep")]
        proc = subprocess.run([sys.executable, str(CHECK), "--tag", tag, "--wait-s", "1"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        assert f"{mine.pid}" in proc.stdout and "still running" in proc.stdout
        assert f"{theirs.pid}" not in proc.stdout  # another run's process is not ours to report
    finally:
        for p in (mine, theirs):
            p.kill()
            p.wait()
    assert leftovers_mod.wait_for_none(tag, 10) == []
    proc = subprocess.run([sys.executable, str(CHECK), "--tag", tag, "--wait-s", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert "no process of this run is left" in proc.stdout


def _noop() -> None:
    pass


def test_the_sessions_own_resource_tracker_is_spared_and_a_tagged_process_is_not(leftovers_mod, monkeypatch):
    """A spawn context starts multiprocessing's resource tracker, which lives as long as this process
    (and carries its tag); it is not left behind, a tagged process beside it is."""
    import multiprocessing as mp

    tag = f"t-{uuid.uuid4().hex}"
    monkeypatch.setenv("HPRL_RUN_TAG", tag)
    ctx = mp.get_context("spawn")
    child = ctx.Process(target=_noop)
    child.start()
    child.join(60)
    mine = _spawn(tag)
    try:
        found = leftovers_mod.leftovers(tag)
        assert [p.pid for p in found] == [mine.pid]
    finally:
        mine.kill()
        mine.wait()


def test_the_check_needs_a_tag():
    env = {k: v for k, v in os.environ.items() if k != "HPRL_RUN_TAG"}
    proc = subprocess.run([sys.executable, str(CHECK)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "no tag" in proc.stdout


@pytest.mark.ray
@pytest.mark.slow
def test_a_benchmark_killed_half_way_stops_its_cluster(leftovers_mod, tmp_path):
    """benchmarks/serve_load.py (self-contained) gets SIGTERM once its cluster's first processes
    run (while `ray start` runs, or later): what it started is stopped (start_local_cluster stops a
    half-started cluster, the benchmark's finally blocks a started one), so no process is left."""
    tag = f"bench-{uuid.uuid4().hex}"
    env = {**os.environ, "HPRL_RUN_TAG": tag, "HPRL_RESULTS_DIR": str(tmp_path)}
    bench = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.serve_load", "--clients", "1", "--requests", "1", "--single-requests", "1"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 400
        while not any(p.name in ("gcs_server", "raylet") for p in leftovers_mod.leftovers(tag)):  # its cluster is starting or up
            assert bench.poll() is None, bench.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the benchmark's cluster did not start"
            time.sleep(1)
        bench.send_signal(signal.SIGTERM)
        out = bench.communicate(timeout=300)[0]
        assert bench.returncode != 0, out[-2000:]
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    left = leftovers_mod.wait_for_none(tag, 60)
    assert left == [], [str(p) for p in left]
