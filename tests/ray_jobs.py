"""Submitting a run to the session's real local Ray cluster and waiting for its job, shared by the Ray job tests."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import JobError
from hyperpod_rl.jobs import submit_run


def wait_terminal(client: Any, submission_id: str, timeout_s: float, poll_s: float = 0.5) -> str:
    """The job's terminal status (``"SUCCEEDED"``, ``"FAILED"``, ``"STOPPED"``); AssertionError after ``timeout_s`` seconds."""
    from ray.job_submission import JobStatus

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = JobStatus(client.get_job_status(submission_id))
        if status.is_terminal():
            return status.value
        time.sleep(poll_s)
    raise AssertionError(f"job {submission_id} did not end within {timeout_s} s")


def submit(client: Any, cfg: Any, run_dir: Path) -> Any:
    """``submit_run``, waiting out a job agent that is still starting on a loaded machine (up to 120 s)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            return submit_run(client, cfg, run_dir)
        except JobError as err:
            if "No available agent" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(1)
