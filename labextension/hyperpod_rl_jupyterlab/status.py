"""The one rule that turns what is known about a run into its sidebar status.

Sources, strongest first:

1. Ray's job status of the run's latest submission (``<run dir>/submissions.json``, newest last), from
   the job API of a reachable cluster: ``PENDING`` -> pending, ``RUNNING`` -> running,
   ``SUCCEEDED`` -> succeeded, ``FAILED`` -> failed, ``STOPPED`` -> stopped. Ray knows whether the
   trainer process is alive; the manifest cannot (a killed trainer leaves ``running`` in it).
2. Otherwise (no reachable cluster knows the submission: the cluster was stopped, restarted or is
   not configured here) ``manifest.json``'s ``status``: ``succeeded`` / ``failed`` / ``stopped`` as
   written. A run not recorded as ended (``running``, or submitted without a manifest) is lost when
   every configured cluster answered and none knows its job (the cluster was restarted, or the job
   deleted: nothing will finish it), and unknown when a cluster did not answer (it may be there).
   This is ``hyperpod-rl job status``'s rule (``hyperpod_rl.jobs.run_status``: LOST, exit 1, when the
   cluster answers without the job; UNKNOWN, exit 2, when no cluster answers).
3. Never submitted -> created (nothing to stop: no job exists).
4. A run known only to the ledger (its directory is not on this server) takes the ledger's
   status when it is a final one, else unknown.
"""

from __future__ import annotations

__all__ = ["derive_status"]

_RAY = {"PENDING": "pending", "RUNNING": "running", "SUCCEEDED": "succeeded", "FAILED": "failed", "STOPPED": "stopped"}
_FINAL = {"succeeded", "failed", "stopped"}


def derive_status(
    *,
    ray_status: str | None,
    manifest_status: str | None,
    submitted: bool,
    ledger_status: str | None = None,
    has_run_dir: bool = True,
    clusters_answered: bool = False,
) -> tuple[str, str]:
    """The run's status and a one-sentence reason.

    Args:
        ray_status: Ray ``JobStatus`` of the latest submission, or ``None`` when no reachable
            cluster knows it.
        manifest_status: ``manifest.json``'s ``status``, or ``None`` without a manifest.
        submitted: the run has at least one submission id.
        ledger_status: the ledger's status for the run, or ``None``.
        has_run_dir: the run directory is on this server.
        clusters_answered: every configured cluster's job API answered (at least one is configured).

    Returns:
        ``(status, detail)`` with status one of created / pending / running / succeeded /
        failed / stopped / lost / unknown.
    """
    if ray_status is not None and ray_status.upper() in _RAY:
        return _RAY[ray_status.upper()], f"Ray job status {ray_status.upper()}"
    if not has_run_dir:
        if ledger_status in _FINAL:
            return ledger_status, f"ledger status {ledger_status} (run directory not on this server)"
        return "unknown", "only the ledger knows this run and its directory is not on this server"
    if manifest_status in _FINAL:
        return manifest_status, f"manifest status {manifest_status}"
    if clusters_answered and (manifest_status == "running" or submitted):
        return "lost", "every cluster answered and none knows its job (restarted, or the job was deleted): resubmit the run to resume it"
    if manifest_status == "running":
        return "unknown", "the manifest says running but no reachable cluster knows its job (cluster stopped or not configured here)"
    if submitted:
        return "unknown", "submitted, but no reachable cluster knows its job"
    return "created", "created but never submitted: there is no job yet (submit it to start training)"
