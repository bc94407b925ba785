"""Exact resume under SIGKILL: a real Ray job on the local cluster, killed and resubmitted.

One run is killed three times (right after a checkpoint, at a random step, right after the
checkpoint that closes an epoch) and resubmitted each time; its final adapter must be bitwise
identical to an uninterrupted run with the same seed, and its metrics the same numbers.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.tasks.maze import read_rows, write_parquet
from tests.ray_jobs import submit, wait_terminal

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.job]

TRAIN_ROWS, PROMPTS_PER_STEP, STEPS, INTERVAL = 6, 2, 9, 2  # 3 steps per epoch; checkpoints at 2, 4, 6, 8
TIMING = ("timing/", "trainer/tokens_per_second")


def _config(setup, tmp: Path, run_id: str):
    train = tmp / "data" / "train.parquet"
    heldout = tmp / "data" / "heldout.parquet"
    if not train.exists():
        write_parquet(read_rows(setup["data"].train)[:TRAIN_ROWS], train)
        write_parquet(read_rows(setup["data"].heldout)[:4], heldout)
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    data["data"].update(train_path=str(train), heldout_path=str(heldout), prompts_per_step=PROMPTS_PER_STEP)
    data["trainer"].update(steps=STEPS, torch_threads=1, eval_rows=4)
    data["checkpoint"].update(interval=INTERVAL, keep=2)
    return type(cfg).build(data)


def _wait_terminal(client, submission_id: str) -> str:
    return wait_terminal(client, submission_id, timeout_s=300, poll_s=0.2)


def _trainer_pid(run_dir: Path, not_pid: int | None, timeout_s: float = 180) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pid = json.loads((run_dir / "trainer.lock").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            pid = None
        if pid and pid != not_pid:
            return int(pid)
        time.sleep(0.02)
    raise AssertionError("the trainer never took its run lock")


def _kill_when(client, cfg, run_dir: Path, ready, last_pid: int | None, what: str) -> int:
    """Submit (resume), wait for ``ready()``, SIGKILL the trainer process; return its pid."""
    handle = submit(client, cfg, run_dir)
    pid = _trainer_pid(run_dir, last_pid)
    deadline = time.monotonic() + 240
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached the kill point: {what}")
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)  # raises ProcessLookupError if the run had already ended
    assert _wait_terminal(client, handle.submission_id) == "FAILED", what
    return pid


def _resumes(run_dir: Path) -> int:
    try:
        return len(json.loads((run_dir / "manifest.json").read_text())["resumes"])
    except (OSError, ValueError, KeyError):
        return -1


def _metric_steps(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    return sum(1 for line in path.read_text().splitlines() if line.endswith("}")) if path.exists() else 0


def _numbers(run_dir: Path) -> list[dict[str, float]]:
    return [{k: v for k, v in r.values.items() if not k.startswith(TIMING)} for r in read_metrics(run_dir / "metrics.jsonl")]


def test_sigkilled_run_resumes_bitwise_identical(tiny_setup, local_cluster, tmp_path):
    """Slow: a Ray job SIGKILLed mid-run, resumed, and compared with an uninterrupted run."""
    client = local_cluster.job_client()
    straight_dir, killed_dir = tmp_path / "runs" / "resume-straight", tmp_path / "runs" / "resume-killed"
    straight_cfg, killed_cfg = _config(tiny_setup, tmp_path, "resume-straight"), _config(tiny_setup, tmp_path, "resume-killed")
    assert straight_cfg.config_hash() == killed_cfg.config_hash()
    straight = submit(client, straight_cfg, straight_dir)  # runs alongside the killed one

    ckpt = killed_dir / "checkpoints"
    # 1. right after the first checkpoint
    pid = _kill_when(client, killed_cfg, killed_dir, lambda: (ckpt / "step_000002").is_dir(), None, "after checkpoint 2")
    # 2. at a random step between checkpoints
    k = random.Random().randint(3, 5)
    print(f"random kill step: {k}")
    pid = _kill_when(
        client, killed_cfg, killed_dir, lambda: _resumes(killed_dir) == 1 and _metric_steps(killed_dir) >= k, pid, f"at step {k}"
    )
    # 3. right after the checkpoint that closes epoch 2 (6 rows, 2 per step: steps 4-6)
    pid = _kill_when(
        client, killed_cfg, killed_dir, lambda: _resumes(killed_dir) == 2 and (ckpt / "step_000006").is_dir(), pid, "at the epoch boundary"
    )
    state = json.loads((ckpt / "step_000006" / "trainer_state.json").read_text())
    assert state["sampler"] == {"epoch": 1, "index": TRAIN_ROWS}  # the epoch is exhausted, the next is not drawn yet
    # 4. resubmit: completes
    final = submit(client, killed_cfg, killed_dir)
    assert _wait_terminal(client, final.submission_id) == "SUCCEEDED", client.get_job_logs(final.submission_id)[-3000:]
    assert _wait_terminal(client, straight.submission_id) == "SUCCEEDED", client.get_job_logs(straight.submission_id)[-3000:]

    a = load_file(str(straight_dir / "adapter" / "adapter_model.safetensors"))
    b = load_file(str(killed_dir / "adapter" / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and a
    assert all(a[key].dtype == b[key].dtype and a[key].numpy().tobytes() == b[key].numpy().tobytes() for key in a)  # bitwise
    assert [r.step for r in read_metrics(killed_dir / "metrics.jsonl")] == list(range(1, STEPS + 1))
    assert _numbers(killed_dir) == _numbers(straight_dir)
    manifest = json.loads((killed_dir / "manifest.json").read_text())
    assert manifest["status"] == "succeeded"
    assert len(manifest["resumes"]) == 3 and manifest["resumes"][-1]["from_step"] == 6
    assert [c["step"] for c in manifest["checkpoints"]] == [6, 8]
    logs = client.get_job_logs(final.submission_id)
    assert "resumed from step_000006 (step 6, epoch 1)" in logs
