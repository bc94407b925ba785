"""Issue 42 item 5: two ``hyperpod-rl local start`` at once with one ``HYPERPOD_RL_HOME`` start one
Ray head (the second waits for the data dir's start lock, then reuses the first one's cluster);
none is left running unrecorded. Two real commands, started together, against real Ray."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest


def _heads(temp_dir: str) -> list[psutil.Process]:
    """The GCS servers (one per Ray head) of the cluster whose Ray temp dir is ``temp_dir``."""
    out = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if "gcs_server" in cmd and temp_dir in cmd:
            out.append(proc)
    return out


def _ours(temp_dir: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if temp_dir in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.mark.ray
def test_two_starts_at_once_with_one_home_start_one_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two `local start` at once with one home: one Ray head, recorded; the second caller reuses it.

    Slow: two CLI processes and a real Ray head started, checked and stopped."""
    from hyperpod_rl.cluster.local import local_temp_dir

    home = tmp_path / "home"
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(home))
    temp_dir = local_temp_dir()
    env = {**os.environ, "HYPERPOD_RL_HOME": str(home), "COLUMNS": "300"}
    cli = [sys.executable, "-m", "hyperpod_rl.cli"]
    starts = [
        subprocess.Popen([*cli, "local", "start", "--num-cpus", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        outputs = [proc.communicate(timeout=1500) for proc in starts]
        for proc, (out, err) in zip(starts, outputs, strict=True):
            assert proc.returncode == 0, (out, err[-3000:])
        urls = {re.search(r"dashboard (http://127\.0\.0\.1:\d+)", out).group(1) for out, _ in outputs}  # type: ignore[union-attr]
        assert len(urls) == 1, outputs  # the second reused the first one's cluster
        assert json.loads((home / "local-cluster.json").read_text())["dashboard_url"] in urls  # and it is the one recorded
        assert len(_heads(temp_dir)) == 1, [p.info["cmdline"] for p in _heads(temp_dir)]
    finally:
        for proc in starts:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stop = subprocess.run([*cli, "local", "stop"], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert stop.returncode == 0, stop.stderr[-2000:]
    assert _ours(temp_dir) == []
