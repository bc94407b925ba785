"""The embedded local Ray cluster: one head (and optional extra worker nodes) on 127.0.0.1.

Security model (measured with Ray 2.56, see docs/references.md §2 "Local Ray security"):

- Token auth is on: every process is started with ``RAY_AUTH_MODE=token`` and a random
  ``RAY_AUTH_TOKEN``. Without the token the dashboard and job API answer 401 and GCS refuses
  clients, so the token, not the bind address, is what protects the cluster.
- The dashboard and the job API listen on 127.0.0.1 (``--dashboard-host 127.0.0.1``).
- ``--node-ip-address 127.0.0.1`` is not passed: ``ray start`` turns a loopback node address into
  the machine's address (``ray/scripts/scripts.py``, ``services.resolve_ip_for_localhost``), so it would
  change nothing. Ray binds the GCS, raylet, object manager, worker, agent and runtime-env
  ports on all interfaces or on that address, each refusing calls without the token, and three
  read-only Prometheus endpoints without auth. ``tests/serve/test_local_serving.py`` checks every
  listener; docs/local-cluster.md lists them.
- The address and token live in ``<data dir>/local-cluster.json`` (mode 0600). They are never
  printed: :class:`LocalCluster`'s ``repr`` omits the token.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_rl.cluster.resources import remove_jobs
from hyperpod_rl.errors import ClusterError, ClusterTimeout, last_line
from hyperpod_rl.paths import data_dir

__all__ = [
    "LocalCluster",
    "LocalClusterState",
    "current_local_cluster",
    "find_free_port",
    "free_ports",
    "keep_last_session",
    "head_ports",
    "local_job_client",
    "MAX_RAY_TEMP_DIR",
    "SessionLogs",
    "check_socket_room",
    "check_tmpdir_room",
    "local_temp_dir",
    "private_tmp_dir",
    "start_local_cluster",
    "stop_cluster_processes",
    "wait_for_local_cluster",
]

log = logging.getLogger(__name__)

STATE_FILE = "local-cluster.json"
DEFAULT_DASHBOARD_PORT = 8265
#: Ray's worker port range (``ray start --min-worker-port 10002 --max-worker-port 19999``, its
#: defaults: Ray docs, "Configuring Ray", ports): Ray refuses a dashboard port inside it, and a
#: worker may hold any port of it.
RAY_WORKER_PORTS = range(10002, 20000)


def ray_worker_port_problem(port: int) -> str | None:
    """What is wrong with ``port`` as a port of ours (dashboard, Serve): inside Ray's worker port
    range (:data:`RAY_WORKER_PORTS`), with the fix; None when it is outside."""
    if port not in RAY_WORKER_PORTS:
        return None
    first, last = RAY_WORKER_PORTS.start, RAY_WORKER_PORTS.stop - 1
    return f"inside Ray's worker port range {first}-{last}, which Ray's workers use: choose a port below {first} or above {last}"


def check_port_outside_ray_workers(port: int, option: str) -> None:
    """Refuse a port of ours inside Ray's worker port range (:func:`ray_worker_port_problem`).

    Raises:
        ClusterError: ``port`` is inside the range; the message names ``option`` and the fix.
    """
    problem = ray_worker_port_problem(port)
    if problem:
        raise ClusterError(f"{option} {port} is {problem}")


def find_free_port(preferred: int | None = None) -> int:
    """Return ``preferred`` if it is free on 127.0.0.1, else any free port outside Ray's worker port range."""
    if preferred is not None and _port_free(preferred):
        return preferred
    return free_ports(1)[0]


def free_ports(count: int, *, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """``count`` distinct ports that are free on 127.0.0.1 now, none inside Ray's worker port range
    (:data:`RAY_WORKER_PORTS`: a worker of any Ray cluster on this machine may bind one of those
    at any time, so an agent's port there can be taken before its raylet starts) nor in ``exclude``.

    Every socket stays bound until all are picked, so the kernel never hands out one port
    twice (separate :func:`find_free_port` calls may).

    Raises:
        ClusterError: the kernel hands out only ports inside the worker range (its
            ``net.ipv4.ip_local_port_range``); the message names the setting.
    """
    first, last = RAY_WORKER_PORTS.start, RAY_WORKER_PORTS.stop - 1
    none_left = ClusterError(
        f"the kernel offers no free port outside Ray's worker port range {first}-{last}: "
        "set net.ipv4.ip_local_port_range outside it (e.g. 32768 60999)"
    )
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            if len(socks) >= count + 256:
                raise none_left
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            try:
                sock.bind(("127.0.0.1", 0))
            except OSError:  # EADDRINUSE: the kernel's range is used up
                raise none_left from None
            port = int(sock.getsockname()[1])
            if port not in RAY_WORKER_PORTS and port not in exclude:
                ports.append(port)
        return ports
    finally:
        for sock in socks:
            sock.close()


def _port_free(port: int) -> bool:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
        return True


def _ray_executable() -> str:
    candidate = Path(sys.executable).with_name("ray")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("ray")
    if not found:
        raise ClusterError("the `ray` command is not installed: pip install 'ray[default]==2.56.0'")
    return found


@dataclass(frozen=True)
class LocalClusterState:
    """What the state file records about a running local cluster.

    Attributes:
        gcs_address: ``127.0.0.1:<port>`` for ``ray.init`` / ``ray start --address``.
        dashboard_url: ``http://127.0.0.1:<port>``, the dashboard and job API.
        metrics_export_port: the head's Prometheus metrics port (Ray's ``ray_*`` gauges).
        dashboard_metrics_port: the dashboard's own Prometheus port (Ray's
            ``DASHBOARD_METRIC_PORT``, a fixed 44227 unless set); 0 in state files written before
            it was picked per cluster.
        autoscaler_metrics_port: the autoscaler monitor's Prometheus port (Ray's
            ``AUTOSCALER_METRIC_PORT``, a fixed 44217 unless set); 0 likewise.
        started_at: Unix time in seconds.
        python: the interpreter of the environment that started it (jobs run under it).
        temp_dir: the cluster's Ray temp dir (``--temp-dir``); every process of the cluster has it
            on its command line, which is how :meth:`LocalCluster.stop` finds them.
        worker_nodes: number of extra worker nodes started with :meth:`LocalCluster.add_worker`.
    """

    gcs_address: str
    dashboard_url: str
    metrics_export_port: int
    started_at: float
    python: str
    temp_dir: str
    worker_nodes: int = 0
    token: str = field(default="", repr=False)
    dashboard_metrics_port: int = 0
    autoscaler_metrics_port: int = 0


class LocalCluster:
    """Handle on the embedded local Ray cluster.

    Example:
        >>> cluster = start_local_cluster()  # doctest: +SKIP
        >>> client = cluster.job_client()  # doctest: +SKIP
    """

    def __init__(self, state: LocalClusterState, *, state_path: Path) -> None:
        self.state = state
        self.state_path = state_path
        #: True when :func:`start_local_cluster` found the recorded cluster dead and restarted it.
        self.restarted_stale = False

    def __repr__(self) -> str:  # never show the token
        return f"LocalCluster(dashboard_url={self.state.dashboard_url!r}, gcs_address={self.state.gcs_address!r})"

    @property
    def dashboard_url(self) -> str:
        return self.state.dashboard_url

    @property
    def address(self) -> str:
        return self.state.gcs_address

    def auth_headers(self) -> dict[str, str]:
        """HTTP headers that authenticate to the dashboard and job API (keep them secret)."""
        return {"Authorization": f"Bearer {self.state.token}"}

    def job_client(self):
        """A ``ray.job_submission.JobSubmissionClient`` authenticated with the cluster token."""
        from ray.job_submission import JobSubmissionClient

        return JobSubmissionClient(self.dashboard_url, headers=self.auth_headers())

    def is_alive(self, *, timeout_s: float = 5.0) -> bool:
        """True when the job API answers with this cluster's token within ``timeout_s`` seconds."""
        import requests

        try:
            resp = requests.get(f"{self.dashboard_url}/api/jobs/", headers=self.auth_headers(), timeout=timeout_s)
        except requests.RequestException:
            return False
        return resp.status_code == 200

    def _raylet_pids(self) -> set[int]:
        import psutil

        pids = set()
        for proc in psutil.process_iter(["name", "cmdline"]):
            try:
                cmd = proc.info["cmdline"] or []
                if cmd and cmd[0].endswith("raylet") and any(self.state.temp_dir in arg for arg in cmd):
                    pids.add(proc.pid)
            except (psutil.Error, TypeError):
                continue
        return pids

    def add_worker(self, *, num_cpus: int = 1, num_gpus: int = 0, resources: dict[str, float] | None = None) -> int:
        """Start one more Ray node on 127.0.0.1 that joins this cluster.

        ``num_gpus`` is advertised as a logical resource, so placement with GPUs can be
        tested on a CPU machine; ``resources`` adds custom resources (e.g. to pin a job's
        entrypoint to this node with ``entrypoint_resources``).

        Returns:
            The PID of the new node's raylet (:meth:`kill_worker` takes it).

        Raises:
            ClusterError: ``ray start`` failed (its output is in the message).
        """
        before = self._raylet_pids()
        cmd = [
            _ray_executable(),
            "start",
            f"--address={self.address}",
            f"--num-cpus={num_cpus}",
            f"--num-gpus={num_gpus}",
            "--disable-usage-stats",
            *_node_port_flags(),
        ]
        if resources:
            cmd.append(f"--resources={json.dumps(resources)}")
        _run_ray(cmd, self.state.token)
        new = self._raylet_pids() - before
        if len(new) != 1:
            raise ClusterError(f"could not find the new worker node's raylet (found {len(new)} new raylets)")
        state = LocalClusterState(**{**self.state.__dict__, "worker_nodes": self.state.worker_nodes + 1})
        _write_state(self.state_path, state)
        self.state = state
        return new.pop()

    def kill_worker(self, raylet_pid: int) -> None:
        """SIGKILL a worker node (its raylet and every process under it), as a lost machine would."""
        import psutil

        try:
            root = psutil.Process(raylet_pid)
            procs = [*root.children(recursive=True), root]
        except psutil.NoSuchProcess:
            return
        for proc in procs:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(procs, timeout=10)

    def stop(self, *, timeout_s: float = 30.0) -> int:
        """Stop this cluster's processes (only this cluster's) and forget the state.

        Every process of the cluster runs with this cluster's ``--temp-dir`` on its command line,
        so other Ray clusters on the machine are left alone (unlike ``ray stop``). Its Ray logs
        are kept, as ``ray stop`` keeps them, but only this session's: the sessions of its
        earlier starts are removed from its temp dir (:func:`keep_last_session`).

        Returns:
            The number of processes signalled.
        """
        signalled = stop_cluster_processes(self.state.temp_dir, gcs_port=self.state.gcs_address.rsplit(":", 1)[-1], timeout_s=timeout_s)
        self.state_path.unlink(missing_ok=True)
        keep_last_session(self.state.temp_dir)
        return signalled


@dataclass(frozen=True)
class SessionLogs:
    """The Ray logs a stopped local cluster leaves: its last session's ``logs`` folder.

    Attributes:
        path: ``<temp dir>/session_<time>_<pid>/logs`` (Ray's own, the job logs
            ``job-driver-hprl-<run id>-<N>.log`` among them).
        size_bytes: what the folder holds.
    """

    path: Path
    size_bytes: int

    @property
    def size(self) -> str:
        """:attr:`size_bytes` for a person: ``5.7 MB``."""
        return f"{self.size_bytes / 1e6:.1f} MB" if self.size_bytes >= 100_000 else f"{self.size_bytes / 1e3:.0f} kB"


def keep_last_session(temp_dir: str | Path) -> SessionLogs | None:
    """After a local cluster stopped: remove the Ray sessions of its earlier starts from its temp
    dir (``session_*``, ours: the cluster's temp dir is this package's, under
    :func:`private_tmp_dir`), keep the last one, whose logs hold the jobs it ran (a failed job's
    traceback among them), as ``ray stop`` keeps ``/tmp/ray/session_*``; return where its logs are
    and their size, or None when it left none. So a stopped cluster leaves one session's logs,
    which the next cluster's stop removes in turn.
    """
    root = Path(temp_dir)
    sessions = sorted(p for p in root.glob("session_2*") if p.is_dir() and not p.is_symlink()) if root.is_dir() else []
    if not sessions:
        return None
    latest = root / "session_latest"
    last = latest.resolve() if latest.is_symlink() and latest.resolve() in sessions else sessions[-1]
    for old in sessions:
        if old != last:
            shutil.rmtree(old, ignore_errors=True)
    logs = last / "logs"
    if not logs.is_dir():
        return None
    size = sum(f.stat().st_size for f in logs.rglob("*") if f.is_file() and not f.is_symlink())
    return SessionLogs(logs, size)


def _node_port_flags(taken: set[int] | frozenset[int] = frozenset()) -> list[str]:
    """Free ports for one node's agents, distinct, outside Ray's worker port range and not in
    ``taken`` (the head's ports): the dashboard agent's HTTP port is a fixed 52365 by default, so
    a second node or cluster on the same machine would get no agent, and an agent port inside
    the worker range may be bound by another cluster's worker before the raylet starts."""
    listen, grpc, runtime_env = free_ports(3, exclude=taken)
    return [
        f"--dashboard-agent-listen-port={listen}",
        f"--dashboard-agent-grpc-port={grpc}",
        f"--runtime-env-agent-port={runtime_env}",
    ]


#: Seconds Ray waits for its dashboard while ``ray start`` runs, set unless the environment sets
#: them. Ray's defaults (``ray/_private/ray_constants.py``: 60 s for the dashboard process to
#: answer, ``RAY_DASHBOARD_STARTUP_TIMEOUT_S``; 30 s for each of its modules,
#: ``RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT``) fail on a loaded small machine (a
#: 2-core Studio instance took 85 s); both are raised together, since the dashboard only answers
#: once its modules are up. They cost nothing when the machine is fast.
RAY_START_TIMEOUTS = {"RAY_DASHBOARD_STARTUP_TIMEOUT_S": "150", "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": "150"}
#: Lines of Ray's output kept in a start error (the whole output goes to :func:`ray_start_log`).
RAY_ERROR_LINES = 12
# Ray's ERROR lines, exception lines ("Exception: ...", "ValueError: ..."), and the line naming the
# dashboard log Ray echoes ("The last 20 lines of <path>/dashboard.log ...").
_RAY_ERROR = re.compile(r"\b(ERROR|CRITICAL|FATAL)\b|^\s*([A-Za-z_][\w.]*)?(Error|Exception)\b.*:\s*\S|^The last \d+ lines of ")


def ray_start_log() -> Path:
    """``<data dir>/logs/ray-start.log``: the full output of each failed ``ray start`` (token redacted)."""
    return data_dir() / "logs" / "ray-start.log"


def ray_errors(output: str, *, max_lines: int = RAY_ERROR_LINES) -> list[str]:
    """Ray's ``ERROR`` lines, exception lines and the line naming the dashboard log it echoes, from
    ``ray start`` output, in order, each at most 300 characters; the last 5 lines when there is
    none. INFO lines (the dashboard log Ray echoes is 20 of them) are left out, so the line that
    says why is never cut off.

    Args:
        output: ``ray start``'s stdout and stderr.
        max_lines: lines kept at most: the first ``max_lines - 1`` and the last.
    """
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    kept = [line for line in lines if _RAY_ERROR.search(line)] or lines[-5:]
    if len(kept) > max_lines:
        kept = [*kept[: max_lines - 1], kept[-1]]
    return [line if len(line) <= 300 else line[:297] + "..." for line in kept]


def head_ports(dashboard_port: int | None = None) -> dict[str, int]:
    """The ports a new head node listens on, all distinct and free on 127.0.0.1 now.

    Keys: ``dashboard`` (``dashboard_port``, else 8265 when free, else any free port), ``gcs``,
    ``metrics_export``, ``client_server``, ``dashboard_metrics`` and ``autoscaler_metrics``.
    Nothing is left to Ray's fixed defaults, so two local clusters on one machine (two
    ``HYPERPOD_RL_HOME`` dirs) never share a port; the start lock
    (:func:`start_lock_path`) keeps two starts from picking at the same moment.
    """
    dash = dashboard_port or find_free_port(DEFAULT_DASHBOARD_PORT)
    names = ("gcs", "metrics_export", "client_server", "dashboard_metrics", "autoscaler_metrics")
    picked = free_ports(len(names), exclude={dash})
    return {"dashboard": dash, **dict(zip(names, picked, strict=True))}


def _run_ray(cmd: list[str], token: str, extra_env: dict[str, str] | None = None) -> None:
    """Run a ``ray`` command with the cluster's token, in a session of its own: the daemons ``ray
    start`` leaves behind are outside the caller's process group, so a Ctrl-C in the caller's
    terminal (sent to that whole group) does not reach them.

    Raises:
        ClusterError: it exited non-zero; the message holds Ray's error lines
            (:func:`ray_errors`) and the path of the log with its whole output.
    """
    env = {
        **os.environ,
        **(extra_env or {}),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "RAY_USAGE_STATS_ENABLED": "0",
        **{k: os.environ.get(k, v) for k, v in RAY_START_TIMEOUTS.items()},
    }
    # room for Ray's own dashboard wait (raised from the environment, too) and the rest of the start
    limit = max(300.0, float(env["RAY_DASHBOARD_STARTUP_TIMEOUT_S"]) + 150.0)
    # A session of its own, so that the daemons `ray start` leaves (GCS, raylet, dashboard) are out of
    # the caller's process group: a terminal's Ctrl-C, sent to that whole group, stopped the
    # dashboard under an interrupted quickstart whose job was to keep running.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=limit, start_new_session=True)
    if proc.returncode != 0:
        from hyperpod_rl.redact import redact

        output = redact(proc.stdout + "\n" + proc.stderr, [token])
        log = ray_start_log()
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as fh:
            fh.write(f"==== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} `{' '.join(cmd)}` exit {proc.returncode}\n{output}\n")
        errors = "\n".join(f"  {line}" for line in ray_errors(output))
        raise ClusterError(f"`{' '.join(cmd[:2])}` failed (exit {proc.returncode}); Ray said:\n{errors}\nRay's whole output: {log}")


def _write_state(path: Path, state: LocalClusterState) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(state.__dict__, fh)
    os.replace(tmp, path)
    os.chmod(path, 0o600)


def _read_state(path: Path) -> LocalClusterState | None:
    try:
        return LocalClusterState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def stop_cluster_processes(temp_dir: str, *, gcs_port: str | None = None, timeout_s: float = 30.0) -> int:
    """Terminate (then kill, after ``timeout_s`` seconds) every process of one local cluster: those
    with its Ray ``--temp-dir`` on their command line and their children, and with ``gcs_port``
    also the orphans a killed raylet leaves (the Ray Client server, job drivers whose
    ``RAY_ADDRESS`` is that GCS). This process and its parents are spared. Returns the number signalled.

    The GCS server goes last, once the others have exited (each round waits up to ``timeout_s``):
    terminated together, the GCS server and the autoscaler's monitor outlived SIGTERM until they
    were killed (30 s with the default), while in this order the cluster was gone in about 13 s on a
    busy 2-core machine.
    """
    import psutil

    me = psutil.Process()
    spared = {me.pid, *(p.pid for p in me.parents())}
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid in spared:
            continue
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
            ours = temp_dir in cmd
            if gcs_port is not None:
                ours = ours or ("ray.util.client.server" in cmd and f":{gcs_port} " in f"{cmd} ")
                if not ours and cmd:
                    address = proc.environ().get("RAY_ADDRESS", "")
                    ours = (
                        bool(address)
                        and address.rsplit(":", 1)[-1] == gcs_port
                        and address.split(":")[0] in ("127.0.0.1", socket.gethostbyname(socket.gethostname()))
                    )
            if ours:
                found[proc.pid] = proc
                found.update({child.pid: child for child in proc.children(recursive=True)})
        except (psutil.Error, TypeError, OSError):
            continue
    procs = [p for pid, p in found.items() if pid not in spared]
    gcs = [p for p in procs if _is_gcs_server(p)]
    for group in ([p for p in procs if p not in gcs], gcs):
        for proc in group:
            try:
                proc.terminate()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(group, timeout=timeout_s)
        for proc in alive:
            try:
                proc.kill()
            except psutil.Error:
                pass
    return len(procs)


def _is_gcs_server(proc: Any) -> bool:
    """Whether a ``psutil.Process`` is Ray's GCS server (gone already: no)."""
    import psutil

    try:
        return proc.name() == "gcs_server"
    except psutil.Error:
        return False


def _pid_digits() -> int:
    """Digits of this machine's largest pid (``/proc/sys/kernel/pid_max``); 7, Linux's most, where unreadable."""
    try:
        return len(str(int(Path("/proc/sys/kernel/pid_max").read_text()) - 1))
    except (OSError, ValueError):
        return 7


#: Longest Ray ``--temp-dir`` whose sockets fit Linux's 107-byte ``AF_UNIX`` path limit: Ray puts them at
#: ``<temp dir>/session_<YYYY-MM-DD_HH-MM-SS_ffffff>_<pid>/sockets/<name>`` (Ray 2.56
#: ``_private/utils.validate_socket_filepath``). The longest name is the dashboard's metrics module's,
#: ``dash_MetricsHead`` (``dashboard/subprocesses/utils.get_socket_path``), not ``plasma_store``: up to 69
#: bytes after the temp dir with a 7-digit pid. Counted with ``plasma_store``, a 42-byte temp dir passed
#: this check and then its dashboard never came up (``ray start`` waited out its retries). The pid's
#: digits are this machine's most (``/proc/sys/kernel/pid_max``; 7, Linux's largest, where unreadable).
MAX_RAY_TEMP_DIR = 107 - len(f"/session_2026-12-06_07-59-17_514866_{'9' * _pid_digits()}/sockets/dash_MetricsHead")


def check_socket_room(temp_dir: str) -> None:
    """Refuse a Ray temp dir too long for Ray's Unix sockets, before ``ray start`` fails on it.

    Raises:
        ClusterError: ``temp_dir`` is longer than :data:`MAX_RAY_TEMP_DIR` bytes; the fix is a shorter ``TMPDIR``.
    """
    if len(temp_dir.encode()) > MAX_RAY_TEMP_DIR:
        raise ClusterError(
            f"the local cluster's Ray temp dir {temp_dir} is {len(temp_dir.encode())} bytes, but Ray's Unix socket paths under it "
            f"must fit 107 bytes (at most {MAX_RAY_TEMP_DIR} for the dir): set TMPDIR to a shorter directory, e.g. TMPDIR=/tmp"
        )


def local_temp_dir() -> str:
    """The Ray ``--temp-dir`` of this data dir's local cluster: ``<tmp>/hprl-<uid>/<10 hex digits of
    the data dir's path>``. Short and per data dir: Ray puts Unix sockets under it (107-byte path
    limit); inside this user's private directory (:func:`private_tmp_dir`), so no other user can
    plant or read anything there."""
    return str(private_tmp_dir() / hashlib.sha1(str(data_dir().resolve()).encode()).hexdigest()[:_TEMP_DIR_HEX])


#: Hex digits of the data dir's hash that name its Ray temp dir (:func:`local_temp_dir`).
_TEMP_DIR_HEX = 10


def start_local_cluster(
    *,
    num_cpus: int | None = None,
    dashboard_port: int | None = None,
    restart: bool = False,
    wait_s: float = 180.0,
) -> LocalCluster:
    """Start the embedded local Ray cluster, or reuse the one this package started earlier.

    A cluster recorded in the state file is reused when its job API answers with its token.
    A dead or stale one (state file left behind, processes gone or not answering) is stopped
    and started again; the returned cluster says so in ``cluster.restarted_stale``.

    Args:
        num_cpus: logical CPUs of the head node (default: all cores).
        dashboard_port: dashboard/job API port on 127.0.0.1. ``None`` picks 8265, or a free
            port when 8265 is taken. An explicit port that is in use is an error.
        restart: stop a running cluster and start a fresh one.
        wait_s: seconds to wait for the job API to answer, and again for a no-op job to run.

    Returns:
        The running :class:`LocalCluster`.

    Two starts at once with one data dir (two notebooks, a notebook and a terminal) start one
    head: the data dir's start lock (:func:`home_start_lock_path`) is held from before the state
    file is read until the new cluster is recorded and answers, so the second caller waits and
    then reuses the first one's cluster.

    Raises:
        ClusterError: an explicit ``dashboard_port`` is in use, Ray failed to start (its output
            is in the message, with the token redacted), or another start of this data dir held
            its lock for :data:`START_LOCK_TIMEOUT_S` seconds.
    """
    if dashboard_port is not None:
        check_port_outside_ray_workers(dashboard_port, "--dashboard-port")  # refused before anything, the lock file included
    with _held(home_start_lock_path(), START_LOCK_TIMEOUT_S, "another hyperpod-rl local start of this data dir is still starting"):
        return _start_or_reuse(num_cpus=num_cpus, dashboard_port=dashboard_port, restart=restart, wait_s=wait_s)


def _start_or_reuse(*, num_cpus: int | None, dashboard_port: int | None, restart: bool, wait_s: float) -> LocalCluster:
    """:func:`start_local_cluster`'s work, under the data dir's start lock."""
    path = data_dir() / STATE_FILE
    previous = _read_state(path)
    stale = False
    if previous is not None:
        cluster = LocalCluster(previous, state_path=path)
        if not restart and cluster.is_alive():
            return cluster
        stale = not restart
        cluster.stop()
    if dashboard_port is not None and not _port_free(dashboard_port):
        raise ClusterError(
            f"dashboard port {dashboard_port} is already in use: pass another --dashboard-port, or omit it to pick a free one"
        )
    token = secrets.token_hex(32)
    temp_dir = local_temp_dir()
    check_socket_room(temp_dir)
    with _machine_start_lock():  # our clusters on this machine pick and bind their ports one at a time
        if _read_state(path) is None:
            # nothing recorded, yet a start of this data dir that was killed before it wrote its state
            # (a timeout, Ctrl-C, SIGKILL) leaves a running head with this temp dir: stop it, or it runs on unseen
            stale = stop_cluster_processes(temp_dir) > 0 or stale
        cluster = _start_head(path, token=token, temp_dir=temp_dir, num_cpus=num_cpus, dashboard_port=dashboard_port)
    try:
        _wait_ready(cluster, timeout_s=wait_s)
    except BaseException:
        cluster.stop()  # leave no half-started processes behind
        raise
    cluster.restarted_stale = stale
    return cluster


#: Seconds between two ``ray start`` attempts (a loaded machine gets a moment to settle).
RETRY_WAIT_S = 3.0


def _private_root() -> Path:
    """``<tmp>/hprl-<uid>`` (:func:`private_tmp_dir`), not created."""
    return Path(tempfile.gettempdir()) / f"hprl-{os.getuid()}"


def check_tmpdir_room(tmp: str | None = None, *, below: str = "") -> None:
    """Refuse a ``TMPDIR`` too long for a local cluster's Unix sockets before anything is started or
    created: the Ray temp dir :func:`local_temp_dir` would give under it must pass :func:`check_socket_room`.

    Args:
        tmp: the ``TMPDIR`` to judge (default: the one in effect, :func:`tempfile.gettempdir`).
        below: a directory the caller puts between ``tmp`` and the cluster's temp dir (``make test``'s
            own ``hprl-t-XXXXXXXX``); its bytes count, and the message still speaks of ``tmp``.

    Raises:
        ClusterError: ``tmp`` is too long; the message says how many bytes it may have and the fix.
    """
    tmp = tmp or tempfile.gettempdir()
    used = len(f"/{below}".encode()) if below else 0
    used += len(f"/{_private_root().name}/{'0' * _TEMP_DIR_HEX}".encode())
    room = MAX_RAY_TEMP_DIR - used
    if len(tmp.encode()) > room:
        inside = f" (with {below} inside it)" if below else ""
        raise ClusterError(
            f"TMPDIR={tmp} is {len(tmp.encode())} bytes, but a local cluster's Ray temp dir under it{inside} must leave room for "
            f"Ray's Unix socket paths (107 bytes): TMPDIR may have at most {room} bytes here; set TMPDIR to a shorter directory, "
            "e.g. TMPDIR=/tmp"
        )


def private_tmp_dir() -> Path:
    """This user's private directory under the system temp dir, ``<tmp>/hprl-<uid>``, mode 0700.

    The local clusters' Ray temp dirs and the start lock live in it, so their paths are short
    (Ray's Unix sockets) and shared by every data dir of this user, yet no other user can
    create, replace or read them: it is created with mode 0700, and an existing one must be a
    real directory (not a symlink) owned by this user; a wider mode is narrowed to 0700.

    Raises:
        ClusterError: the path exists and is not a directory of this user (someone else made
            it): remove it, or point ``TMPDIR`` at a private directory.
    """
    import stat

    root = _private_root()
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ClusterError(
            f"{root} is not a directory owned by you (uid {os.getuid()}): another user or program made it; "
            "remove it, or set TMPDIR to a private directory"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(root, 0o700)
    return root


def start_lock_path() -> Path:
    """The lock held while one of this user's local clusters picks its ports and starts its head."""
    return private_tmp_dir() / "local-start.lock"


def home_start_lock_path() -> Path:
    """The lock held by :func:`start_local_cluster` from reading this data dir's state file to
    recording its cluster: ``<data dir>/local-cluster.lock``."""
    return data_dir() / "local-cluster.lock"


#: Seconds a start waits for another start of the same data dir (ray start's attempts and the
#: readiness waits of a loaded machine fit in it).
START_LOCK_TIMEOUT_S = 900.0


@contextmanager
def _held(lock: Path, timeout_s: float, busy: str) -> Iterator[None]:
    """Hold ``lock`` (:class:`filelock.FileLock`: an ``flock`` the kernel releases when the process
    dies), waiting at most ``timeout_s`` seconds for another holder.

    Raises:
        ClusterError: ``busy``, with the wait and the lock file, when the wait runs out.
    """
    from filelock import FileLock, Timeout

    try:
        with FileLock(lock, timeout=timeout_s):
            yield
    except Timeout:
        raise ClusterError(f"{busy} after {timeout_s:.0f} s (lock {lock}): wait for it, or stop it (hyperpod-rl local stop)") from None


_PORT_CONFLICT = ("Address already in use", "address already in use", "Failed to start the grpc server", "is already in use")
#: What ``ray start`` says when its dashboard process died or was too slow to come up, or its
#: node timed out starting, which happens on a loaded machine (seen with load average > 6 per
#: core); a new attempt usually works.
_DASHBOARD_FAILED = (
    "Failed to start the dashboard",
    "dashboard.err",
    "Failed to read dashboard",
    "timed out during startup",
    "GCS has become overloaded",
)


def _machine_start_lock(timeout_s: float = 600.0) -> Any:
    """Serialise this user's local-cluster starts on this machine (:func:`_held` on :func:`start_lock_path`).

    Two notebooks, or a notebook and a terminal, that start clusters at the same moment would
    otherwise both see the same port free and one ``ray start`` would fail.

    Raises:
        ClusterError: another start held the lock for ``timeout_s`` seconds.
    """
    return _held(start_lock_path(), timeout_s, "another local cluster of this user is still starting")


def _start_head(path: Path, *, token: str, temp_dir: str, num_cpus: int | None, dashboard_port: int | None) -> LocalCluster:
    """Run ``ray start --head`` on free ports; on a port taken in between (by a Ray cluster that is
    not ours) or a dashboard that did not come up (a loaded machine), stop what started and try
    again with new ports, twice at most.

    Raises:
        ClusterError: Ray failed to start; a port conflict says which ports and what to do.
    """
    from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_fixed

    def transient(err: BaseException) -> bool:
        if not isinstance(err, ClusterError):
            return False
        return (any(s in str(err) for s in _PORT_CONFLICT) and dashboard_port is None) or any(s in str(err) for s in _DASHBOARD_FAILED)

    def say_retry(state: RetryCallState) -> None:
        # said while waiting (Python's last-resort handler prints it on stderr where nothing configured
        # logging, e.g. the CLI): a retry under load takes minutes and was silent until the last one failed
        err = state.outcome.exception() if state.outcome else None
        first = str(err).strip().splitlines()[0] if err else "unknown error"
        log.warning(
            "ray start, attempt %d of 3, failed: %s; trying again in %.0f s on new ports", state.attempt_number, first, RETRY_WAIT_S
        )

    # a few seconds between attempts: a loaded machine gets a moment, a port race a new draw
    @retry(
        retry=retry_if_exception(transient), stop=stop_after_attempt(3), wait=wait_fixed(RETRY_WAIT_S), before_sleep=say_retry, reraise=True
    )
    def attempt() -> LocalCluster:
        ports = head_ports(dashboard_port)
        dash, gcs, metrics, client_port = ports["dashboard"], ports["gcs"], ports["metrics_export"], ports["client_server"]
        cmd = [
            _ray_executable(),
            "start",
            "--head",
            "--dashboard-host=127.0.0.1",
            f"--port={gcs}",
            f"--dashboard-port={dash}",
            f"--metrics-export-port={metrics}",
            f"--ray-client-server-port={client_port}",
            "--include-dashboard=true",
            f"--num-cpus={num_cpus or os.cpu_count() or 1}",
            # no --num-gpus: Ray counts the machine's GPUs (CUDA_VISIBLE_DEVICES / NVML), so a single-GPU
            # machine's head can hold a trainer.device=cuda or SkyRL job (0 on a CPU machine, as before)
            "--disable-usage-stats",
            f"--temp-dir={temp_dir}",
            *_node_port_flags(set(ports.values())),
        ]
        # Ray reads these two from the environment only (ray/dashboard/consts.py,
        # ray/autoscaler/_private/constants.py); their fixed defaults would make a second cluster
        # on this machine start without its dashboard and autoscaler metrics, silently.
        metric_env = {"DASHBOARD_METRIC_PORT": str(ports["dashboard_metrics"]), "AUTOSCALER_METRIC_PORT": str(ports["autoscaler_metrics"])}
        state = LocalClusterState(
            gcs_address=f"127.0.0.1:{gcs}",
            dashboard_url=f"http://127.0.0.1:{dash}",
            metrics_export_port=metrics,
            started_at=time.time(),
            python=sys.executable,
            temp_dir=temp_dir,
            token=token,
            dashboard_metrics_port=ports["dashboard_metrics"],
            autoscaler_metrics_port=ports["autoscaler_metrics"],
        )
        cluster = LocalCluster(state, state_path=path)
        try:
            _run_ray(cmd, token, metric_env)
            _write_state(path, state)
        except ClusterError as err:
            cluster.stop()
            if any(s in str(err) for s in _PORT_CONFLICT):
                raise ClusterError(
                    f"a port this cluster picked (GCS {gcs}, dashboard {dash}, metrics {metrics}) was taken by another program while Ray started; "
                    f"another Ray cluster is probably starting on this machine: try again, or pass another dashboard port. Ray said:\n{err}"
                ) from None
            if any(s in str(err) for s in _DASHBOARD_FAILED):
                load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
                raise ClusterError(
                    f"Ray's dashboard or node did not come up within {env_timeout('RAY_DASHBOARD_STARTUP_TIMEOUT_S')} s "
                    f"(load average {load} on {os.cpu_count()} cores): the machine is probably overloaded; stop other heavy "
                    f"work and try again, or raise RAY_DASHBOARD_STARTUP_TIMEOUT_S. {err}"
                ) from None
            raise
        except BaseException:
            cluster.stop()
            raise
        return cluster

    return attempt()


def env_timeout(name: str) -> str:
    """The value of one of :data:`RAY_START_TIMEOUTS` in force (the environment's, else ours)."""
    return os.environ.get(name, RAY_START_TIMEOUTS[name])


class _NotYet(Exception):
    """Internal: the cluster is not ready yet (retried by tenacity)."""


def _wait_ready(cluster: LocalCluster, *, timeout_s: float) -> None:
    """Wait until the job API answers with the token, then until a no-op job has succeeded.

    The job API answers before its agent can run jobs ("No available agent to submit job"), and
    on a loaded machine the first job's supervisor may not start in time (the job then FAILS), so
    a cluster is only handed out once a no-op job (``true``) has really SUCCEEDED; a probe that
    failed is followed by a new one. The probe leaves nothing in ``ray job list``: every attempt
    has its own id (``hprl-ready-<ms>-<n>``, so a retried submit never dead-ends on "already
    exists"), and every probe job, whatever its status, is removed before this returns or raises
    (:func:`hyperpod_rl.cluster.resources.remove_jobs`).

    Raises:
        ClusterError: not ready within ``timeout_s`` seconds (each stage).
    """
    from ray.job_submission import JobStatus
    from tenacity import (
        RetryError,
        Retrying,
        retry_if_exception_type,
        stop_after_delay,
        wait_fixed,
    )

    def retrying() -> Retrying:
        return Retrying(
            stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5), retry=retry_if_exception_type((_NotYet, RuntimeError)), reraise=False
        )

    client = cluster.job_client()
    prefix = f"hprl-ready-{int(time.time() * 1000)}-"
    tries = 0

    def probe() -> None:
        nonlocal tries
        tries += 1
        submission_id = client.submit_job(entrypoint="true", submission_id=f"{prefix}{tries}")
        deadline = time.monotonic() + timeout_s
        while not (status := JobStatus(client.get_job_status(submission_id))).is_terminal():
            if time.monotonic() > deadline:
                raise _NotYet(f"no-op job {submission_id} still {status.value}")
            time.sleep(0.5)
        if status != JobStatus.SUCCEEDED:
            raise _NotYet(f"no-op job {submission_id} {status.value}: {last_line(client.get_job_info(submission_id).message)}")

    try:
        for attempt in retrying():
            with attempt:
                if not cluster.is_alive():
                    raise _NotYet("job API not answering")
        for attempt in retrying():
            with attempt:
                probe()
    except RetryError as err:
        cause = err.last_attempt.exception()
        raise ClusterError(
            f"the local Ray cluster at {cluster.dashboard_url} was not ready within {timeout_s:.0f} s ({last_line(cause)})"
        ) from None
    finally:
        if tries:
            remove_jobs(client, prefix)


def current_local_cluster() -> LocalCluster | None:
    """The local cluster recorded in the state file, or ``None`` (no start, no probe)."""
    path = data_dir() / STATE_FILE
    state = _read_state(path)
    return LocalCluster(state, state_path=path) if state else None


def wait_for_local_cluster(*, timeout_s: float = 120.0, poll_s: float = 1.0) -> LocalCluster:
    """Wait until a local cluster is recorded and its job API answers.

    Raises:
        ClusterTimeout: none answered within ``timeout_s`` seconds (the message says how to start one).
    """
    from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_fixed

    @retry(retry=retry_if_result(lambda c: c is None), stop=stop_after_delay(timeout_s), wait=wait_fixed(poll_s))
    def answering() -> LocalCluster | None:
        cluster = current_local_cluster()
        return cluster if cluster is not None and cluster.is_alive() else None

    try:
        return answering()  # type: ignore[return-value]
    except RetryError:
        raise ClusterTimeout(
            f"no local cluster's job API answered within {timeout_s:.0f} s: start one (hyperpod-rl local start, or Apply in the panel)"
        ) from None


def local_job_client() -> Any:
    """The authenticated ``JobSubmissionClient`` of the running local cluster.

    Raises:
        ClusterError: no local cluster is recorded, or it does not answer (the message gives the
            command that starts one).
    """
    cluster = current_local_cluster()
    if cluster is None or not cluster.is_alive():
        raise ClusterError("no local Ray cluster is running: start one with hyperpod-rl local start (or hp.start_local_cluster())")
    return cluster.job_client()
