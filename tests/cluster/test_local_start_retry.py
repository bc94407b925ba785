"""``ray start`` failures that a second attempt fixes (issue 14 item 16's kind): a port taken in
between, or a dashboard that did not come up on a loaded machine. The failing ``ray start`` is
replaced by one that fails as Ray 2.57 did here (Ray 2.56's ``ray/_private/services.py`` raises the
same lines); nothing is started."""

from __future__ import annotations

import pytest

from hyperpod_rl.cluster import local
from hyperpod_rl.errors import ClusterError

# What Ray 2.57's `ray start --head` printed on this machine at load average ~14 on 2 cores.
DASHBOARD_DIED = (
    "`ray start` failed (exit 1):\nException: Failed to read dashboard.err file: [Errno 2] No such file or directory: "
    "'/tmp/hprl-fa1c3a0e88/session_2026-12-01_04-12-12_163747_6736/logs/dashboard.err'. It is unexpected."
)


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(local.LocalCluster, "stop", lambda self, *a, **k: None)
    monkeypatch.setattr(local, "RETRY_WAIT_S", 0.0)
    return calls


def test_a_dashboard_that_did_not_come_up_is_retried_on_new_ports(monkeypatch, tmp_path, attempts) -> None:
    def fake_run(cmd: list[str], token: str, extra_env: dict[str, str] | None = None) -> None:
        attempts.append(cmd)
        if len(attempts) == 1:
            raise ClusterError(DASHBOARD_DIED)

    monkeypatch.setattr(local, "_run_ray", fake_run)
    cluster = local._start_head(tmp_path / "state.json", token="t" * 64, temp_dir=str(tmp_path), num_cpus=1, dashboard_port=None)
    assert len(attempts) == 2
    ports = [{a for a in cmd if a.startswith("--port=")} for cmd in attempts]
    assert ports[0] != ports[1]  # fresh ports on the second attempt
    assert cluster.state.dashboard_url.endswith(next(a for a in attempts[1] if a.startswith("--dashboard-port=")).split("=")[1])
    assert (tmp_path / "state.json").is_file()


def test_a_dashboard_that_never_comes_up_says_the_machine_is_overloaded(monkeypatch, tmp_path, attempts) -> None:
    def fake_run(cmd: list[str], token: str, extra_env: dict[str, str] | None = None) -> None:
        attempts.append(cmd)
        raise ClusterError(DASHBOARD_DIED)

    monkeypatch.setattr(local, "_run_ray", fake_run)
    with pytest.raises(
        ClusterError, match=r"dashboard or node did not come up within \d+ s \(load average .* cores\).*stop other heavy work and try again"
    ):
        local._start_head(tmp_path / "state.json", token="t" * 64, temp_dir=str(tmp_path), num_cpus=1, dashboard_port=None)
    assert len(attempts) == 3 and not (tmp_path / "state.json").exists()


def test_other_start_failures_are_not_retried(monkeypatch, tmp_path, attempts) -> None:
    def fake_run(cmd: list[str], token: str, extra_env: dict[str, str] | None = None) -> None:
        attempts.append(cmd)
        raise ClusterError("`ray start` failed (exit 1):\nValueError: bad --num-cpus")

    monkeypatch.setattr(local, "_run_ray", fake_run)
    with pytest.raises(ClusterError, match="bad --num-cpus"):
        local._start_head(tmp_path / "state.json", token="t" * 64, temp_dir=str(tmp_path), num_cpus=1, dashboard_port=None)
    assert len(attempts) == 1


def test_every_port_of_a_head_is_picked_free_and_distinct(monkeypatch, tmp_path, attempts) -> None:
    """Issue 30 item 5e's kind: Ray's dashboard and autoscaler metrics ports are fixed (44227,
    44217) unless set, so a second local cluster on the machine silently had no metrics
    endpoints. Each head gets its own free ports for them, passed in the environment Ray reads."""
    envs: list[dict[str, str]] = []

    def fake_run(cmd: list[str], token: str, extra_env: dict[str, str] | None = None) -> None:
        attempts.append(cmd)
        envs.append(dict(extra_env or {}))

    monkeypatch.setattr(local, "_run_ray", fake_run)
    clusters = [local._start_head(tmp_path / "state.json", token="t" * 64, temp_dir=str(tmp_path), num_cpus=1, dashboard_port=None)]
    for cmd, env, cluster in zip(attempts, envs, clusters, strict=True):
        flags = dict(a.removeprefix("--").split("=", 1) for a in cmd if a.startswith("--") and "=" in a)
        ports = [int(flags[k]) for k in ("port", "dashboard-port", "metrics-export-port", "ray-client-server-port")]
        ports += [int(env["DASHBOARD_METRIC_PORT"]), int(env["AUTOSCALER_METRIC_PORT"])]
        assert len(set(ports)) == 6, ports  # distinct within one head
        assert cluster.state.dashboard_metrics_port == int(env["DASHBOARD_METRIC_PORT"])
        assert cluster.state.autoscaler_metrics_port == int(env["AUTOSCALER_METRIC_PORT"])


def test_head_ports_are_distinct_and_free() -> None:
    """Free when picked. Another process may take a picked port a moment later (a cluster the other pytest worker
    starts opens many: seen in a fresh-clone run), so a pick whose ports are not all free still is picked again,
    three times at most."""
    for _ in range(3):
        ports = local.head_ports()
        assert set(ports) == {"dashboard", "gcs", "metrics_export", "client_server", "dashboard_metrics", "autoscaler_metrics"}
        assert len(set(ports.values())) == len(ports)
        if all(local._port_free(p) for p in ports.values()):
            break
    else:
        raise AssertionError(f"three picks in a row held a port that was not free: the last was {ports}")
