"""Will a run fit its GPUs? The planner (``hyperpod_rl.plan``) applied to a ``RunConfig``.

Used before submission (``hyperpod_rl.jobs.submit_run`` warns with the planner's verdicts when
a SkyRL run is predicted not to fit) and by front-ends that show the plan.
"""

from __future__ import annotations

import json
from pathlib import Path

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.plan import Plan, PlanInput, plan

__all__ = ["fit_warnings", "plan_input_for", "plan_run"]


def plan_input_for(config: RunConfig, *, gpu: str = "H200", image_px: tuple[int, int] = (448, 448)) -> PlanInput:
    """The planner input that a run config implies.

    Args:
        config: the run.
        gpu: GPU name known to the planner (e.g. ``"H200"``), since a RunConfig does not say
            which GPU its nodes have.
        image_px: (height, width) of the maze images in pixels.

    Raises:
        ConfigError: the config maps to planner inputs the planner rejects.
    """
    model: str | dict = config.model.path
    local = Path(config.model.path).expanduser() / "config.json"
    if local.is_file():
        model = json.loads(local.read_text())
    micro = config.trainer.micro_batch_size
    return PlanInput(
        model=model,
        lora_rank=config.lora.rank,
        micro_train_batch_size_per_gpu=micro,
        mini_batch_size=max((config.trainer.mini_batch_size or config.data.mazes_per_step) * config.grpo.group_size, micro),
        train_batch_size=config.data.mazes_per_step,
        group_size=config.grpo.group_size,
        turns=config.rollout.max_turns,
        max_prompt_tokens=config.rollout.max_prompt_tokens,
        max_response_tokens=config.rollout.max_new_tokens,
        image_px=image_px,
        gpus_per_node=config.placement.gpus_per_node,
        nodes=config.placement.nodes,
        inference_tensor_parallel_size=config.placement.tensor_parallel_size,
        gpu_memory_utilization=config.rollout.gpu_memory_utilization,
        gradient_checkpointing=config.trainer.gradient_checkpointing,
        use_kl=config.grpo.kl_coef > 0,
        gpu=gpu,
    )


def plan_run(config: RunConfig, *, gpu: str = "H200", image_px: tuple[int, int] = (448, 448)) -> Plan:
    """Predicted per-GPU memory, KV-cache room and step time of a run, with verdicts.

    Args:
        config: the run.
        gpu: GPU name known to the planner (``"H200"``, ``"H100"``).
        image_px: (height, width) of the task's images in pixels.

    Returns:
        The :class:`~hyperpod_rl.plan.Plan` (in a notebook it shows as HTML tables).

    Raises:
        ConfigError: unknown GPU, bad image size, or a config the planner rejects.
    """
    return plan(plan_input_for(config, gpu=gpu, image_px=image_px))


def fit_warnings(config: RunConfig, *, gpu: str = "H200") -> list[str]:
    """The planner's verdicts when a SkyRL run is predicted not to fit; ``[]`` otherwise.

    The reference backend runs on CPU or one small GPU and is not planned.
    """
    if config.backend != "skyrl":
        return []
    result = plan_run(config, gpu=gpu)
    return [] if result.fits else list(result.verdicts)
