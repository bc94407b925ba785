"""``plan(PlanInput) -> Plan``: memory, KV-cache room, step time and plain-language verdicts."""

from __future__ import annotations

from typing import Literal

from hyperpod_rl.base import Model
from hyperpod_rl.plan.hardware import CALIBRATION_GPU, GPUS
from hyperpod_rl.plan.inputs import PlanInput
from hyperpod_rl.plan.memory import GIB, KVCache, MemoryBreakdown, RolloutMemory, policy_update_memory, rollout_memory
from hyperpod_rl.plan.throughput import StepTime, comm_seconds, step_time, train_seconds_per_micro_batch

__all__ = ["KVCache", "Plan", "ScalingPoint", "plan", "predict_scaling"]

#: vLLM memory besides weights and KV cache when awake: activation profile run and CUDA graphs, GiB.
VLLM_WORKSPACE_GIB = 4.0
#: What a sleeping vLLM engine (level 1) still holds on the GPU, GiB.
VLLM_ASLEEP_GIB = 1.5


class Plan(Model):
    """The planner's answer. ``fits`` is False when any verdict is a blocker (listed again in ``blockers``).

    In a notebook a plan shows as HTML tables (:func:`hyperpod_rl.plan.report.plan_html`).
    """

    input: PlanInput
    seq_len: int
    image_tokens: int
    memory: MemoryBreakdown
    gpu_memory_gib: float
    kv_cache: KVCache
    rollout: RolloutMemory | None = None
    """Compiled decoding's memory (reference backend only: ``rollout_engine="hf_compiled"``)."""
    step: StepTime
    fits: bool
    verdicts: list[str]
    blockers: list[str] = []
    """The verdicts that make the run not fit (a subset of ``verdicts``, same order)."""

    def _repr_html_(self) -> str:
        from hyperpod_rl.plan.report import plan_html

        return plan_html(self)


class ScalingPoint(Model):
    """Predicted policy-update throughput at one GPU count."""

    gpus: int
    micro_batch_per_gpu: int
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    comm_s: float
    step_s: float
    efficiency: float
    peak_gib: float


def _kv_cache(inp: PlanInput) -> KVCache:
    s = inp.shape()
    g = inp.gpu_spec()
    tp = inp.inference_tensor_parallel_size
    per_token = 2 * s.num_hidden_layers * s.kv_dim * 2  # K and V, bf16, all layers
    weights = s.total_params * 2 / tp / GIB
    room = g.memory_gib * inp.gpu_memory_utilization - weights - VLLM_WORKSPACE_GIB
    tokens = max(0, int(room * GIB * tp // per_token))
    return KVCache(bytes_per_token=per_token, capacity_gib=max(0.0, room), tokens=tokens, concurrent_sequences=tokens // inp.seq_len)


def plan(inp: PlanInput) -> Plan:
    """Predict whether ``inp`` fits and where its step time goes.

    Returns:
        A :class:`Plan`; ``Plan.verdicts`` says in words what to change, e.g.
        ``"micro_train_batch_size_per_gpu=64 needs about 91 GiB per GPU on 79 GiB (...): use 32 (the largest micro
        batch that fits and divides the 64 sequences each GPU gets per optimizer step)"``. Every value a verdict
        suggests is valid for the run: micro batches divide ``mini_batch_size / world_size``, mini batches divide
        ``train_batch_size * group_size``, tensor-parallel sizes tile the GPUs and split the attention heads.
    """
    g = inp.gpu_spec()
    mem = policy_update_memory(inp)
    kv = _kv_cache(inp)
    step = step_time(inp, kv_concurrent_sequences=kv.concurrent_sequences)
    verdicts: list[str] = []
    blockers: list[str] = []
    vllm = inp.rollout_engine == "vllm"
    resident = 0.0
    where = ""
    if vllm and inp.placement == "colocated":
        if inp.engine_sleeps:
            resident = VLLM_ASLEEP_GIB
            where = f" (with {resident:g} GiB held by the sleeping vLLM engine)"
        else:
            resident = g.memory_gib * inp.gpu_memory_utilization
            where = f" (with {resident:.0f} GiB held by the awake vLLM engine, rollout.engine_sleep=false)"
    budget = g.memory_gib - resident
    if mem.peak_gib > budget:
        best = _largest_fitting_micro_batch(inp, budget)
        if best:
            fix = f"use {best} (the largest micro batch that fits and divides the {inp.mini_batch_size // inp.world_size} sequences each GPU gets per optimizer step)"
        elif inp.mini_batch_size % inp.world_size:
            fix = f"mini_batch_size={inp.mini_batch_size} does not split over {inp.world_size} GPUs: make it a multiple of {inp.world_size}"
        else:
            fix = "no micro batch fits: " + _no_fit_hint(inp)
        if vllm and not inp.engine_sleeps:
            fix += f"; or set rollout.engine_sleep=true, so the engine frees its {resident:.0f} GiB during the update"
        verdicts.append(
            f"micro_train_batch_size_per_gpu={inp.micro_train_batch_size_per_gpu} needs about {mem.peak_gib:.0f} GiB per GPU "
            f"on {g.memory_gib:.0f} GiB{where}: {fix}"
        )
        blockers.append(verdicts[-1])
    else:
        verdicts.append(f"policy update fits: about {mem.peak_gib:.0f} of {g.memory_gib:.0f} GiB per GPU{where}")
        if not inp.gradient_checkpointing:
            verdicts.append(
                "gradient_checkpointing is off: activations take "
                f"{mem.activations_gib:.0f} GiB; turning it on trades about 25% more compute for most of that"
            )
    # the reference backend's update knobs (trainer.compile_layers, checkpoint_policy), whoever generates
    if not inp.fsdp and inp.gradient_checkpointing and inp.checkpoint_policy == "full" and mem.peak_gib <= budget:
        selective = policy_update_memory(inp.model_copy(update={"checkpoint_layers": 1.0, "checkpoint_policy": "save_matmuls"}))
        if selective.peak_gib <= 0.9 * budget:
            verdicts.append(
                f"room for the faster update: trainer.compile_layers=true with trainer.checkpoint_policy='save_matmuls' needs about "
                f"{selective.peak_gib:.0f} GiB per GPU (on one H200 the 8B update at 16 x 807 tokens ran at 47 % MFU with both, 22 % with neither; docs/gpu.md)"
            )
    if inp.logprob_impl == "naive":
        verdicts.append(f"naive log-probs materialise full logits ({mem.logits_gib:.0f} GiB); logprob_impl='chunked' needs a few GiB")
    rollout = None if vllm else rollout_memory(inp)
    if rollout is not None:
        cache = (
            f"the static KV cache of the last turn ({rollout.rows} rows x {rollout.tokens_per_row:,} tokens) takes about "
            f"{rollout.kv_cache_gib:.0f} GiB, {rollout.peak_gib:.0f} GiB with the model"
        )
        if rollout.peak_gib > budget:
            verdicts.append(
                f"rollouts: {cache}, more than the GPU's {g.memory_gib:.0f} GiB: lower data.prompts_per_step or grpo.group_size "
                "(episodes per worker), rollout.max_new_tokens or rollout.max_turns, or add trainer.workers"
            )
            blockers.append(verdicts[-1])
        else:
            measured = "measured at 32 episodes a batch" + (f"; {rollout.rows} rows may take longer" if rollout.rows > 64 else "")
            verdicts.append(
                f"rollouts: compiled decoding in the training process, about {step.generate_s:.0f} s a step (the decode model "
                f"fitted on one H200, {measured}; no vLLM engine, no weight sync); {cache}"
            )
    elif kv.concurrent_sequences < 1:
        need = (
            (s_w := inp.shape().total_params * 2 / inp.inference_tensor_parallel_size / GIB)
            + VLLM_WORKSPACE_GIB
            + inp.seq_len * kv.bytes_per_token / GIB
        )
        verdicts.append(
            f"gpu_memory_utilization={inp.gpu_memory_utilization} leaves {kv.capacity_gib:.1f} GiB for vLLM's KV cache after "
            f"{s_w:.0f} GiB of weights: not one {inp.seq_len:,}-token sequence fits; {_kv_fix(inp, need / g.memory_gib + 0.02)}"
        )
        blockers.append(verdicts[-1])
    else:
        verdicts.append(
            f"vLLM KV cache: {kv.tokens:,} tokens, about {kv.concurrent_sequences:,} concurrent {inp.seq_len:,}-token sequences per engine"
        )
    if vllm and inp.placement == "colocated" and inp.gpu_memory_utilization > 0.85:
        verdicts.append(
            f"gpu_memory_utilization={inp.gpu_memory_utilization} is high for colocated training: vLLM must sleep fully before the update"
        )
    if inp.image_tokens_per_image > 4096:
        verdicts.append(
            f"each {inp.image_px[0]}x{inp.image_px[1]} px image becomes {inp.image_tokens_per_image} tokens; downscale images to cut memory and time"
        )
    sequences = inp.train_batch_size * inp.group_size
    per_step = inp.micro_train_batch_size_per_gpu * inp.world_size
    # SkyRL's batch rules (its FSDP2 policy); the reference backend takes any micro batch (its last one may be smaller)
    skyrl_batches = vllm and inp.fsdp
    if skyrl_batches and inp.mini_batch_size % per_step:
        verdicts.append(
            f"mini_batch_size={inp.mini_batch_size} must be a multiple of micro_train_batch_size_per_gpu x GPUs = {per_step}: "
            + _batch_fix(inp, budget)
        )
        blockers.append(verdicts[-1])
    if skyrl_batches and sequences % inp.mini_batch_size:
        verdicts.append(
            f"train_batch_size x group_size = {sequences} sequences must be a multiple of mini_batch_size={inp.mini_batch_size}: "
            + _mini_batch_fix(inp, sequences)
        )
        blockers.append(verdicts[-1])
    if not g.fitted:
        verdicts.append(
            f"step time on {g.name} is extrapolated: the planner's efficiency factors were fitted on {GPUS[CALIBRATION_GPU].name} "
            "measurements only and are applied here to this GPU's datasheet rates"
            + ("" if vllm else "; the compiled-decoding time is the H200's, not scaled")
        )
    verdicts.append(
        f"step time estimate: generate {step.generate_s:.0f} s, train {step.train_s:.0f} s, sync {step.sync_s:.0f} s "
        f"(train {step.train_tokens_per_s_per_gpu:,.0f} tokens/s per GPU)"
    )
    return Plan(
        input=inp,
        seq_len=inp.seq_len,
        image_tokens=inp.image_tokens_per_image,
        memory=mem,
        gpu_memory_gib=g.memory_gib,
        kv_cache=kv,
        rollout=rollout,
        step=step,
        fits=not blockers,
        verdicts=verdicts,
        blockers=blockers,
    )


def valid_micro_batches(inp: PlanInput) -> list[int]:
    """Micro batches per GPU that split an optimizer step evenly, ascending: the divisors of
    ``mini_batch_size / world_size`` (empty when ``mini_batch_size`` does not split over the GPUs)."""
    if inp.mini_batch_size % inp.world_size:
        return []
    per_gpu = inp.mini_batch_size // inp.world_size
    return [b for b in range(1, per_gpu + 1) if per_gpu % b == 0]


def _largest_fitting_micro_batch(inp: PlanInput, budget_gib: float, *, below: int | None = None) -> int:
    """The largest valid micro batch (:func:`valid_micro_batches`) below ``below`` (default: the
    input's) whose policy update fits ``budget_gib``; 0 when none does."""
    limit = inp.micro_train_batch_size_per_gpu if below is None else below
    best = 0
    for b in valid_micro_batches(inp):
        if b < limit and policy_update_memory(inp.model_copy(update={"micro_train_batch_size_per_gpu": b})).peak_gib <= budget_gib:
            best = b
    return best


def _batch_fix(inp: PlanInput, budget_gib: float) -> str:
    """What to set when the micro batch does not divide the mini batch: a valid micro batch that fits, if any."""
    if inp.mini_batch_size % inp.world_size:
        return f"make mini_batch_size a multiple of the {inp.world_size} GPUs"
    best = _largest_fitting_micro_batch(inp, budget_gib, below=inp.mini_batch_size + 1)
    if best:
        return f"use micro_train_batch_size_per_gpu={best} (a divisor of the {inp.mini_batch_size // inp.world_size} sequences per GPU that fits)"
    return f"pick a divisor of the {inp.mini_batch_size // inp.world_size} sequences per GPU"


def _mini_batch_fix(inp: PlanInput, sequences: int) -> str:
    """A mini batch that divides the step's sequences and splits into whole micro batches on every GPU."""
    per_step = inp.micro_train_batch_size_per_gpu * inp.world_size
    valid = [m for m in range(per_step, sequences + 1, per_step) if sequences % m == 0]
    if not valid:
        return f"make train_batch_size x group_size a multiple of micro_train_batch_size_per_gpu x GPUs = {per_step}"
    below = [m for m in valid if m <= inp.mini_batch_size]
    return f"use mini_batch_size={max(below) if below else min(valid)}"


def _least_utilization(inp: PlanInput, *, most: float = 0.95) -> float | None:
    """The smallest ``gpu_memory_utilization`` above ``inp``'s, in steps of 0.01 up to ``most``, at which one sequence fits
    vLLM's KV cache; None when none does."""
    for pct in range(round(inp.gpu_memory_utilization * 100) + 1, round(most * 100) + 1):
        if _kv_cache(inp.model_copy(update={"gpu_memory_utilization": pct / 100})).concurrent_sequences >= 1:
            return pct / 100
    return None


def _kv_fix(inp: PlanInput, utilization_needed: float) -> str:
    """What to change when vLLM has no KV-cache room: a utilization that fits, and/or a valid larger TP."""
    fixes = []
    if utilization_needed <= 0.95:
        fixes.append(f"raise gpu_memory_utilization to at least {utilization_needed:.2f}")
    s = inp.shape()
    gpus = inp.world_size if inp.placement == "colocated" else (inp.inference_gpus or inp.world_size)
    for tp in range(inp.inference_tensor_parallel_size + 1, min(gpus, inp.gpus_per_node) + 1):
        # vLLM needs the attention heads to split over TP ranks, and the engines to tile the GPUs.
        if gpus % tp or s.num_attention_heads % tp or s.num_key_value_heads % tp:
            continue
        at_tp = inp.model_copy(update={"inference_tensor_parallel_size": tp})
        if _kv_cache(at_tp).concurrent_sequences >= 1:
            fixes.append(f"set inference_tensor_parallel_size={tp} ({gpus // tp} engines of {tp} GPUs)")
            break
        # a larger TP that fits only with a higher utilization: say both (reported: on 6 A10G at 0.45 the planner said no
        # utilization or TP fits, while TP 2 at 0.9 does)
        util = _least_utilization(at_tp)
        if util is not None:
            fixes.append(
                f"set inference_tensor_parallel_size={tp} ({gpus // tp} engines of {tp} GPUs) with gpu_memory_utilization of at least {util:.2f}"
            )
            break
    if not fixes:
        return "no utilization or tensor-parallel size that fits this GPU count: use GPUs with more memory or a smaller model"
    return " or ".join(fixes)


def _no_fit_hint(inp: PlanInput) -> str:
    if not inp.gradient_checkpointing:
        return "turn gradient_checkpointing on"
    if inp.logprob_impl == "naive":
        return "use logprob_impl='chunked'"
    if inp.checkpoint_policy != "full" or inp.checkpoint_layers < 1:
        return "checkpoint every layer fully (trainer.checkpoint_policy='full', trainer.checkpoint_layers=1)"
    if not inp.fsdp:
        return "without FSDP2 every GPU holds the whole model: shard it (FSDP2), shorten max_response_tokens or downscale images"
    return "add GPUs (more FSDP shards), shorten max_response_tokens or downscale images"


def predict_scaling(inp: PlanInput, gpu_counts: list[int], *, mode: Literal["weak", "strong"]) -> list[ScalingPoint]:
    """Policy-update throughput against GPU count on one node (FSDP2).

    ``weak`` keeps ``micro_train_batch_size_per_gpu``; ``strong`` keeps the global micro
    batch ``micro_train_batch_size_per_gpu * gpus_per_node`` of ``inp`` and splits it.
    Efficiency is tokens/s per GPU relative to the first count.
    """
    from hyperpod_rl.plan.throughput import COMM

    global_batch = inp.micro_train_batch_size_per_gpu * inp.world_size
    points: list[ScalingPoint] = []
    for n in gpu_counts:
        b = inp.micro_train_batch_size_per_gpu if mode == "weak" else max(1, global_batch // n)
        p = inp.model_copy(update={"gpus_per_node": n, "nodes": 1, "micro_train_batch_size_per_gpu": b})
        compute = train_seconds_per_micro_batch(p)
        comm = comm_seconds(p)
        step = compute + COMM["exposed"] * comm
        tps = b * p.seq_len * n / step
        points.append(
            ScalingPoint(
                gpus=n,
                micro_batch_per_gpu=b,
                tokens_per_s=tps,
                tokens_per_s_per_gpu=tps / n,
                comm_s=comm,
                step_s=step,
                efficiency=0.0,
                peak_gib=policy_update_memory(p).peak_gib,
            )
        )
    base = points[0].tokens_per_s_per_gpu if points else 1.0
    return [pt.model_copy(update={"efficiency": pt.tokens_per_s_per_gpu / base}) for pt in points]
