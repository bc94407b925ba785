"""Issue 14, item 9: nothing left running.

``.ci/leftovers.py`` (the check ``make test`` ends with, and ``tests/conftest.py`` runs at the end
of every pytest session) finds every process that inherited the run's ``HPRL_RUN_TAG``. Here: it
reports a tagged process and only that one, and a benchmark killed half-way (SIGTERM, as
``timeout`` sends) still stops the local Ray cluster it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
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
@pytest.mark.cluster
def test_a_benchmark_killed_half_way_stops_its_cluster(leftovers_mod, tmp_path):
    """benchmarks/serve_load.py (self-contained) gets SIGTERM once its cluster's first processes
    run (while `ray start` runs, or later): what it started is stopped (start_local_cluster stops a
    half-started cluster, the benchmark's finally blocks a started one), so no process is left,
    and its temporary folder (data, model, the cluster's home) is removed.

    Slow: the benchmark starts a cluster of its own before it is killed."""
    tag = f"bench-{uuid.uuid4().hex}"
    # its data, model and cluster home go to a folder of the temp directory (TMPDIR is inherited; a
    # deeper one would make Ray's socket paths too long), which must go with it
    ours = set(Path(tempfile.gettempdir()).glob("hprl-bench-serve-*"))
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
    assert set(Path(tempfile.gettempdir()).glob("hprl-bench-serve-*")) == ours  # issue 44: it left a folder of several MB there


def _git_repo(path: Path) -> Path:
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    (path / "docs" / "img").mkdir(parents=True)
    (path / "docs" / "img" / "shot.png").write_bytes(b"png-1")
    (path / "README.md").write_text("a\n")
    (path / ".gitignore").write_text("ignored/\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    return path


def test_a_changed_checkout_is_reported_file_by_file(leftovers_mod, tmp_path, monkeypatch):
    """Issue 44: a test run that rewrote a committed image, added a file or rewrote a file that was
    already changed is named; ignored files, and docs/img when screenshots are refreshed, are not."""
    repo = _git_repo(tmp_path / "repo")
    monkeypatch.delenv(leftovers_mod.TMPDIR_VAR, raising=False)
    (repo / "README.md").write_text("changed before the run\n")
    before = leftovers_mod.snapshot(repo)
    assert leftovers_mod.changes(before, leftovers_mod.snapshot(repo)) == []
    (repo / "docs" / "img" / "shot.png").write_bytes(b"png-2")
    (repo / "README.md").write_text("changed again by the run\n")
    (repo / "new.txt").write_text("x")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "results.xml").write_text("x")
    after = leftovers_mod.snapshot(repo)
    assert leftovers_mod.changes(before, after) == [
        "checkout: README.md (M) was changed by the run",
        "checkout: docs/img/shot.png (M) was changed by the run",
        "checkout: new.txt (??) was changed by the run",
    ]
    assert [c.split()[1] for c in leftovers_mod.changes(before, after, expected=("docs/img/",))] == ["README.md", "new.txt"]


def test_what_a_run_leaves_in_the_temp_directories_is_reported(leftovers_mod, tmp_path, monkeypatch):
    """New entries in the system temp directory (a path outside $TMPDIR) and in the run's own one
    (a benchmark's folder) are leftovers; pytest's tmp_path root, the local clusters' private
    directory, torch's compile cache and other runs' own directories are not."""
    system = tmp_path / "tmp"
    run_tmp = system / f"{leftovers_mod.RUN_TMP_PREFIX}mine"
    run_tmp.mkdir(parents=True)
    monkeypatch.setenv(leftovers_mod.TMPDIR_VAR, str(run_tmp))
    assert leftovers_mod.system_tmp_dir() == system
    repo = _git_repo(tmp_path / "repo")
    before = leftovers_mod.snapshot(repo)
    (system / "hard-coded-path").mkdir()
    (system / f"{leftovers_mod.RUN_TMP_PREFIX}another-run").mkdir()
    for name in ("hprl-bench-serve-x1y2", "pytest-of-root", f"hprl-{os.getuid()}", "torchinductor_root"):
        (run_tmp / name).mkdir()
    found = leftovers_mod.changes(before, leftovers_mod.snapshot(repo))
    assert found == [
        f"temp: {system / 'hard-coded-path'} was made by the run (write under $TMPDIR and remove it)",
        f"temp: {run_tmp / 'hprl-bench-serve-x1y2'} was left by a test or benchmark (remove what you make: tempfile.TemporaryDirectory, tmp_path)",
    ]
    assert leftovers_mod.changes(before, leftovers_mod.snapshot(repo), system_tmp=False) == found[1:]  # a pytest session's check
    assert leftovers_mod.changes(before, leftovers_mod.snapshot(repo), run_tmp=False) == found[:1]  # make test's, after pytest's
    leftovers_mod.remove_run_tmp(run_tmp)
    assert not run_tmp.exists()


def test_a_session_that_leaves_a_temp_folder_fails(tmp_path):
    """The pytest session hook (tests/conftest.py) runs the check: a session whose test leaves a
    folder in the temp directory fails and names it, one that removes it passes."""
    test_file = tmp_path / "test_leaves.py"
    test_file.write_text(
        "import os, pathlib, tempfile\n"
        "def test_leaves():\n"
        "    path = pathlib.Path(tempfile.mkdtemp(prefix='hprl-bench-leak-'))\n"
        "    (path / 'data.bin').write_bytes(b'x' * 1000)\n"
        "    if os.environ.get('CLEAN'):\n"
        "        import shutil; shutil.rmtree(path)\n"
    )
    run_tmp = tmp_path / "tmp" / "hprl-t-nested"
    run_tmp.mkdir(parents=True)
    env = {**os.environ, "HPRL_RUN_TMPDIR": str(run_tmp), "HPRL_RUN_TAG": f"t-{uuid.uuid4().hex}"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.conftest",
        "--rootdir",
        str(REPO),
        "-c",
        str(REPO / "pyproject.toml"),
        str(test_file),
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "this test session left 1 change(s) in the checkout or the temp directory:" in proc.stdout
    assert f"temp: {run_tmp}/hprl-bench-leak-" in proc.stdout and "1 passed" in proc.stdout
    for leak in run_tmp.glob("hprl-bench-leak-*"):
        shutil.rmtree(leak)
    proc = subprocess.run(cmd, cwd=REPO, env={**env, "CLEAN": "1"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert list(run_tmp.glob("hprl-bench-leak-*")) == []


def test_a_benchmark_scratch_dir_is_removed_when_it_is_killed(tmp_path):
    """benchmarks._record.scratch_dir: a benchmark's folder goes when the script exits, SIGTERM included."""
    code = (
        "import sys, time\n"
        "from benchmarks._record import exit_on_sigterm, scratch_dir\n"
        "exit_on_sigterm()\n"
        "path = scratch_dir('hprl-bench-test-')\n"
        "(path / 'model.bin').write_bytes(b'x' * 100_000)\n"
        "print(path, flush=True)\n"
        "time.sleep(120)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        path = Path(proc.stdout.readline().strip())
        assert path.parent == tmp_path and (path / "model.bin").is_file()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 128 + signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
    assert not path.exists()
