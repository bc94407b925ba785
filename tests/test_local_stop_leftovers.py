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
The stop of a real cluster is checked in tests/test_local_cluster_and_jobs.py's concurrent-starts
test, which starts and stops its own clusters anyway (a cluster start costs about 45 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
