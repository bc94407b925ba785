"""What a stopped local cluster leaves in ``TMPDIR``: its last session's Ray logs, said where; nothing else of ours.

New-user report: after ``hyperpod-rl local stop``, Ray's session logs (5.7 MB) stayed under
``$TMPDIR/hprl-0`` unannounced, and an empty ``$TMPDIR/torchinductor_root`` was left. Ray itself
keeps ``/tmp/ray/session_*`` after ``ray stop``, and a failed job's traceback is in its session's
``job-driver-*.log``, so the last session's logs are kept, and ``local stop`` says where and how
big they are; the sessions of earlier starts, in the cluster's own temp dir, are removed by it.
The empty folder was torch's default TorchInductor cache, made in ``TMPDIR`` by every process
that imports ``torch._dynamo`` (transformers and peft do) whether it compiles or not:
``import hyperpod_rl`` now points ``TORCHINDUCTOR_CACHE_DIR`` at ``~/.cache/hyperpod-rl/torchinductor``
(where ``make test`` keeps it) unless it is set, and the local cluster's processes inherit it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hyperpod_rl.cluster.local import keep_last_session


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HYPERPOD_RL_HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "300"}
    for name in ("TORCHINDUCTOR_CACHE_DIR", "HYPERPOD_RL_ADDRESS", "HYPERPOD_RL_STORAGE"):
        env.pop(name, None)
    return {**env, **extra}


def test_the_last_session_is_kept_and_the_earlier_ones_go(tmp_path: Path) -> None:
    temp_dir = tmp_path / "hprl-0" / "0123456789"
    old, last = temp_dir / "session_2026-12-06_07-59-17_514866_41", temp_dir / "session_2026-12-07_10-00-00_000001_42"
    for session in (old, last):
        (session / "logs").mkdir(parents=True)
        (session / "logs" / "raylet.out").write_bytes(b"x" * 160_000)
    (temp_dir / "session_latest").symlink_to(last)
    logs = keep_last_session(temp_dir)
    assert logs is not None and logs.path == last / "logs" and logs.size == "0.2 MB", logs
    assert not old.exists() and last.is_dir()
    assert keep_last_session(tmp_path / "none") is None


def test_importing_the_package_keeps_torchs_cache_out_of_tmpdir(tmp_path: Path) -> None:
    """What every process of ours does before it loads a model (transformers, peft import
    ``torch._dynamo``); a setting of the user's own wins."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = "import hyperpod_rl, os, torch._dynamo; print(os.environ['TORCHINDUCTOR_CACHE_DIR'])"
    out = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path, TMPDIR=str(tmp)), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / "cache" / "hyperpod-rl" / "torchinductor"), out
    assert list(tmp.iterdir()) == [], list(tmp.iterdir())
    mine = str(tmp_path / "mine")
    env = _env(tmp_path, TMPDIR=str(tmp), TORCHINDUCTOR_CACHE_DIR=mine)
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip() == mine


@pytest.mark.ray
@pytest.mark.cluster
def test_local_stop_says_where_the_logs_are_and_leaves_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster of its own runs a job that imports torch's compiler stack and fails, then
    ``local stop``: the failed job's log is in the logs it names, an earlier session is gone,
    and no ``torchinductor_*`` folder appeared in ``TMPDIR``.

    Slow: a local cluster of its own starts and stops (about 45 s and 15 s on 2 busy cores); what
    it leaves is the test."""
    from hyperpod_rl.cluster.local import current_local_cluster
    from hyperpod_rl.jobs import wait_terminal

    env = _env(tmp_path)
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("torchinductor_*"))
    cli = [sys.executable, "-m", "hyperpod_rl.cli"]
    try:
        started = subprocess.run([*cli, "local", "start", "--num-cpus", "1"], env=env, capture_output=True, text=True, timeout=900)
        assert started.returncode == 0, started.stdout + started.stderr[-3000:]
        monkeypatch.setenv("HYPERPOD_RL_HOME", env["HYPERPOD_RL_HOME"])
        cluster = current_local_cluster()
        assert cluster is not None
        earlier = Path(cluster.state.temp_dir) / "session_2020-01-01_00-00-00_000000_1"
        (earlier / "logs").mkdir(parents=True)  # what an earlier start of this data dir left
        client = cluster.job_client()
        job = f"hprl-leftovers-{int(time.time())}-1"
        client.submit_job(entrypoint=f"{sys.executable} -c 'import torch._dynamo, sys; sys.exit(3)'", submission_id=job)
        assert wait_terminal(client, job, 300) == "FAILED"
    finally:
        stopped = subprocess.run([*cli, "local", "stop"], env=env, capture_output=True, text=True, timeout=300)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    said = " ".join(stopped.stdout.split())
    assert said.startswith("local Ray cluster stopped the local cluster's Ray logs (its jobs': job-driver-hprl-<run id>-<N>.log) "), said
    logs = Path(said.split(" are kept in ")[1].split(" (")[0])
    assert logs.parent.parent == Path(cluster.state.temp_dir) and (logs / f"job-driver-{job}.log").is_file(), said
    assert said.endswith("MB); the next cluster's stop replaces them") or said.endswith("kB); the next cluster's stop replaces them")
    assert not earlier.exists()
    assert set(tmp.glob("torchinductor_*")) == before
    assert (tmp_path / "cache" / "hyperpod-rl" / "torchinductor").is_dir()  # the job's torch used the user's cache
