"""Several GPUs of one node: the reference backend as the workers of a Ray Train ``TorchTrainer``.

``python -m hyperpod_rl.train`` calls :func:`train_with_workers` for a run with
``trainer.workers = N > 1``. It runs inside the run's Ray Job (the job's entrypoint reserves no
GPU, the workers take them) and starts::

    TorchTrainer(train_loop_per_worker,
                 scaling_config=ScalingConfig(num_workers=N, use_gpu=<trainer.device == 'cuda'>,
                                              placement_strategy="STRICT_PACK"),
                 torch_config=TorchConfig(backend="nccl" on CUDA, else "gloo"),
                 run_config=RunConfig(storage_path=<run dir>/ray-train))

Each worker builds a :class:`~hyperpod_rl.train.reference.ReferenceTrainer` with its
:class:`~hyperpod_rl.train.parallel.DataParallel` place and trains the run; rank 0 writes the run
directory. ``STRICT_PACK`` keeps the workers on one node: the run directory, the checkpoints and
the base model are read from the node's disk by every worker, and DDP's all-reduce stays on the
node's NVLink. Ray Train's own checkpointing and restarts are not used (``max_failures=0``): a
failed worker fails the job, and resubmitting the run resumes it from its newest checkpoint, as
a one-process run does.

The workers' resources come from :func:`hyperpod_rl.config.resources.run_resources` (the same
rules ``submit_run`` checks against the cluster's totals before submitting). When the cluster has
them in total but not free (other jobs, Serve replicas), the workers wait at most
``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S`` seconds (default :data:`WORKER_START_TIMEOUT_S`) and the
job fails once with :class:`~hyperpod_rl.errors.ClusterError` saying so: Ray Train's controller
would otherwise retry the worker group's start forever (``controller_failure_limit=0`` here).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from hyperpod_rl.config.resources import run_resources
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ClusterError, ConfigError
from hyperpod_rl.runs import RunPaths, read_config, read_submissions, record_final_status
from hyperpod_rl.runs.provenance import read_provenance, update_provenance

__all__ = ["WORKER_START_TIMEOUT_S", "main", "scaling", "train_loop_per_worker", "train_with_workers"]

#: Seconds the workers may wait for their resources before the run fails, unless the job's
#: environment sets Ray Train's ``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S``.
WORKER_START_TIMEOUT_S = 120.0
_TIMEOUT_ENV = "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"


def scaling(config: RunConfig) -> dict[str, Any]:
    """The ``TorchTrainer`` settings of a run: ``{"num_workers", "use_gpu", "resources_per_worker", "backend"}``.

    ``use_gpu`` only for ``trainer.device='cuda'`` (``'auto'`` workers reserve no GPU, so Ray
    hides the GPUs from them and they train on CPU); NCCL on GPUs, Gloo on CPUs. Each worker's
    resources are :func:`~hyperpod_rl.config.resources.run_resources`'s ``per_worker``.
    """
    use_gpu = config.trainer.device == "cuda"
    return {
        "num_workers": config.trainer.workers,
        "use_gpu": use_gpu,
        "resources_per_worker": dict(run_resources(config).per_worker),
        "backend": "nccl" if use_gpu else "gloo",
    }


def worker_place() -> Any:
    """This ``TorchTrainer`` worker's :class:`~hyperpod_rl.train.parallel.DataParallel` place (its GPU made current)."""
    import ray.train.torch
    import torch

    from hyperpod_rl.train.parallel import DataParallel

    device = ray.train.torch.get_device()
    if device.type == "cuda":
        torch.cuda.set_device(device)  # trainer.device='cuda' resolves to the current device
    return DataParallel.current(device)


def train_loop_per_worker(loop_config: dict[str, Any]) -> None:
    """One worker: train the run of ``loop_config["run_dir"]`` as rank ``torch.distributed.get_rank()``.

    Args:
        loop_config: ``{"run_dir": str, "fresh": bool}``.
    """
    from hyperpod_rl.train.reference import ReferenceTrainer

    paths = RunPaths(Path(loop_config["run_dir"]))
    config = read_config(paths)
    ReferenceTrainer(config, paths.root, fresh=bool(loop_config["fresh"]), parallel=worker_place()).train()


def torch_trainer(loop: Any, loop_config: dict[str, Any], config: RunConfig, storage: Path, *, name: str) -> Any:
    """A ``TorchTrainer`` of ``trainer.workers`` workers on one node running ``loop(loop_config)``."""
    from ray.train import FailureConfig, ScalingConfig
    from ray.train import RunConfig as RayRunConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    s = scaling(config)
    return TorchTrainer(
        loop,
        train_loop_config=loop_config,
        scaling_config=ScalingConfig(
            num_workers=s["num_workers"],
            use_gpu=s["use_gpu"],
            resources_per_worker=s["resources_per_worker"] or None,
            placement_strategy="STRICT_PACK",
        ),
        torch_config=TorchConfig(backend=s["backend"]),
        # No retries: a failed worker fails the run (resubmit resumes it), and workers that cannot
        # get their resources within the start timeout fail it too instead of retrying forever.
        run_config=RayRunConfig(
            name=name, storage_path=str(storage), failure_config=FailureConfig(max_failures=0, controller_failure_limit=0)
        ),
    )


def train_with_workers(config: RunConfig, run_dir: str | Path, *, fresh: bool = False) -> Path:
    """Train a run with ``trainer.workers`` data-parallel workers of a ``TorchTrainer``; return its adapter.

    Joins the Ray cluster the job runs on (``ray.init()``), fits the ``TorchTrainer`` and
    returns ``<run dir>/adapter``.

    Raises:
        ray.train.TrainingFailedError: a worker failed (its error is in the message); the run's
            provenance record is marked ``failed``.
        ClusterError: the workers could not get their resources within
            ``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S`` seconds (default :data:`WORKER_START_TIMEOUT_S`);
            the run is marked ``failed``.
    """
    import ray

    paths = RunPaths(Path(run_dir))
    os.environ.setdefault(_TIMEOUT_ENV, f"{WORKER_START_TIMEOUT_S:g}")  # Ray Train passes it on to its controller
    if not ray.is_initialized():
        ray.init(logging_level=logging.ERROR)
    s = scaling(config)
    print(
        f"training with {s['num_workers']} {'GPU' if s['use_gpu'] else 'CPU'} workers (Ray Train TorchTrainer, {s['backend']})", flush=True
    )
    trainer = torch_trainer(
        train_loop_per_worker,
        {"run_dir": str(paths.root), "fresh": fresh},
        config,
        paths.ray_train,
        name=f"{config.run_id}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}",
    )
    try:
        trainer.fit()
    except Exception as err:
        _mark_failed(paths)
        if _startup_timed_out(err):
            # No worker ever ran, so the run may have no provenance record yet: record the end anyway.
            submissions = read_submissions(paths)
            record_final_status(
                paths,
                "failed",
                submission_id=submissions[-1] if submissions else "",
                source="the trainer: its Ray Train workers could not get their resources",
                only_over_running=True,
            )
            need = " + ".join(f"{v:g} {k}" for k, v in s["resources_per_worker"].items())
            raise ClusterError(
                f"the {s['num_workers']} workers of run {config.run_id!r} ({need} each, on one node) could not start within "
                f"{os.environ[_TIMEOUT_ENV]} s: the cluster has the resources in total but not free (other jobs or Serve replicas "
                "hold them). Free them (hyperpod-rl job list; hyperpod-rl serve down) or set trainer.workers lower, then "
                f"resubmit the run; {_TIMEOUT_ENV} (job env) sets the wait"
            ) from None
        raise
    return paths.adapter


def _startup_timed_out(err: BaseException) -> bool:
    """Ray Train gave up starting the worker group: its resources never became free."""
    cause = getattr(err, "controller_failure", None)
    return type(cause).__name__ == "WorkerGroupStartupTimeoutError" or "worker group startup timed out" in str(err)


def _mark_failed(paths: RunPaths) -> None:
    """A worker died or raised: the rank-0 writer may not have recorded it (the group is torn down)."""
    if read_provenance(paths.root) is None:
        return

    def change(current: dict[str, Any] | None) -> dict[str, Any]:
        out = dict(current or {})
        if out.get("status") == "running":
            out["status"] = "failed"
        return out

    update_provenance(paths.root, change)


def main(config_path: str, *, fresh: bool = False) -> Path:
    """Entry of the reference backend (``python -m hyperpod_rl.train``): read ``config.json`` and train:
    a ``stage='sft'`` run with :class:`~hyperpod_rl.train.sft.SFTTrainer`, a GRPO run in this process
    or, with ``trainer.workers > 1``, on that many Ray Train workers.

    Raises:
        ConfigError: ``config_path`` is not a run directory's ``config.json``.
    """
    from hyperpod_rl.train.reference import ReferenceTrainer

    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    source = Path(config_path).resolve()
    if source.name != "config.json":
        raise ConfigError(f"--config must be a run directory's config.json, got {source}")
    paths = RunPaths(source.parent)
    config = read_config(paths)
    if config.stage == "sft":
        from hyperpod_rl.train.sft import SFTTrainer

        adapter = SFTTrainer(config, paths.root, fresh=fresh).train()
    elif config.trainer.workers > 1:
        adapter = train_with_workers(config, paths.root, fresh=fresh)
    else:
        adapter = ReferenceTrainer(config, paths.root, fresh=fresh).train()
    print(f"adapter written to {adapter}", flush=True)
    return adapter
