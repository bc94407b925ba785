"""The public notebook API is pinned: adding or removing a name is a deliberate change."""

import subprocess
import sys

import hyperpod_rl

EXPECTED = [
    "ClusterSpec",
    "Ledger",
    "compare",
    "preflight",
    "promote",
    "solve",
    "DatasetSpec",
    "EvalResult",
    "LocalCluster",
    "Maze",
    "MazeEnv",
    "MetricRecord",
    "QuickstartOptions",
    "RunConfig",
    "RunHandle",
    "chat",
    "deploy_local",
    "doctor",
    "evaluate",
    "export_adapter",
    "follow_run",
    "generate_maze",
    "latest_submission",
    "list_runs",
    "make_run_config",
    "prepare_base_model",
    "prepare_dataset",
    "read_metrics",
    "render_maze",
    "start_local_cluster",
    "stop_run",
    "stop_and_record",
    "reconcile_statuses",
    "studio",
    "submit_run",
    "ClusterPanel",
    "MetricsPanel",
    "QuickstartSummary",
    "RunPanel",
    "RunSummary",
    "ServePanel",
    "latest_job",
    "load_policy",
    "overview",
    "promote_run",
    "read_config",
    "record_eval",
    "reproduce_run",
    "serve_run",
    "evaluate_run",
]


def test_all_is_pinned_and_every_name_resolves():
    assert hyperpod_rl.__all__ == sorted(EXPECTED)
    for name in hyperpod_rl.__all__:
        assert getattr(hyperpod_rl, name) is not None


def test_import_is_cheap():
    code = "import sys, hyperpod_rl; print(any(m in sys.modules for m in ('torch', 'ray', 'kubernetes')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_quickstart_flow_is_reachable_as_a_submodule():
    assert callable(hyperpod_rl.quickstart.run)
