"""Will a run fit its GPUs? The planner (``hyperpod_rl.plan``) applied to a ``RunConfig``.

Used before submission (``hyperpod_rl.jobs.submit_run`` warns with the planner's verdicts when
a SkyRL run is predicted not to fit) and by front-ends that show the plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

from hyperpod_rl.base import load_user_data
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan import Plan, PlanInput, image_tokens, plan
from hyperpod_rl.plan.memory import GIB, vllm_rollout_fraction
from hyperpod_rl.tasks import get_task

__all__ = [
    "PROMPT_TEXT_TOKENS",
    "REPLY_TEXT_TOKENS",
    "EngineSizing",
    "engine_sizing",
    "fit_warnings",
    "plan_input_for",
    "plan_run",
    "planned_reference_engine",
]

#: Text tokens of a task's first prompt that the planner budgets (chat template, system message and
#: instructions; its image is counted apart). The maze's full-style first prompt is 128 text tokens
#: with the tiny model's tokenizer (docs/maze-task.md); the budget doubles that, for a real
#: tokenizer and for other tasks' longer instructions.
PROMPT_TEXT_TOKENS = 256
#: Text tokens of each environment reply besides its image (the feedback line and the chat
#: template's turn markers), added to ``rollout.max_new_tokens`` per turn.
REPLY_TEXT_TOKENS = 32


class EngineSizing(NamedTuple):
    """What a reference run's colocated vLLM engine is sized for (the trainer and the planner use the same)."""

    #: sequences decoded at once: every episode of a step's turn (prompts per step x group size)
    sequences: int
    #: prompt + response tokens of one sequence, as the KV cache is counted
    tokens_per_sequence: int
    #: the engine's ``max_model_len``: ``rollout.max_model_len``, else input limit + response limit
    max_model_len: int


def engine_sizing(config: RunConfig, model_positions: int | None = None) -> EngineSizing:
    """The :class:`EngineSizing` of ``config``'s reference-backend vLLM engine (``rollout.engine`` vllm or auto).

    Args:
        config: the run.
        model_positions: the base model's ``max_position_embeddings`` (its ``config.json``, the text
            config's for Qwen3-VL), when known. vLLM refuses a ``max_model_len`` beyond it, so an unset
            ``rollout.max_model_len`` becomes the smaller of the two (prompts over
            ``rollout.max_prompt_tokens`` are dropped before training either way).

    Raises:
        ConfigError: ``rollout.max_model_len`` is set above ``model_positions``, or the model has fewer
            positions than ``rollout.max_prompt_tokens + rollout.max_new_tokens``.
    """
    r = config.rollout
    max_len = r.max_model_len or r.max_input_tokens + r.max_new_tokens
    if model_positions is not None:
        if r.max_model_len is not None and r.max_model_len > model_positions:
            raise ConfigError(
                f"rollout.max_model_len={r.max_model_len} is more than the base model's {model_positions} positions "
                f"(max_position_embeddings): set rollout.max_model_len to at most {model_positions}, or unset it"
            )
        if r.max_prompt_tokens + r.max_new_tokens > model_positions:
            raise ConfigError(
                f"rollout.max_prompt_tokens + rollout.max_new_tokens = {r.max_prompt_tokens + r.max_new_tokens} is more than the "
                f"base model's {model_positions} positions (max_position_embeddings): lower rollout.max_prompt_tokens"
            )
        max_len = min(max_len, model_positions)
    return EngineSizing(
        sequences=config.data.prompts_per_step * config.grpo.group_size,
        tokens_per_sequence=min(max_len, r.max_prompt_tokens + r.max_new_tokens),
        max_model_len=max_len,
    )


def planned_reference_engine(config: RunConfig) -> Literal["vllm", "hf_compiled"]:
    """Who generates a reference run's rollouts on a GPU, as the planner counts it.

    ``rollout.engine=vllm`` is the colocated vLLM engine; ``auto`` is too when the run generates
    freely (``rollout.action_constraint="none"``), since a plan is for a GPU node whose image
    carries vLLM (the rule of :func:`hyperpod_rl.model.vllm_engine.choose_engine`, where the job
    also checks that CUDA and vllm are there); ``hf``, and ``auto`` with constrained actions,
    are the in-process compiled transformers decoding.
    """
    r = config.rollout
    if r.engine == "vllm" or (r.engine == "auto" and r.action_constraint == "none"):
        return "vllm"
    return "hf_compiled"


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
    reference backend one plain process (no FSDP2) per ``trainer.workers``, its rollouts from
    the engine :func:`planned_reference_engine` names; a colocated vLLM engine there asks for the
    GPU share the trainer's :func:`~hyperpod_rl.plan.memory.vllm_rollout_fraction` counts (what
    is free once the trainer's bf16 weights are loaded), not ``rollout.gpu_memory_utilization``,
    which only caps it.

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
            'tiny', its config.json is not a JSON object, or it is an SFT stage (``stage='sft'``: no rollouts, and
            the planner sizes GRPO runs).
    """
    if config.stage != "grpo":
        raise ConfigError(
            f"stage={config.stage!r}: the planner sizes GRPO runs (vLLM rollouts and the policy update), and an SFT stage "
            "has no rollouts: plan the GRPO run that starts from it (e.g. --preset hyperpod-6gpu for hyperpod-6gpu-sft)"
        )
    model: str | dict = config.model.path
    if model == "tiny":
        raise ConfigError(
            "model.path='tiny' is the embedded CPU model, which the planner has no figures for: set model.path to a Qwen3-VL "
            "checkpoint directory or hub id (e.g. Qwen/Qwen3-VL-8B-Instruct)"
        )
    local = Path(config.model.path).expanduser() / "config.json"
    if local.is_file():
        model = load_user_data(
            local, "model.path config.json", syntax="json", repair="point model.path at a checkpoint directory with a valid config.json"
        )
        if not isinstance(model, dict):
            raise ConfigError(f"{local} holds a JSON {type(model).__name__}, not an object: point model.path at a Qwen3-VL checkpoint")
    micro = config.trainer.micro_batch_size
    if config.backend != "skyrl":  # the reference trainer's micro batches never exceed a worker's sequences
        micro = min(micro, max(1, config.data.prompts_per_step * config.grpo.group_size // config.trainer.workers))
    multi_turn = get_task(config.task.name).multi_turn
    turns = config.rollout.max_turns if multi_turn else 1
    first_image = image_tokens(*image_px) + 2
    skyrl = config.backend == "skyrl"
    engine = "vllm" if skyrl else planned_reference_engine(config)
    inp = PlanInput(
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
        rollout_engine=engine,
        engine_sleeps=skyrl or engine != "vllm" or config.rollout.engine_sleep,
        generated_tokens_per_turn=config.rollout.max_new_tokens,
        gpu=gpu,
    )
    if skyrl or engine != "vllm":
        return inp
    total = inp.gpu_spec().memory_gib * GIB
    sizing = engine_sizing(config)
    fraction = vllm_rollout_fraction(
        inp.shape(),
        sequences=sizing.sequences,
        tokens_per_sequence=sizing.tokens_per_sequence,
        gpu_total_bytes=int(total),
        free_bytes=int(total - inp.shape().total_params * 2),
        cap=config.rollout.gpu_memory_utilization,
    )
    return inp.model_copy(update={"gpu_memory_utilization": round(fraction, 4)})


def plan_run(config: RunConfig, *, gpu: str = "H200", image_px: tuple[int, int] = (448, 448)) -> Plan:
    """Predicted per-GPU memory, KV-cache room and step time of a run, with verdicts.

    Args:
        config: the run.
        gpu: GPU name known to the planner (``hyperpod_rl.plan.GPUS``: ``"H200"``, ``"H100"``, ``"A10G"``,
            ``"RTXPRO6000"``; case-insensitive).
        image_px: (height, width) of the task's images in pixels.

    Returns:
        The :class:`~hyperpod_rl.plan.Plan` (in a notebook it shows as HTML tables).

    Raises:
        ConfigError: unknown GPU, bad image size, or a config the planner rejects (an SFT stage among them).
    """
    planned = plan(plan_input_for(config, gpu=gpu, image_px=image_px))
    words = _config_words(config)
    return planned.model_copy(update={"verdicts": [words(v) for v in planned.verdicts], "blockers": [words(b) for b in planned.blockers]})


#: PlanInput fields (the planner's, named as SkyRL's config names them) -> the RunConfig field a user
#: of plan_run sets instead, where the two mean the same value (plan_input_for maps them).
_RUN_CONFIG_FIELD = {
    "inference_tensor_parallel_size": "placement.tensor_parallel_size",
    "gpu_memory_utilization": "rollout.gpu_memory_utilization",
    "micro_train_batch_size_per_gpu": "trainer.micro_batch_size",
    "train_batch_size": "data.prompts_per_step",
    "group_size": "grpo.group_size",
    "gradient_checkpointing": "trainer.gradient_checkpointing",
}


def _config_words(config: RunConfig) -> Callable[[str], str]:
    """Rewrite a verdict in the RunConfig's field names (a plan of a RunConfig told users to set
    ``inference_tensor_parallel_size``, a field they do not have). ``mini_batch_size=N`` is the
    planner's count of sequences; the RunConfig's is prompts, so ``N`` becomes ``N / group_size``
    (or stays a count of sequences where it does not divide)."""
    group = config.grpo.group_size
    names = re.compile(r"(?<![\w.])(" + "|".join(_RUN_CONFIG_FIELD) + r")\b")

    def mini(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return f"trainer.mini_batch_size={n // group}" if n % group == 0 else f"a mini batch of {n} sequences"

    def words(text: str) -> str:
        text = re.sub(r"(?<![\w.])mini_batch_size=(\d+)", mini, text)
        text = names.sub(lambda m: _RUN_CONFIG_FIELD[m.group(1)], text)
        # a RunConfig sets the engine count beside the TP size (placement.num_engines x TP = the GPUs)
        return re.sub(
            r"placement\.tensor_parallel_size=(\d+) \((\d+) engines of \d+ GPUs\)",
            r"placement.tensor_parallel_size=\1 and placement.num_engines=\2",
            text,
        )

    return words


def fit_warnings(config: RunConfig, *, gpu: str = "H200") -> list[str]:
    """The planner's verdicts when a SkyRL run is predicted not to fit; ``[]`` otherwise.

    The reference backend runs on CPU or one small GPU and is not planned; nor is an SFT stage
    (the planner sizes GRPO runs: :func:`plan_input_for`).
    """
    if config.backend != "skyrl" or config.stage != "grpo":
        return []
    result = plan_run(config, gpu=gpu)
    return [] if result.fits else list(result.verdicts)
