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
