"""Ports of ours inside Ray's worker port range are refused before anything starts (reported: a
quickstart with ``--dashboard-port 18266`` failed inside ``ray start`` after about 30 s)."""

from __future__ import annotations

import pytest

from hyperpod_rl.cluster.local import RAY_WORKER_PORTS, check_port_outside_ray_workers, start_local_cluster
from hyperpod_rl.errors import ClusterError


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
