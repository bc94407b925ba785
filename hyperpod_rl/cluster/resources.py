"""What a Ray cluster holds and runs, read through its dashboard (the job API's address), so it
works for the local cluster and HyperPod alike: every alive node's total resources (Ray's state
API, ``GET /api/v0/nodes``), the state of a job's supervisor actor (``GET /api/v0/actors``), and
removing helper jobs from ``ray job list``.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

__all__ = ["node_resources", "remove_jobs", "supervisor_state"]

#: Ray's name of a job's supervisor actor (``ray.dashboard.modules.job.common.JOB_ACTOR_NAME_TEMPLATE``).
SUPERVISOR_NAME = "_ray_internal_job_actor_{submission_id}"


def _state_api(job_client: Any, path: str) -> list[dict[str, Any]] | None:
    """The ``result`` rows of a state API listing, or None when the dashboard cannot say."""
    try:
        resp = job_client._do_request("GET", path)
        if resp.status_code != 200:
            return None
        rows = resp.json()["data"]["result"]["result"]
    except Exception:  # noqa: BLE001 - a guardrail must never stop a submit or stop; unknown means "skip"
        return None
    return rows if isinstance(rows, list) else None


def node_resources(job_client: Any) -> list[dict[str, float]] | None:
    """Each alive node's total Ray resources, e.g. ``[{"CPU": 2.0, "GPU": 0.0, "memory": ...}]``.

    Args:
        job_client: a connected ``JobSubmissionClient`` (its address and credentials are used).

    Returns:
        One dict per alive node, or None when the dashboard does not answer the state API
        (an older or restricted dashboard): callers then skip their check.
    """
    rows = _state_api(job_client, "/api/v0/nodes?detail=1&limit=10000")
    if rows is None:
        return None
    return [
        {k: float(v) for k, v in (row.get("resources_total") or {}).items() if isinstance(v, int | float)}
        for row in rows
        if row.get("state") == "ALIVE"
    ]


def supervisor_state(job_client: Any, submission_id: str) -> str | None:
    """Ray's state of a job's supervisor actor (``PENDING_CREATION`` while the job waits for its
    entrypoint's resources, ``ALIVE`` once it runs, ``DEAD``), or None when unknown."""
    name = SUPERVISOR_NAME.format(submission_id=submission_id)
    rows = _state_api(job_client, f"/api/v0/actors?detail=1&filter_keys=name&filter_predicates=%3D&filter_values={quote(name)}")
    if not rows:
        return None
    states = [str(r.get("state")) for r in rows]
    return "ALIVE" if "ALIVE" in states else states[-1]


def remove_jobs(client: Any, prefix: str, *, quiet_s: float = 5.0, timeout_s: float = 60.0) -> None:
    """Stop and delete every job whose submission id starts with ``prefix`` (the local cluster's
    readiness probes, the helper that cancels a pending job) until ``ray job list`` has shown none of them for ``quiet_s`` seconds.

    Why a quiet period: Ray 2.56's job manager keeps monitoring a job until it sees the job's
    supervisor actor exit; when the job record was deleted first, it writes the status again
    (``put_status`` creates a record when none exists, ``dashboard/modules/job/common.py``), so a
    deleted probe came back as FAILED. Deleting again whatever reappears, until nothing has for
    ``quiet_s`` seconds, leaves the list clean. Best effort when the job API itself is gone (the
    cluster is then being stopped anyway); gives up after ``timeout_s`` seconds.
    """
    from ray.job_submission import JobStatus

    deadline = time.monotonic() + timeout_s
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        try:
            jobs = [j for j in client.list_jobs() if (j.submission_id or "").startswith(prefix)]
        except (RuntimeError, OSError):
            return
        if not jobs:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= quiet_s:
                return
        else:
            quiet_since = None
        for job in jobs:
            try:
                if JobStatus(job.status).is_terminal():
                    client.delete_job(job.submission_id)
                else:
                    client.stop_job(job.submission_id)
            except (RuntimeError, OSError):
                continue  # not deletable yet (a stop in progress): next round
        time.sleep(0.5)
