"""The Ray resources a run asks its cluster for: one owner for the job's submit-time check
(:func:`hyperpod_rl.jobs.submit_run`) and the trainer's ``TorchTrainer`` workers
(:mod:`hyperpod_rl.train.workers`).

- Reference backend, ``trainer.workers == 1``: the job's entrypoint process trains; it reserves
  one GPU when ``trainer.device='cuda'`` (``entrypoint_num_gpus=1``), else nothing.
- Reference backend, ``trainer.workers = N > 1``: the entrypoint reserves nothing and starts a
  Ray Train ``TorchTrainer`` of N workers packed on one node (``STRICT_PACK``), each taking
  ``{"GPU": 1}`` with ``trainer.device='cuda'``, else ``{"CPU": 1}``.
- SkyRL backend: the entrypoint reserves nothing; SkyRL's actors take at least
  ``placement.policy_gpus`` GPUs (colocated), or the policy's plus the rollout engines' GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperpod_rl.config.run import RunConfig

__all__ = ["RunResources", "fit_problems", "run_resources"]


@dataclass(frozen=True)
class RunResources:
    """What a run reserves on its Ray cluster.

    Attributes:
        entrypoint_gpus: GPUs the Ray job's entrypoint reserves (``entrypoint_num_gpus``).
        workers: Ray Train workers (0 when the entrypoint trains itself or SkyRL places its actors).
        per_worker: Ray resources of one worker, e.g. ``{"CPU": 1.0}`` or ``{"GPU": 1.0}``.
        one_node: the workers must all fit on one node (``STRICT_PACK``).
        gpus: GPUs the run needs in all (a lower bound for SkyRL).
    """

    entrypoint_gpus: int = 0
    workers: int = 0
    per_worker: dict[str, float] = field(default_factory=dict)
    one_node: bool = True
    gpus: int = 0

    @property
    def total(self) -> dict[str, float]:
        """Every resource the run needs at once, e.g. ``{"CPU": 2.0}`` (entrypoint plus workers)."""
        out: dict[str, float] = {}
        for name, amount in self.per_worker.items():
            out[name] = out.get(name, 0.0) + amount * self.workers
        if self.gpus:
            out["GPU"] = max(out.get("GPU", 0.0), float(self.gpus))
        return out


def run_resources(config: RunConfig) -> RunResources:
    """The :class:`RunResources` of a run (see the module docstring for the rules)."""
    if config.backend == "skyrl":
        pl = config.placement
        return RunResources(
            gpus=max(pl.policy_gpus, pl.rollout_gpus) if pl.colocate_all else pl.policy_gpus + pl.rollout_gpus, one_node=False
        )
    cuda = config.trainer.device == "cuda"
    if config.trainer.workers == 1:
        return RunResources(entrypoint_gpus=int(cuda), gpus=int(cuda))
    workers = config.trainer.workers
    return RunResources(workers=workers, per_worker={"GPU": 1.0} if cuda else {"CPU": 1.0}, gpus=workers if cuda else 0)


def _amount(value: float) -> str:
    return f"{value:g}"


def fit_problems(
    config: RunConfig, nodes: list[dict[str, float]], *, entrypoint_num_cpus: float = 0, entrypoint_num_gpus: float | None = None
) -> list[str]:
    """Why a run can never start on a cluster of these nodes (empty when it can).

    Compares the run's needs with the cluster's *total* resources (not what is free now): a run
    that needs more than the cluster has would wait for resources forever.

    Args:
        config: the run.
        nodes: each alive node's total Ray resources, e.g. ``[{"CPU": 2.0, "memory": ...}]``.
        entrypoint_num_cpus: CPUs the job's entrypoint reserves (``submit_run``'s argument).
        entrypoint_num_gpus: GPUs it reserves; None: the run's own (:attr:`RunResources.entrypoint_gpus`).

    Returns:
        One sentence per problem, each saying what the cluster has and what to change.
    """
    need = run_resources(config)
    gpus = [n.get("GPU", 0.0) for n in nodes]
    cpus = [n.get("CPU", 0.0) for n in nodes]
    has = f"the cluster has {_amount(sum(gpus))} GPU(s) and {_amount(sum(cpus))} CPU(s) on {len(nodes)} node(s)"
    if len(nodes) > 1:
        has += f" (at most {_amount(max(gpus))} GPU(s) and {_amount(max(cpus))} CPU(s) on one node)"
    problems: list[str] = []
    entry_gpus = need.entrypoint_gpus if entrypoint_num_gpus is None else entrypoint_num_gpus
    if entry_gpus > max(gpus, default=0.0) and entry_gpus > need.gpus:
        problems.append(f"run {config.run_id!r}'s job entrypoint reserves {_amount(entry_gpus)} GPU(s) but {has}: reserve fewer")
    if entrypoint_num_cpus > max(cpus, default=0.0):
        problems.append(f"run {config.run_id!r}'s job entrypoint reserves {_amount(entrypoint_num_cpus)} CPU(s) but {has}: reserve fewer")
    if need.gpus > sum(gpus):
        if config.backend == "skyrl":
            fix = "lower placement.nodes x placement.gpus_per_node (and the engines' GPUs) to what the cluster has, or add GPU nodes"
        elif config.trainer.workers > 1:
            fix = f"set trainer.workers to at most {_amount(max(gpus))}" if max(gpus) >= 2 else "set trainer.device to 'cpu' or 'auto'"
            fix += ", or use a cluster with GPUs"
        else:
            fix = "set trainer.device to 'auto' (a GPU when the job's process sees one, else the CPU) or 'cpu', or use a cluster with a GPU"
        problems.append(f"run {config.run_id!r} needs {need.gpus} GPU(s) but {has}: {fix}")
        return problems
    if need.workers > 1 and need.one_node:
        for name, amount in need.per_worker.items():
            biggest = max((n.get(name, 0.0) for n in nodes), default=0.0)
            if amount * need.workers > biggest:
                most = int(biggest // amount) if amount else 0
                fix = f"set trainer.workers to at most {most}" if most >= 2 else "set trainer.workers to 1"
                problems.append(
                    f"run {config.run_id!r} needs trainer.workers={need.workers} workers of {_amount(amount)} {name} each on one node "
                    f"({_amount(amount * need.workers)} {name}) but {has}: {fix}, or use a node with more {name}s"
                )
    return problems
