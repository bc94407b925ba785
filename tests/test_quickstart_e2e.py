"""A reduced quickstart end to end through the real CLI, on the session's local Ray cluster."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hyperpod_rl.metrics import read_metrics

pytestmark = [pytest.mark.ray, pytest.mark.slow]

CLI = [sys.executable, "-m", "hyperpod_rl.cli"]


def _cli(*args: str, timeout: float = 840) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.job
def test_reduced_quickstart_end_to_end(local_cluster, tmp_path):
    """Slow: 4 SFT and 80 GRPO steps (the fewest whose rewards show the trend asserted here), the base, SFT
    and GRPO adapters evaluated on 8 held-out mazes, and a Serve deployment; about 220 s on 2 cores, of which
    GRPO is about 90 s (the held-out count does not change training: the train split and the tiny model's
    tokenizer come from the train rows alone)."""
    try:
        summary_path = tmp_path / "summary.json"
        start = time.monotonic()
        proc = _cli(
            "quickstart",
            "--run-id",
            "e2e",
            "--steps",
            "80",
            "--train-rows",
            "400",
            "--heldout-rows",
            "8",
            "--sft-steps",
            "4",
            # four SFT steps leave the adapter near the base model: GRPO at the base model's rate, so
            # that 80 steps show the reward trend below (the default from an SFT adapter is 1e-4)
            "--lr",
            "5e-4",
            "--serve-port",
            "8123",
            "--summary-json",
            str(summary_path),
        )
        wall = time.monotonic() - start
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        summary = json.loads(summary_path.read_text())
        # timing is reported, never asserted (load varies)
        print(f"reduced quickstart took {wall:.0f} s; its phases (s): {summary['wall_s']}")
        run_dir = Path(summary["run_dir"])
        # artifacts
        for rel in (
            "config.json",
            "metrics.jsonl",
            "submissions.json",
            "eval/base.json",
            "eval/adapter.json",
            "adapter/adapter_model.safetensors",
            "adapter/adapter_config.json",
            "adapter/provenance.json",
        ):
            assert (run_dir / rel).is_file(), rel
        assert summary["heldout_rows"] == 8
        # the SFT warm start (issue 29): its own run, evaluated, and the GRPO run started from its adapter
        sft_dir = run_dir.parent / "e2e-sft"
        assert summary["sft_run_id"] == "e2e-sft" and summary["sft"]["solve_rate"] >= 0
        sft_records = list(read_metrics(sft_dir / "metrics.jsonl"))
        assert len(sft_records) == 4 and all("sft/loss" in r.values for r in sft_records)  # trained by the SFT trainer, not GRPO
        lineage = json.loads((run_dir / "adapter" / "provenance.json").read_text())["lineage"]
        assert [e["stage"] for e in lineage] == ["base", "sft", "grpo"]
        assert summary["comparison"]["base_label"] == "sft" and summary["base_comparison"]["base_label"] == "base"
        assert "SFT → GRPO" in proc.stdout
        assert json.loads((run_dir / "eval" / "adapter.json").read_text())["num_mazes"] == 8
        # one metric record per step, and the reward trend goes up
        rewards = [r.values["reward/avg_raw_reward"] for r in read_metrics(run_dir / "metrics.jsonl")]
        assert len(rewards) == 80
        first, last = sum(rewards[:20]) / 20, sum(rewards[-20:]) / 20
        assert last > first, rewards
        # the table and the served answer
        assert "optimal-move rate" in proc.stdout and "held-out mazes: 8" in proc.stdout
        assert re.fullmatch(r"<answer>(up|down|left|right)</answer>", summary["served_answer"]["answer"])
        # no secret anywhere in what the user sees
        token = json.loads((Path(os.environ["HYPERPOD_RL_HOME"]) / "local-cluster.json").read_text())["token"]
        assert token not in proc.stdout + proc.stderr
        # reattach from a new process by run id alone
        status = _cli("job", "status", "e2e", timeout=120)
        assert status.returncode == 0 and "SUCCEEDED" in status.stdout
        logs = _cli("job", "logs", "e2e", timeout=120)  # one readable line a step, as the follower prints it
        assert re.search(r"^grpo 80/80 reward [+-]\d\.\d{3} loss ", logs.stdout, re.M) and "HPRL_METRIC" not in logs.stdout, logs.stdout[
            -2000:
        ]
        assert token not in logs.stdout
        raw = _cli("job", "logs", "e2e", "--raw", timeout=120)
        assert raw.stdout.count("HPRL_METRIC") == 80 and token not in raw.stdout
        listed = _cli("job", "list", timeout=120)
        assert "hprl-e2e-1" in listed.stdout
        asked = _cli("serve", "ask", "e2e", "--index", "1", "--endpoint", "http://127.0.0.1:8123", timeout=120)
        assert asked.returncode == 0 and re.search(r"answered '<answer>(up|down|left|right)</answer>'", asked.stdout), (
            asked.stdout + asked.stderr
        )
    finally:
        # Always free the serve port for later tests, whatever failed above.
        down = _cli("serve", "down", timeout=180)
    assert down.returncode == 0, down.stdout + down.stderr


def test_bad_options_are_refused_before_anything_is_submitted(tmp_path):
    env_home = Path(os.environ["HYPERPOD_RL_HOME"])
    runs_before = set((env_home / "storage" / "runs").glob("*")) if (env_home / "storage" / "runs").exists() else set()
    blocker = socket.socket()
    blocker.bind(("0.0.0.0", 0))
    blocker.listen()
    busy_port = blocker.getsockname()[1]
    for args, message in [
        (("--group-size", "0"), "--group-size: must be >= 2 (GRPO compares samples within a group) (got 0)"),
        (("--model-path", str(tmp_path / "nope")), "is not a directory"),
        (("--min-size", "6", "--max-size", "4"), "--min-size (6) is larger than --max-size (4)"),
        (("--steps", "0"), "--steps: must be > 0 (got 0)"),
        (("--serve-port", str(busy_port)), f"--serve-port {busy_port} is in use by another program"),
        # reported: a dashboard port in Ray's worker range failed ~30 s later, inside `ray start`
        (("--dashboard-port", "18266"), "--dashboard-port: inside Ray's worker port range 10002-19999"),
        (("--serve-port", "12000"), "--serve-port: inside Ray's worker port range 10002-19999"),
    ]:
        proc = _cli("quickstart", "--run-id", "bad-input", *args, timeout=120)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert message in " ".join(proc.stderr.split()), (args, proc.stdout, proc.stderr)
        assert proc.stderr.lstrip().startswith("error: "), proc.stderr
    blocker.close()
    runs_after = set((env_home / "storage" / "runs").glob("*")) if (env_home / "storage" / "runs").exists() else set()
    assert runs_after == runs_before


@pytest.mark.job
def test_tiny_ui_nav_quickstart_says_no_rollout_was_valid(local_cluster, tmp_path):
    """The untrained tiny model cannot write ui_nav's free-form action syntax: the quickstart must
    say so (and what to do) instead of reporting a flat reward silently.

    Slow: the whole quickstart path (data, SFT, GRPO, evaluation) as a Ray job, at its smallest."""
    summary_path = tmp_path / "summary.json"
    proc = _cli(
        "quickstart",
        "--task",
        "ui_nav",
        "--run-id",
        "e2e-ui-nav",
        "--steps",
        "1",
        "--train-rows",
        "8",
        "--heldout-rows",
        "2",
        # the smallest step: what is asserted is the warning, not what GRPO learns
        "--prompts-per-step",
        "2",
        "--group-size",
        "2",
        "--no-sft",
        "--no-serve",
        "--summary-json",
        str(summary_path),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = " ".join(proc.stdout.split())
    assert "warning: no rollout produced a valid free-form ui_nav answer in 1 training step(s)" in out, proc.stdout[-3000:]
    assert "use the maze task" in out and "--model-path" in out
    summary = json.loads(summary_path.read_text())
    assert summary["adapter"]["invalid_action_rate"] == 1.0
    assert len(summary["warnings"]) == 1 and "invalid floor" in summary["warnings"][0]
    # following the job log from a new shell says it too
    logs = _cli("job", "logs", "--follow", "e2e-ui-nav", timeout=300)
    assert "no rollout produced a valid free-form ui_nav answer" in " ".join(logs.stdout.split()), logs.stdout[-3000:]
