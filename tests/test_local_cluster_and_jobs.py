"""The job lifecycle against a real local Ray cluster (token auth on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import requests

from hyperpod_rl.cluster.local import LocalCluster, private_tmp_dir, start_local_cluster
from hyperpod_rl.errors import JobError
from hyperpod_rl.jobs import follow_run, latest_submission, list_runs, stop_run, submit_run
from hyperpod_rl.quickstart import make_run_config

pytestmark = pytest.mark.ray


def _config(setup, run_id: str, steps: int):
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    data["trainer"]["steps"] = steps
    return type(cfg).build(data)


def test_token_auth_protects_the_job_api_and_the_state_file(local_cluster):
    assert requests.get(f"{local_cluster.dashboard_url}/api/jobs/", timeout=10).status_code == 401
    assert requests.get(f"{local_cluster.dashboard_url}/api/jobs/", headers={"Authorization": "Bearer wrong"}, timeout=10).status_code in (
        401,
        403,
    )
    assert local_cluster.is_alive()
    assert local_cluster.dashboard_url.startswith("http://127.0.0.1:")
    mode = stat.S_IMODE(os.stat(local_cluster.state_path).st_mode)
    assert mode == 0o600
    assert local_cluster.state.token not in repr(local_cluster)
    assert local_cluster.state.token not in repr(local_cluster.state)


def test_a_ctrl_c_in_the_starting_terminal_does_not_reach_the_cluster(local_cluster):
    """Field report: Ctrl-C in a terminal running the quickstart, which had started the local cluster,
    stopped the cluster's dashboard (a KeyboardInterrupt in its dashboard.err), although the
    quickstart said the job kept running. A terminal sends Ctrl-C's SIGINT to its whole foreground
    process group, and ``ray start``'s daemons were in the starter's. They are now in a session of
    their own: none shares this process's group or session (this process started the cluster)."""
    daemons = [
        proc
        for proc in psutil.process_iter(["cmdline"])
        if local_cluster.state.temp_dir in " ".join(proc.info["cmdline"] or []) and proc.pid != os.getpid()
    ]
    names = {" ".join(proc.info["cmdline"] or []) for proc in daemons}
    assert all(any(daemon in n for n in names) for daemon in ("gcs_server", "raylet", "dashboard.py")), names
    for proc in daemons:
        try:
            assert os.getpgid(proc.pid) != os.getpgid(0) and os.getsid(proc.pid) != os.getsid(0), proc.info["cmdline"]
        except ProcessLookupError:
            continue  # a short-lived worker that ended meanwhile


def test_running_cluster_is_reused(local_cluster):
    again = start_local_cluster()
    assert again.dashboard_url == local_cluster.dashboard_url
    assert again.restarted_stale is False


def test_dead_or_foreign_cluster_is_not_alive(local_cluster, tmp_path):
    from dataclasses import replace

    wrong_token = LocalCluster(replace(local_cluster.state, token="0" * 64), state_path=tmp_path / "s.json")
    assert not wrong_token.is_alive()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]
    dead = LocalCluster(replace(local_cluster.state, dashboard_url=f"http://127.0.0.1:{dead_port}"), state_path=tmp_path / "s.json")
    assert not dead.is_alive(timeout_s=2)


def test_explicit_dashboard_port_in_use_is_refused_before_starting(tmp_path):
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        port = sock.getsockname()[1]
        env = {**os.environ, "HYPERPOD_RL_HOME": str(tmp_path)}
        code = f"from hyperpod_rl.cluster.local import start_local_cluster; start_local_cluster(dashboard_port={port})"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert f"dashboard port {port} is already in use" in proc.stderr
    assert not (tmp_path / "local-cluster.json").exists()


@pytest.mark.job
def test_job_runs_to_success_and_streams_metrics(local_cluster, tiny_setup, tmp_path):
    client = local_cluster.job_client()
    cfg = _config(tiny_setup, "job-ok", steps=2)
    handle = submit_run(client, cfg, tmp_path / "job-ok")
    assert handle.submission_id == "hprl-job-ok-1"
    assert latest_submission(tmp_path / "job-ok") == handle.submission_id
    updates = list(follow_run(client, handle.submission_id, poll_s=0.5))
    assert updates[-1].terminal and updates[-1].status == "SUCCEEDED", client.get_job_logs(handle.submission_id)[-3000:]
    steps = [r.step for u in updates for r in u.records]
    assert steps == [1, 2]
    assert (tmp_path / "job-ok" / "adapter" / "adapter_model.safetensors").is_file()
    assert any(r["submission_id"] == handle.submission_id and r["run_id"] == "job-ok" for r in list_runs(client))
    logs = client.get_job_logs(handle.submission_id)
    assert local_cluster.state.token not in logs
    with pytest.raises(JobError, match="already finished"):
        submit_run(client, cfg, tmp_path / "job-ok")


@pytest.mark.job
def test_a_followed_job_detaches_on_ctrl_c_refuses_a_second_submission_and_stops(local_cluster, tiny_setup):
    """One running job, in the order a user meets it: Ctrl-C in ``job logs --follow`` detaches and the
    job keeps running; a second submission of the run is refused; ``stop_run`` (notebook 06's
    ``hp.stop_run``) stops it and the run says ``stopped`` at once (not left ``running`` until a
    reconcile); resubmitting resumes it as a new submission, and no trainer outlives the stopped jobs.

    Slow: two submissions of one run, each stopped once it trains, and the check that no trainer
    outlives them."""
    import signal

    from hyperpod_rl.paths import run_dir

    client = local_cluster.job_client()
    cfg = _config(tiny_setup, "job-stop", steps=500)
    rdir = run_dir("job-stop")
    handle = submit_run(client, cfg, rdir)
    follower = subprocess.Popen(
        [sys.executable, "-m", "hyperpod_rl.cli", "job", "logs", "--follow", "job-stop"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        # A shell that runs the tests in the background ignores SIGINT, and a child would inherit
        # that: give the follower the default disposition a user's terminal gives it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        try:
            first = ""
            while not first.startswith("grpo "):  # the follower is following: it printed step 1 (labelled by the stage)
                first = follower.stdout.readline()
                assert first, "the follower ended before following"
            follower.send_signal(signal.SIGINT)
            out, _ = follower.communicate(timeout=60)
            out = first + out
        finally:
            follower.kill()
        assert follower.returncode == 130, out
        assert "detached; the job keeps running" in out
        assert client.get_job_status(handle.submission_id).value == "RUNNING"
        assert local_cluster.state.token not in out
        assert _status(rdir) == "running"

        with pytest.raises(JobError, match="already running"):
            submit_run(client, cfg, rdir)
        assert stop_run(client, handle.submission_id) is True
        assert client.get_job_status(handle.submission_id).value == "STOPPED"  # stop_run waited for the end
        assert _status(rdir) == "stopped"
        assert json.loads((rdir / "manifest.json").read_text())["ended"]["submission_id"] == handle.submission_id
        assert stop_run(client, handle.submission_id) is False  # already ended
        # Resubmitting the same run id resumes it (a new submission id, same run directory).
        again = submit_run(client, cfg, rdir)
        assert again.submission_id == "hprl-job-stop-2"
        stop_run(client, again.submission_id)
        deadline = time.time() + 60
        while not client.get_job_status(again.submission_id).is_terminal() and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(3)
        # No trainer of this run may outlive its stopped jobs.
        config_path = str(rdir / "config.json")
        left = [p.pid for p in psutil.process_iter(["cmdline"]) if config_path in " ".join(p.info["cmdline"] or [])]
        assert left == [], f"trainer processes still running after stop: {left}"
        assert json.loads((rdir / "submissions.json").read_text()) == ["hprl-job-stop-1", "hprl-job-stop-2"]
    finally:
        for sid in ("hprl-job-stop-1", "hprl-job-stop-2"):  # a job a failed assertion left running
            try:
                stop_run(client, sid)
            except JobError:
                pass


def _status(run_dir: Path) -> str | None:
    """The run's status as its manifest records it (None before the trainer wrote one)."""
    manifest = run_dir / "manifest.json"
    return json.loads(manifest.read_text()).get("status") if manifest.is_file() else None


@pytest.mark.job
def test_readiness_probe_jobs_are_removed_whatever_their_status(local_cluster):
    """Issue 14 item 15: probe jobs that succeeded (the case Ray's job monitor used to write back
    as FAILED after the delete), failed or still run are all removed, and stay removed."""
    from ray.job_submission import JobStatus

    from hyperpod_rl.cluster.resources import remove_jobs

    client = local_cluster.job_client()
    assert not [j.submission_id for j in client.list_jobs() if (j.submission_id or "").startswith("hprl-ready-")]
    prefix = "hprl-ready-test-"
    wanted = {
        client.submit_job(entrypoint="true", submission_id=f"{prefix}1"): JobStatus.SUCCEEDED,
        client.submit_job(entrypoint="false", submission_id=f"{prefix}2"): JobStatus.FAILED,
        client.submit_job(entrypoint="sleep 300", submission_id=f"{prefix}3"): JobStatus.RUNNING,
    }
    deadline = time.monotonic() + 120
    while any(client.get_job_status(sid) != status for sid, status in wanted.items()):
        assert time.monotonic() < deadline, {sid: client.get_job_status(sid) for sid in wanted}
        time.sleep(0.2)
    remove_jobs(client, prefix)
    for _ in range(10):  # and nothing comes back (the job monitor writes late)
        assert [(j.submission_id, j.status) for j in client.list_jobs() if (j.submission_id or "").startswith(prefix)] == []
        time.sleep(1)


def _wait_for_metrics(port: int, timeout_s: float = 120.0) -> str:
    """The Prometheus text on ``port`` of this machine's address (the dashboard starts it late)."""
    host = socket.gethostbyname(socket.gethostname())
    deadline = time.monotonic() + timeout_s
    while True:
        for address in (host, "127.0.0.1"):
            try:
                resp = requests.get(f"http://{address}:{port}/metrics", timeout=10)
                if resp.status_code == 200:
                    return resp.text
            except requests.RequestException:
                pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no metrics endpoint answered on port {port} within {timeout_s:.0f} s")
        time.sleep(1)


def _processes_with(*texts: str) -> list[psutil.Process]:
    """The processes whose command line holds every one of ``texts`` (a cluster's Ray temp dir: its
    processes; with ``gcs_server``: its heads)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if all(text in cmd for text in texts):
            found.append(proc)
    return found


@pytest.mark.cluster
def test_starts_at_the_same_moment_one_head_per_data_dir_and_a_stale_state_restarted(local_cluster, tmp_path, monkeypatch):
    """Three `hyperpod-rl local start` at the same moment, as two notebooks and a terminal on one
    Studio space run them, beside the session's cluster; each field report is checked on them:

    * two data dirs (A and B) start two clusters (issue 14, item 16: a cluster started while another
      was starting failed at `ray start`): both run, each with its own ports (issue 30 item 5e);
    * two starts with one data dir (A) start one Ray head (issue 42 item 5): the second waits for the
      data dir's start lock, then reuses the first one's cluster; none is left running unrecorded;
    * B's state file names a cluster that is gone (e.g. after a reboot): a fresh cluster is started,
      and said so;
    * what a stopped cluster leaves in TMPDIR (a new user's report: Ray's session logs unannounced
      and an empty ``torchinductor_*`` folder): A runs a job that imports torch's compiler stack and
      fails; ``local stop`` says where the last session's logs are kept (the failed job's driver log
      among them), removes an earlier session's, and no ``torchinductor_*`` folder appears in TMPDIR
      (``import hyperpod_rl`` points TorchInductor's cache at ``~/.cache/hyperpod-rl``:
      tests/test_local_stop_leftovers.py).

    Slow: two real clusters start at once beside the session's (about 130 s on 2 cores); that they
    start is the test. One scenario for the four reports: each cluster start costs about 45 s."""
    from hyperpod_rl.cluster.local import current_local_cluster, local_temp_dir
    from hyperpod_rl.jobs import wait_terminal

    home_a, home_b = tmp_path / "a", tmp_path / "b"
    home_b.mkdir()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]
    dead_token = "f" * 64
    stale = {
        "gcs_address": f"127.0.0.1:{dead_port}",
        "dashboard_url": f"http://127.0.0.1:{dead_port}",
        "metrics_export_port": dead_port,
        "started_at": 0.0,
        "python": sys.executable,
        "temp_dir": "/tmp/hprl-gone",
        "worker_nodes": 0,
        "token": dead_token,
    }
    (home_b / "local-cluster.json").write_text(json.dumps(stale))
    temp_dirs = []
    for home in (home_a, home_b):
        with monkeypatch.context() as env:
            env.setenv("HYPERPOD_RL_HOME", str(home))
            temp_dirs.append(local_temp_dir())
    cli = [sys.executable, "-m", "hyperpod_rl.cli"]

    def env_of(home: Path) -> dict[str, str]:  # no TorchInductor setting of make test's: the package's own applies
        env = {**os.environ, "HYPERPOD_RL_HOME": str(home), "COLUMNS": "300"}
        env.pop("TORCHINDUCTOR_CACHE_DIR", None)
        return env

    tmp = Path(tempfile.gettempdir())
    inductor_before = set(tmp.glob("torchinductor_*"))

    procs = [
        subprocess.Popen(
            [*cli, "local", "start", "--num-cpus", "1"], env=env_of(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for home in (home_a, home_a, home_b)
    ]
    try:
        # a start may retry twice on a loaded machine, each try waiting up to 150 s for the dashboard;
        # A's second start waits for the first one's lock
        outputs = [proc.communicate(timeout=1500) for proc in procs]
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, (out, err[-3000:])
        urls = [re.search(r"dashboard (http://127\.0\.0\.1:\d+)", out).group(1) for out, _ in outputs]  # type: ignore[union-attr]
        states = [json.loads((home / "local-cluster.json").read_text()) for home in (home_a, home_b)]
        # one data dir, one head: A's second start reused the first one's cluster, and it is the one recorded
        assert urls[0] == urls[1] == states[0]["dashboard_url"], outputs
        heads = _processes_with("gcs_server", temp_dirs[0])
        assert len(heads) == 1, [p.info["cmdline"] for p in heads]
        # B's stale state file: a fresh cluster, said so (A had nothing recorded), the dead one's token never shown
        said = [" ".join(out.split()) for out, _ in outputs]
        stale_line = "the recorded local cluster was not answering (stale): it was stopped and started again"
        assert [stale_line in text for text in said] == [False, False, True], said
        assert urls[2] == states[1]["dashboard_url"] and states[1]["token"] != dead_token
        assert dead_token not in "".join(out + err for out, err in outputs)
        # two data dirs, two clusters, each with its own addresses and ports
        assert states[0]["dashboard_url"] != states[1]["dashboard_url"]
        assert states[0]["gcs_address"] != states[1]["gcs_address"]
        for state in states:
            headers = {"Authorization": f"Bearer {state['token']}"}
            resp = requests.get(f"{state['dashboard_url']}/api/jobs/", headers=headers, timeout=30)
            assert resp.status_code == 200
            # issue 14 item 15: `local start` leaves nothing in `ray job list` (no FAILED hprl-ready-... probe)
            assert [(j["submission_id"], j["status"]) for j in resp.json()] == []
        # issue 30 item 5e: Ray's dashboard metrics port is a fixed 44227 unless set, so the second
        # cluster had no dashboard metrics endpoint; each now has its own, and it answers
        ports = [(s["dashboard_metrics_port"], s["metrics_export_port"]) for s in states]
        assert len({p for pair in ports for p in pair}) == 4, ports
        for dashboard_metrics, _ in ports:
            metrics = _wait_for_metrics(dashboard_metrics)
            assert "# TYPE" in metrics and "ray_" in metrics, metrics[:300]
        for state in states:  # the Ray temp dirs are in this user's private 0700 directory
            assert Path(state["temp_dir"]).parent == private_tmp_dir() and stat.S_IMODE(private_tmp_dir().stat().st_mode) == 0o700
        assert local_cluster.is_alive()  # the session's cluster was left alone
        # what A's stop will leave: an earlier session of A's data dir, and a failed job that imported torch._dynamo
        earlier = Path(states[0]["temp_dir"]) / "session_2020-01-01_00-00-00_000000_1"
        (earlier / "logs").mkdir(parents=True)
        with monkeypatch.context() as env:
            env.setenv("HYPERPOD_RL_HOME", str(home_a))
            cluster_a = current_local_cluster()
        assert cluster_a is not None
        job = f"hprl-leftovers-{int(time.time())}-1"
        cluster_a.job_client().submit_job(entrypoint=f"{sys.executable} -c 'import torch._dynamo, sys; sys.exit(3)'", submission_id=job)
        assert wait_terminal(cluster_a.job_client(), job, 300) == "FAILED"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stops = [
            subprocess.run([*cli, "local", "stop"], env=env_of(home), capture_output=True, text=True, timeout=300, check=False)
            for home in (home_a, home_b)
        ]
    assert [s.returncode for s in stops] == [0, 0], [s.stderr[-2000:] for s in stops]
    assert [_processes_with(temp_dir) for temp_dir in temp_dirs] == [[], []]
    said = " ".join(stops[0].stdout.split())
    assert said.startswith("local Ray cluster stopped the local cluster's Ray logs (its jobs': job-driver-hprl-<run id>-<N>.log) "), said
    logs = Path(said.split(" are kept in ")[1].split(" (")[0])
    assert logs.parent.parent == Path(states[0]["temp_dir"]) and (logs / f"job-driver-{job}.log").is_file(), said
    assert said.endswith(("MB); the next cluster's stop replaces them", "kB); the next cluster's stop replaces them")), said
    assert not earlier.exists()
    assert set(tmp.glob("torchinductor_*")) == inductor_before


@pytest.mark.job
def test_concurrent_submits_of_one_run_give_one_job_that_another_storage_root_finds(local_cluster, tiny_setup, tmp_path):
    """Field reports (issue 14, item 7), on one job:

    * two submits of one run at the same moment gave a raw FileNotFoundError or a Ray traceback,
      and the refused caller's config overwrote config.json;
    * with hprl-<run>-1 on the cluster but no submissions.json (another storage root, a wiped run
      directory), every resubmit failed with Ray's "already exists".

    Slow: three submissions of one run, two of them stopped (about 55 s on 2 cores beside other work)."""
    import threading

    from hyperpod_rl.jobs import latest_job

    client = local_cluster.job_client()
    run_dir, second_dir = tmp_path / "race-run", tmp_path / "second" / "race-run"
    configs = {steps: _config(tiny_setup, "race-run", steps) for steps in (40, 41)}
    results: dict[int, object] = {}
    barrier = threading.Barrier(2)

    def submit(steps: int) -> None:
        barrier.wait()
        try:
            results[steps] = submit_run(client, configs[steps], run_dir)
        except Exception as err:  # noqa: BLE001 - the test inspects what each caller got
            results[steps] = err

    threads = [threading.Thread(target=submit, args=(s,)) for s in configs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        handles = {s: r for s, r in results.items() if not isinstance(r, Exception)}
        errors = {s: r for s, r in results.items() if isinstance(r, Exception)}
        assert len(handles) == 1 and len(errors) == 1, results
        (won, handle), err = next(iter(handles.items())), next(iter(errors.values()))
        assert isinstance(err, JobError), repr(err)
        assert f"already running as {handle.submission_id}" in str(err)
        on_disk = json.loads((run_dir / "config.json").read_text())
        assert on_disk["trainer"]["steps"] == won  # the refused caller changed nothing
        assert json.loads((run_dir / "submissions.json").read_text()) == [handle.submission_id]
        jobs = [j for j in list_runs(client) if j["run_id"] == "race-run"]
        assert len(jobs) == 1

        # Another storage root (or a wiped run directory) does not know the running job: the
        # cluster's job metadata does.
        assert latest_job(client, "race-run", second_dir).submission_id == handle.submission_id
        with pytest.raises(JobError, match=f"already running as {handle.submission_id}"):
            submit_run(client, configs[won], second_dir)
        stop_run(client, handle.submission_id)
        deadline = time.monotonic() + 120
        while latest_job(client, "race-run", second_dir).alive and time.monotonic() < deadline:
            time.sleep(1)
        again = submit_run(client, _config(tiny_setup, "race-run", 2), second_dir)
        assert again.submission_id == "hprl-race-run-2"  # the next free id, not a dead end
        assert json.loads((second_dir / "submissions.json").read_text()) == ["hprl-race-run-2"]
        stop_run(client, again.submission_id)
    finally:
        for sid in ("hprl-race-run-1", "hprl-race-run-2"):
            try:
                stop_run(client, sid)
            except JobError:
                pass
