"""Ports of ours inside Ray's worker port range are refused before anything starts (reported: a
quickstart with ``--dashboard-port 18266`` failed inside ``ray start`` after about 30 s)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hyperpod_rl.cluster.local import RAY_WORKER_PORTS, check_port_outside_ray_workers, start_local_cluster
from hyperpod_rl.errors import ClusterError

REPO = Path(__file__).resolve().parents[2]


def test_the_range_is_rays_default_worker_ports_and_its_edges_are_refused():
    assert (RAY_WORKER_PORTS.start, RAY_WORKER_PORTS.stop - 1) == (10002, 19999)
    for port in (10002, 19999):
        with pytest.raises(
            ClusterError, match=rf"--port {port} is inside Ray's worker port range .*choose a port below 10002 or above 19999"
        ):
            check_port_outside_ray_workers(port, "--port")
    for port in (8265, 10001, 20000):
        check_port_outside_ray_workers(port, "--port")


def test_a_local_cluster_and_a_serve_deploy_refuse_such_a_port_before_starting_anything(tmp_path, monkeypatch):
    from hyperpod_rl.serve.local import deploy_local

    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))
    with pytest.raises(ClusterError, match="--dashboard-port 18266 is inside Ray's worker port range"):
        start_local_cluster(dashboard_port=18266)
    assert list(tmp_path.iterdir()) == []  # no cluster state, nothing started
    with pytest.raises(ClusterError, match="--port 12000 is inside Ray's worker port range"):
        deploy_local(None, tmp_path / "model", {"a": tmp_path / "adapter"}, port=12000)  # type: ignore[arg-type]


def test_a_ray_temp_dir_too_long_for_its_sockets_is_refused_with_the_fix():
    """Seen in CI: a long TMPDIR made Ray's plasma_store socket path exceed Linux's 107-byte limit and `ray start`
    failed with Ray's OSError; the start now refuses it first, naming the fix."""
    from hyperpod_rl.cluster.local import MAX_RAY_TEMP_DIR, check_socket_room
    from hyperpod_rl.errors import ClusterError

    check_socket_room("/tmp/hprl-t-ff9e8fdd/hprl-0/9379b281c8")  # make test's own: fits
    check_socket_room("/" + "d" * (MAX_RAY_TEMP_DIR - 1))
    with pytest.raises(ClusterError, match=r"must fit 107 bytes .* set TMPDIR to a shorter directory, e.g. TMPDIR=/tmp"):
        check_socket_room("/tmp/hprl-t-1796543531-ff9e8fdd/hprl-0/9379b281c8")
    with pytest.raises(ClusterError, match=str(MAX_RAY_TEMP_DIR + 1) + " bytes"):
        check_socket_room("/" + "d" * MAX_RAY_TEMP_DIR)


def test_the_longest_socket_is_the_dashboards_metrics_module():
    """Seen in a new user's `make test` with TMPDIR=/work/tn: this 42-byte temp dir passed the check (counted with
    plasma_store), then Ray's dashboard failed to open ``sockets/dash_MetricsHead`` (108 bytes with a 5-digit
    pid) and `ray start` waited out its retries until the test's timeout. Ray's own function builds the path."""
    from ray.dashboard.subprocesses.utils import get_socket_path

    from hyperpod_rl.cluster.local import MAX_RAY_TEMP_DIR, check_socket_room
    from hyperpod_rl.errors import ClusterError

    with pytest.raises(ClusterError, match="set TMPDIR to a shorter directory"):
        check_socket_room("/work/tn/hprl-t-djcs4jso/hprl-0/90f7cb9a80")
    pid = "9" * (107 - MAX_RAY_TEMP_DIR - len("/session_2026-12-07_09-38-45_886607_/sockets/dash_MetricsHead"))
    assert 5 <= len(pid) <= 7  # the machine's largest pid (Linux: 32768 by default, 4194304 at most)
    longest = "/" + "d" * (MAX_RAY_TEMP_DIR - 1) + f"/session_2026-12-07_09-38-45_886607_{pid}/sockets"
    assert len(get_socket_path(longest, "MetricsHead").encode()) == 107  # Ray accepts it: the limit is exact
    with pytest.raises(OSError, match="107"):
        get_socket_path("/d" + longest, "MetricsHead")  # one byte more and Ray refuses it


def test_a_tmpdir_too_long_is_refused_before_anything_is_created(tmp_path, monkeypatch):
    """``check_tmpdir_room`` (the test session's first check, tests/conftest.py) judges the Ray temp dir a local
    cluster would get under ``TMPDIR`` without creating it."""
    import tempfile

    from hyperpod_rl.cluster.local import MAX_RAY_TEMP_DIR, check_tmpdir_room

    room = MAX_RAY_TEMP_DIR - len(f"/hprl-{os.getuid()}/0123456789")  # TMPDIR's most bytes
    monkeypatch.setattr(tempfile, "tempdir", "/" + "d" * (room - 1))
    check_tmpdir_room()
    monkeypatch.setattr(tempfile, "tempdir", "/" + "d" * room)
    with pytest.raises(ClusterError, match="set TMPDIR to a shorter directory"):
        check_tmpdir_room()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a real directory: whatever the verdict, nothing made in it
    try:
        check_tmpdir_room()
    except ClusterError:
        pass
    assert list(tmp_path.iterdir()) == []


def test_the_test_session_ends_at_once_on_a_tmpdir_too_long(tmp_path):
    """Reported: `make test` with TMPDIR=/work/tn ran its whole install and half an hour of tests before the cluster
    tests failed. A session whose TMPDIR leaves no room ends before its first test, saying what to change."""
    import subprocess
    import sys

    from hyperpod_rl.cluster.local import MAX_RAY_TEMP_DIR

    user_tmp = tmp_path / ("d" * max(1, MAX_RAY_TEMP_DIR - len(str(tmp_path))))
    long_tmp = user_tmp / "hprl-t-abcdefgh"  # as make test makes it: the run's own directory inside the user's TMPDIR
    long_tmp.mkdir(parents=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-n",
            "0",
            "tests/cluster/test_worker_ports.py::test_the_range_is_rays_default_worker_ports_and_its_edges_are_refused",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        # a new run, not a session inside this one (which inherits HPRL_TMPDIR_CHECKED and is not judged)
        env={
            **{k: v for k, v in os.environ.items() if k != "HPRL_TMPDIR_CHECKED"},
            "HPRL_RUN_TMPDIR": str(long_tmp),
            "TMPDIR": str(long_tmp),
        },
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    said = " ".join((proc.stdout + proc.stderr).split())
    assert f"TMPDIR={user_tmp} is {len(str(user_tmp))} bytes" in said and "(with hprl-t-abcdefgh inside it)" in said, said
    assert "set TMPDIR to a shorter directory" in said
    assert " passed" not in proc.stdout  # not one test ran


# ---- ports we pick (new-user report: a dashboard agent's gRPC port, 10009, inside the worker range was taken)
_PICK = """
import json
from hyperpod_rl.cluster import local
from hyperpod_rl.errors import ClusterError
try:
    head = local.head_ports()
    node = [int(f.split("=")[1]) for f in local._node_port_flags(set(head.values()))]
    print(json.dumps({"ports": [*head.values(), *node]}))
except ClusterError as err:
    print(json.dumps({"error": str(err)}))
"""


def _pick_in_a_port_range(low: int, high: int) -> dict:
    """Pick a head's and its agents' ports where the kernel hands out only ``low``-``high``
    (``net.ipv4.ip_local_port_range`` of a network namespace of the test's own)."""
    import json
    import subprocess
    import sys

    script = f'ip link set lo up && echo "{low} {high}" > /proc/sys/net/ipv4/ip_local_port_range && exec "$0" -c "$1"'
    proc = subprocess.run(
        ["unshare", "--map-root-user", "--net", "sh", "-c", script, sys.executable, _PICK],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0 and "unshare" in proc.stderr:
        pytest.skip(f"no network namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_ports_we_pick_are_never_inside_the_worker_range():
    picked = _pick_in_a_port_range(19980, 20030)  # half the kernel's ports inside the range
    ports = picked["ports"]
    assert len(ports) == 9 and len(set(ports)) == 9, ports  # head (6) and agents (3), distinct
    assert all(20000 <= p <= 20030 for p in ports if p != 8265), ports


def test_a_kernel_port_range_inside_the_worker_range_is_one_error_with_the_fix():
    picked = _pick_in_a_port_range(10002, 10010)
    assert "no free port outside Ray's worker port range 10002-19999" in picked["error"]
    assert "net.ipv4.ip_local_port_range" in picked["error"]
