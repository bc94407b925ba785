"""The SFT stage of a run: ``RunConfig.stage='sft'`` and its :class:`SFTConfig` section, and the
starting adapter of any run (``model.init_adapter``).

An SFT run is a run like any other (same ``RunConfig``, run directory, detached Ray Job, metrics,
checkpoints, resume, provenance and ledger); it trains the LoRA adapter by cross-entropy on the
task's own demonstrations (:mod:`hyperpod_rl.tasks.demonstrations`) instead of GRPO. A later GRPO
run starts from its adapter with ``model.init_adapter=<sft run dir>/adapter`` (``--from-run``).

The rules here run when a :class:`~hyperpod_rl.config.run.RunConfig` is built, one line per
problem, each ending with the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field

from hyperpod_rl.base import load_user_data
from hyperpod_rl.config.sections import _Section
from hyperpod_rl.errors import HyperpodRLError

__all__ = ["STAGES", "SFTConfig", "init_adapter_problems", "read_adapter_record", "sft_problems"]

#: Training stages of a run: GRPO (reinforcement learning on the task's reward) or SFT
#: (supervised fine-tuning on the task's demonstrations).
STAGES: Final[tuple[str, ...]] = ("grpo", "sft")

Stage = Literal["grpo", "sft"]


class SFTConfig(_Section):
    """Supervised fine-tuning on demonstrations (read when ``stage='sft'``).

    SkyRL 0.3.0 keys (``skyrl.train.config.sft_config.SFTConfig``, :mod:`hyperpod_rl.config.skyrl_sft`):
    ``optimizer_config.lr``, ``batch_size``, ``num_steps``.
    """

    lr: float = Field(
        2e-3,
        gt=0,
        description="AdamW learning rate of the LoRA adapter during SFT (SkyRL optimizer_config.lr)",
    )
    rows_per_step: int = Field(
        16,
        gt=0,
        description="reference backend: dataset rows (mazes) per SFT step, every turn of each row's demonstration "
        "in the loss; SkyRL: demonstration turns per step (its batch_size counts examples)",
    )
    parameters: Literal["lora", "full"] = Field(
        "lora",
        description="what SFT trains: 'lora', a LoRA adapter on the frozen base model (the warm start GRPO continues with "
        "model.init_adapter); 'full', every weight of the base model (reference backend; e.g. a random-init model "
        "trained from scratch), exported as a whole model directory <run dir>/model that a GRPO run takes as model.path",
    )
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    max_grad_norm: float = Field(1.0, gt=0, description="gradient clipping (L2 norm)")


def read_adapter_record(path: str | Path) -> dict[str, Any] | None:
    """The ``provenance.json`` of an adapter directory, or None when it has none or it is unreadable."""
    prov = Path(path).expanduser() / "provenance.json"
    try:
        data = load_user_data(prov, "adapter provenance", syntax="json")
    except HyperpodRLError:  # missing or not JSON: no record (init_adapter_problems says what is missing)
        return None
    return data if isinstance(data, dict) else None


def init_adapter_problems(cfg: Any) -> list[str]:
    """``model.init_adapter``: an adapter directory of the same base model and LoRA rank.

    Checked here where the directory is readable (the reference backend's local paths): it holds
    ``adapter_config.json``; its ``provenance.json`` names the same base model revision as
    ``model.revision`` (when set) and its rank equals ``lora.rank``; for the SkyRL backend a path that
    does not exist here is left to the job (it names cluster storage). Both backends start from it: the
    reference trainer loads it into its PEFT model, the SkyRL backend into SkyRL's sharded policy
    (:mod:`hyperpod_rl.train.skyrl_init_adapter`); the job checks it again where it runs.
    """
    init = cfg.model.init_adapter
    if init is None:
        return []
    path = Path(init).expanduser()
    if cfg.backend == "skyrl" and not path.exists():
        return []  # a cluster path (FSx) this machine may not mount: the job checks it where it runs
    if not (path / "adapter_config.json").is_file():
        return [
            f"model.init_adapter={init!r} is not an adapter directory (no adapter_config.json): give a run's adapter/ "
            "directory, or start from a finished run with --from-run RUN_ID"
        ]
    out = []
    record = read_adapter_record(path) or {}
    theirs = record.get("base_model_revision")
    if cfg.model.revision and theirs and theirs != cfg.model.revision:
        out.append(
            f"model.init_adapter was trained on base model revision {theirs}, but model.revision is {cfg.model.revision}: "
            "start from an adapter trained on this base model, or set model.path/model.revision to the adapter's base model"
        )
    try:
        adapter_config = load_user_data(path / "adapter_config.json", "model.init_adapter adapter_config.json", syntax="json")
    except HyperpodRLError as err:
        return [*out, f"{err} (re-export the adapter, or start from another one)"]
    rank = adapter_config.get("r") if isinstance(adapter_config, dict) else None
    if rank is not None and int(rank) != cfg.lora.rank:
        out.append(f"model.init_adapter has LoRA rank {rank}, but lora.rank is {cfg.lora.rank}: set lora.rank={rank}")
    return out


def sft_problems(cfg: Any) -> list[str]:
    """The SFT stage's rules: the task must have demonstrations."""
    out = init_adapter_problems(cfg)
    if cfg.stage != "sft":
        return out
    from hyperpod_rl.tasks import get_task
    from hyperpod_rl.tasks.demonstrations import has_demonstrations

    task = get_task(cfg.task.name)
    if not has_demonstrations(task):
        out.append(
            f"stage='sft' trains on the task's demonstrations, but task {task.name!r} has none (no Task.demonstration member): "
            "use stage='grpo', or give the task a demonstration(row) solver (docs/tasks.md)"
        )
    if cfg.backend == "skyrl":
        dp = cfg.placement.policy_gpus
        per_gpu, rest = divmod(cfg.sft.rows_per_step, dp)
        if rest or per_gpu % cfg.trainer.micro_batch_size:
            out.append(
                f"sft.rows_per_step={cfg.sft.rows_per_step} must split into {dp} policy GPUs x a multiple of "
                f"trainer.micro_batch_size={cfg.trainer.micro_batch_size} (SkyRL SFT batch_size rule): "
                f"use a multiple of {dp * cfg.trainer.micro_batch_size}"
            )
    if cfg.sft.parameters == "full":
        if cfg.backend != "reference":
            out.append("sft.parameters='full' trains on the reference backend only: set backend='reference', or sft.parameters='lora'")
        if cfg.model.init_adapter is not None:
            out.append(
                "sft.parameters='full' trains the base model's own weights, not an adapter: leave model.init_adapter unset, "
                "or use sft.parameters='lora'"
            )
        if cfg.trainer.dtype == "bfloat16":
            out.append(
                "sft.parameters='full' keeps the trained weights and their AdamW state in float32: set trainer.dtype='float32' (or 'auto')"
            )
    if cfg.backend == "reference" and cfg.trainer.workers > 1:
        out.append(
            f"stage='sft' trains in one process on the reference backend, but trainer.workers={cfg.trainer.workers}: set trainer.workers=1"
        )
    return out
