"""hyperpod-rl: train Qwen3-VL with GRPO + LoRA on a visual maze task, on Ray.

The notebook API. Names load on first use, so ``import hyperpod_rl`` stays cheap (no torch,
Ray or kubernetes until a name that needs them is touched).

Example:
    >>> import hyperpod_rl as hp  # doctest: +SKIP
    >>> cluster = hp.start_local_cluster()  # doctest: +SKIP
    >>> hp.RunConfig.build({...})  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

from hyperpod_rl.paths import keep_torch_cache as _keep_torch_cache

__version__ = "0.1.0"

_keep_torch_cache()  # TorchInductor's cache in ~/.cache/hyperpod-rl, not an empty folder left in TMPDIR

_EXPORTS: dict[str, str] = {
    # config and cluster specs
    "RunConfig": "hyperpod_rl.config.run",
    "ClusterSpec": "hyperpod_rl.cluster.spec",
    # local cluster
    "LocalCluster": "hyperpod_rl.cluster.local",
    "start_local_cluster": "hyperpod_rl.cluster.local",
    # the run directory
    "RunSummary": "hyperpod_rl.runs",
    "read_config": "hyperpod_rl.runs",
    "record_eval": "hyperpod_rl.runs",
    # jobs
    "RunHandle": "hyperpod_rl.jobs",
    "latest_job": "hyperpod_rl.jobs",
    "overview": "hyperpod_rl.jobs",
    "reproduce_run": "hyperpod_rl.jobs",
    "submit_run": "hyperpod_rl.jobs",
    "follow_run": "hyperpod_rl.jobs",
    "stop_run": "hyperpod_rl.jobs",
    "stop_and_record": "hyperpod_rl.jobs",
    "reconcile_statuses": "hyperpod_rl.jobs",
    "list_runs": "hyperpod_rl.jobs",
    "latest_submission": "hyperpod_rl.jobs",
    # quickstart: hp.quickstart.run(opts) is the whole flow; the steps are public too
    "QuickstartOptions": "hyperpod_rl.quickstart",
    "QuickstartSummary": "hyperpod_rl.quickstart",
    "prepare_dataset": "hyperpod_rl.quickstart",
    "prepare_base_model": "hyperpod_rl.quickstart",
    "make_run_config": "hyperpod_rl.quickstart",
    # metrics
    "MetricRecord": "hyperpod_rl.metrics.schema",
    "read_metrics": "hyperpod_rl.metrics.schema",
    # model
    "load_policy": "hyperpod_rl.model.adapter",
    # evaluation and serving
    "EvalResult": "hyperpod_rl.eval",
    "evaluate": "hyperpod_rl.eval",
    "evaluate_run": "hyperpod_rl.eval",
    "deploy_local": "hyperpod_rl.serve.local",
    "chat": "hyperpod_rl.serve.client",
    "solve": "hyperpod_rl.serve.client",
    "preflight": "hyperpod_rl.serve.preflight",
    "export_adapter": "hyperpod_rl.serve.export",
    "promote": "hyperpod_rl.serve.promote",
    "promote_run": "hyperpod_rl.serve.promote",
    "serve_run": "hyperpod_rl.serve.local",
    "compare": "hyperpod_rl.eval",
    "Ledger": "hyperpod_rl.ledger",
    # notebook panels and readiness
    "studio": "hyperpod_rl.widgets",
    "doctor": "hyperpod_rl.readiness",
    "MetricsPanel": "hyperpod_rl.widgets",
    "RunPanel": "hyperpod_rl.widgets",
    "ClusterPanel": "hyperpod_rl.widgets",
    "ServePanel": "hyperpod_rl.widgets",
    # task
    "DatasetSpec": "hyperpod_rl.tasks.maze",
    "Maze": "hyperpod_rl.tasks.maze",
    "MazeEnv": "hyperpod_rl.tasks.maze",
    "generate_maze": "hyperpod_rl.tasks.maze",
    "render_maze": "hyperpod_rl.tasks.maze",
}

#: Sub-modules reachable as attributes without an explicit import (``hp.quickstart.run(...)``).
_SUBMODULES = frozenset({"quickstart"})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"hyperpod_rl.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hyperpod_rl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
