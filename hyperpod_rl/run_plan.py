"""Will a run fit its GPUs? The planner (``hyperpod_rl.plan``) applied to a ``RunConfig``.

Used before submission (``hyperpod_rl.jobs.submit_run`` warns with the planner's verdicts when
a SkyRL run is predicted not to fit) and by front-ends that show the plan.
"""

from __future__ import annotations

import json
from pathlib import Path

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan import Plan, PlanInput, image_tokens, plan
from hyperpod_rl.tasks import get_task

__all__ = ["PROMPT_TEXT_TOKENS", "REPLY_TEXT_TOKENS", "fit_warnings", "plan_input_for", "plan_run"]

#: Text tokens of a task's first prompt that the planner budgets (chat template, system message and
#: instructions; its image is counted apart). The maze's full-style first prompt is 128 text tokens
#: with the tiny model's tokenizer (docs/maze-task.md); the budget doubles that, for a real
#: tokenizer and for other tasks' longer instructions.
PROMPT_TEXT_TOKENS = 256
#: Text tokens of each environment reply besides its image (the feedback line and the chat
#: template's turn markers), added to ``rollout.max_new_tokens`` per turn.
REPLY_TEXT_TOKENS = 32


def plan_input_for(
    config: RunConfig,
    *,
    gpu: str = "H200",
    image_px: tuple[int, int] = (448, 448),
    prompt_text_tokens: int = PROMPT_TEXT_TOKENS,
    reply_text_tokens: int = REPLY_TEXT_TOKENS,
) -> PlanInput:
    """The planner input that a run config implies: the one place a run's sequence is sized.

    An episode is planned as the task's first prompt (``prompt_text_tokens`` of text, capped so
    that text and first image fit ``rollout.max_prompt_tokens``, which counts both), then
    ``rollout.max_turns`` turns of ``rollout.max_new_tokens`` generated tokens plus
    ``reply_text_tokens`` of environment reply each (a single-turn task: one turn, no reply). A
    visual task shows one image per turn (the first in the prompt, then one in each reply), each
    ``image_px`` in size. The SkyRL backend runs an FSDP2 policy over ``placement`` GPUs; the
    reference backend one plain process (no FSDP2) per ``trainer.workers``.

    Args:
        config: the run.
        gpu: GPU name known to the planner (``hyperpod_rl.plan.GPUS``, case-insensitive), since
            a RunConfig does not say which GPU its nodes have (a preset does:
            :func:`hyperpod_rl.config.presets.preset_gpu`).
        image_px: (height, width) of the task's images in pixels.
        prompt_text_tokens: text tokens of the first prompt, images excluded.
        reply_text_tokens: text tokens of each environment reply besides its image.

    Raises:
        ConfigError: the config maps to planner inputs the planner rejects (e.g. an unknown GPU), model.path is
            'tiny', or its config.json is not a JSON object.
    """
    model: str | dict = config.model.path
    if model == "tiny":
        raise ConfigError(
            "model.path='tiny' is the embedded CPU model, which the planner has no figures for: set model.path to a Qwen3-VL "
            "checkpoint directory or hub id (e.g. Qwen/Qwen3-VL-8B-Instruct)"
        )
    local = Path(config.model.path).expanduser() / "config.json"
    if local.is_file():
        try:
            model = json.loads(local.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ConfigError(
                f"{local} is not valid JSON ({err}): point model.path at a checkpoint directory with a valid config.json"
            ) from err
        if not isinstance(model, dict):
            raise ConfigError(f"{local} holds a JSON {type(model).__name__}, not an object: point model.path at a Qwen3-VL checkpoint")
    micro = config.trainer.micro_batch_size
    if config.backend != "skyrl":  # the reference trainer's micro batches never exceed a worker's sequences
        micro = min(micro, max(1, config.data.prompts_per_step * config.grpo.group_size // config.trainer.workers))
    multi_turn = get_task(config.task.name).multi_turn
    turns = config.rollout.max_turns if multi_turn else 1
    first_image = image_tokens(*image_px) + 2
    skyrl = config.backend == "skyrl"
    return PlanInput(
        model=model,
        lora_rank=config.lora.rank,
        micro_train_batch_size_per_gpu=micro,
        mini_batch_size=max((config.trainer.mini_batch_size or config.data.prompts_per_step) * config.grpo.group_size, micro),
        train_batch_size=config.data.prompts_per_step,
        group_size=config.grpo.group_size,
        turns=turns,
        max_prompt_tokens=max(0, min(prompt_text_tokens, config.rollout.max_prompt_tokens - first_image)),
        max_response_tokens=config.rollout.max_new_tokens + (reply_text_tokens if multi_turn else 0),
        image_px=image_px,
        images_per_prompt=turns,
        gpus_per_node=config.placement.gpus_per_node if skyrl else config.trainer.workers,
        nodes=config.placement.nodes if skyrl else 1,
        inference_tensor_parallel_size=config.placement.tensor_parallel_size,
        gpu_memory_utilization=config.rollout.gpu_memory_utilization,
        gradient_checkpointing=config.trainer.gradient_checkpointing,
        checkpoint_layers=config.trainer.checkpoint_layers,
        checkpoint_policy=config.trainer.checkpoint_policy,
        use_kl=config.grpo.kl_coef > 0,
        fsdp=skyrl,
        rollout_engine="vllm" if skyrl else "hf_compiled",
        generated_tokens_per_turn=config.rollout.max_new_tokens,
        gpu=gpu,
    )


def plan_run(config: RunConfig, *, gpu: str = "H200", image_px: tuple[int, int] = (448, 448)) -> Plan:
    """Predicted per-GPU memory, KV-cache room and step time of a run, with verdicts.

    Args:
        config: the run.
        gpu: GPU name known to the planner (``hyperpod_rl.plan.GPUS``: ``"H200"``, ``"H100"``, ``"A10G"``;
            case-insensitive).
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
