"""Record ``recorded_follow.log``: a real reference-trainer job log with a corrupt-checkpoint fallback.

Usage (repository root): HYPERPOD_RL_HOME=/tmp/hprl-record python tests/cli/data/record_follow.py

Trains a tiny quickstart run (12 steps, a checkpoint every 3) with ``python -m hyperpod_rl.train``
as a Ray Job runs it, kills it once ``step_000009`` is written, corrupts that checkpoint's adapter,
and runs the job again: the resumed job skips step 9 (``is unusable ...; falling back``), resumes
from step 6 and trains steps 7 to 12. Its log (standard output and error), with this checkout's
path prefix cut from the warning line, is the recording ``tests/cli/test_follow_feedback.py``
replays.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def main() -> None:
    from hyperpod_rl.paths import storage_root
    from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, prepare_base_model, prepare_dataset
    from hyperpod_rl.runs import run_paths, write_config
    from hyperpod_rl.tasks import read_rows

    storage = storage_root()
    opts = QuickstartOptions.build(
        {
            "run_id": "recorded-follow",
            "steps": 12,
            "train_mazes": 24,
            "heldout_mazes": 4,
            "group_size": 2,
            "prompts_per_step": 2,
            "max_turns": 3,
        }
    )
    data = prepare_dataset(opts, storage)
    model_dir, revision = prepare_base_model(opts, storage, list(read_rows(data.train)))
    config = make_run_config(opts, run_id="recorded-follow", model_path=model_dir, revision=revision, data=data)
    dumped = config.model_dump(mode="json")
    config = type(config).build({**dumped, "checkpoint": {"interval": 3, "keep": 5}, "trainer": {**dumped["trainer"], "eval_rows": 2}})
    paths = run_paths("recorded-follow", storage=storage)
    shutil.rmtree(paths.root, ignore_errors=True)
    cmd = [sys.executable, "-m", "hyperpod_rl.train", "--config", str(write_config(paths, config)), "--config-hash", config.config_hash()]
    with open(paths.root / "job1.log", "w") as fh:
        first = subprocess.Popen(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
        while first.poll() is None and not (paths.checkpoints / "step_000009").exists():
            time.sleep(1)
        first.kill()
        first.wait()
    (paths.checkpoints / "step_000009" / "adapter_model.safetensors").write_bytes(b"corrupt")
    done = subprocess.run(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    log = done.stdout.replace(f"{REPO}/", "")
    (Path(__file__).parent / "recorded_follow.log").write_text(log)
    print(f"exit {done.returncode}; {log.count('HPRL_METRIC')} metric lines")


if __name__ == "__main__":
    main()
