"""The delete job's report is read from its log even when Ray appends its own lines after it (seen in CI)."""

from __future__ import annotations

from hyperpod_rl.serve.local import _deleted_report

# the end of a real delete job's log from a CI run (a GPU job of another test was pending on the cluster)
CI_LOG = """Running entrypoint for job hprl-serve-1c3bca74: /work/ci/repo/.venv/bin/python -m hyperpod_rl.serve down
INFO 2026-12-01 11:30:48,464 serve 2377 -- Deleting app ['hyperpod-rl']
Ray Serve stopped
{"deleted": true}
\x1b[36m(autoscaler +6s)\x1b[0m Tip: use `ray status` to view detailed cluster status. To disable these messages, set RAY_SCHEDULER_EVENTS=0.
\x1b[33m(autoscaler +6s)\x1b[0m Error: No available node types can fulfill resource request {'CPU': 4.0, 'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue."""


def test_report_before_ray_autoscaler_lines():
    assert _deleted_report(CI_LOG.splitlines()) is True


def test_nothing_deployed_and_no_report():
    assert _deleted_report(['{"deleted": false}', "(autoscaler +1s) Tip"]) is False
    assert _deleted_report(["Ray Serve stopped", '{"other": 1}', "[1, 2]"]) is None
    assert _deleted_report([]) is None
