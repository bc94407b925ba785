"""FLOPs, step-time estimate (generate / train / sync) and the FSDP2 scaling model.

* **Train**: model FLOPs per sequence are the vision forward (frozen, no
  backward), the language model's forward and input-gradient backward
  (``2 + 2`` FLOPs per frozen weight per token; adapter weight gradients are
  negligible), causal attention, and the output head over response tokens.
  Checkpointing runs the forward of the checkpointed layers a second time (its
  matrix products: none with ``checkpoint_policy="save_matmuls"``); the naive path projects every
  position through the output head. Time is executed FLOPs over the GPU's
  dense bf16 rate times an achieved efficiency fitted on the H200
  (``TRAIN_EFFICIENCY``, by adapter compute dtype, for the 8B shape's hidden size of 4,096),
  scaled by ``(hidden_size / 4096) ** EFFICIENCY_HIDDEN_EXPONENT`` - smaller models' matrix
  products reach a lower fraction of peak - plus a fixed per-micro-batch cost
  (``FIXED_STEP_S``: kernel launches, FSDP2 hooks, the adapter optimizer step).
* **FSDP2 communication** per micro batch: every sharded unit is all-gathered
  in forward and again in backward (``2 * P * 2 bytes * (W-1)/W`` per GPU) and
  the adapter gradients are reduce-scattered in float32. Ring collectives move
  that at ``COMM["efficiency"]`` x NVLink (inside a node) or the inter-node rate;
  ``COMM["exposed"]`` of that time adds to the step (fitted on 1 -> 2 H200s).
* **Generate** (vLLM, estimate): prefill at 40 % of the bf16 rate; decode is
  bandwidth-bound, one read of the weights plus the KV cache per step.
* **Sync**: LoRA weights to vLLM, and (colocated) offloading and reloading the
  policy shard over the host link.
* **Generate, reference backend** (``rollout_engine="hf_compiled"``: transformers' ``generate``
  with a static KV cache and a compiled decode step, all episodes of a worker in one batch per turn):
  ``turns x generated tokens per turn`` decode steps of ``layers x (layer_s + head_s x attention
  heads)`` seconds each (``HF_DECODE``, fitted on the 2B and 8B shapes, 4B held out:
  ``python -m benchmarks.gpu.decode_fit``); no sync (the adapter is in the same process).
"""

from __future__ import annotations

import math

from hyperpod_rl.base import Model
from hyperpod_rl.plan.inputs import PlanInput
from hyperpod_rl.plan.memory import lora_params
from hyperpod_rl.plan.shapes import ModelShape

__all__ = [
    "COMM",
    "EFFICIENCY_HIDDEN_EXPONENT",
    "FIXED_STEP_S",
    "HF_DECODE",
    "TRAIN_EFFICIENCY",
    "StepTime",
    "comm_seconds",
    "hf_decode_step_s",
    "step_time",
    "train_flops_per_sample",
    "train_seconds_per_micro_batch",
]

#: Achieved fraction of dense bf16 peak on executed FLOPs, by adapter compute dtype; least-squares fit
#: over the 59 measured steps of the H200 runs in ``benchmarks.gpu.calibrate.FIT_FILES`` (8B, 2B and 4B shapes)
#: (benchmarks/results/planner_calibration.json; the other runs are held out, docs/planner.md).
TRAIN_EFFICIENCY: dict[str, float] = {"bf16": 0.43, "fp32": 0.29}
#: Fixed seconds per micro batch: plain peft process vs FSDP2 (hooks, casts, all-gather launches); fitted.
FIXED_STEP_S: dict[str, float] = {"plain": 0.111, "fsdp": 0.237}
#: Efficiency scales as (hidden_size / REFERENCE_HIDDEN) ** this; fitted across the 2B, 4B and 8B shapes.
EFFICIENCY_HIDDEN_EXPONENT = 0.6
REFERENCE_HIDDEN = 4096
COMM: dict[str, float] = {
    "efficiency": 0.6,  # fraction of NVLink bandwidth a ring all-gather reaches (0.061 s per 8.8 GB seen on 2 H200s)
    "exposed": 0.29,  # fraction of communication time that adds to the step (fitted)
    "inter_node_bytes_per_s": 50e9,  # 4 x 100 Gb/s EFA per GPU-node share, p5/p5e class
    "latency_s": 30e-6,  # per collective
}
#: Seconds per decode step of the reference backend's compiled decoding, per decoder layer and per attention head of a
#: layer: the exact fit to the 2B and 8B shapes' median step on one H200 at 32 episodes a batch (4B held out; within 4 %):
#: ``benchmarks.gpu.decode_fit`` (results ``h200_grpo_e2e_*.json``, docs/gpu.md).
HF_DECODE: dict[str, float] = {"layer_s": 0.444e-3, "head_s": 0.014e-3}
PREFILL_EFFICIENCY = 0.4
DECODE_BW_EFFICIENCY = 0.6
FIXED_SYNC_S = 2.0  # vLLM sleep/wake and adapter load, observed order of magnitude in SkyRL logs


class StepTime(Model):
    """Estimated seconds of one GRPO step, split by phase."""

    generate_s: float
    train_s: float
    sync_s: float
    train_compute_s: float
    train_comm_exposed_s: float
    train_tokens_per_s_per_gpu: float

    @property
    def total_s(self) -> float:
        return self.generate_s + self.train_s + self.sync_s


def train_flops_per_sample(inp: PlanInput) -> float:
    """Model FLOPs of one sequence's forward + backward (no recompute), for MFU."""
    s = inp.shape()
    t = inp.seq_len
    frozen_linear = s.num_hidden_layers * sum(a * b for a, b in s.linear_dims().values())
    text = 4.0 * frozen_linear * t
    attn = 3 * 2 * 2 * s.num_hidden_layers * s.q_dim * t * t / 2  # QK^T and PV, causal half, fwd + 2x bwd
    head = 6.0 * s.hidden_size * s.vocab_size * inp.response_len
    v = s.vision
    patches = inp.images_per_prompt * inp.image_tokens_per_image * v.spatial_merge_size**2
    vision = 2.0 * v.params * patches
    return text + attn + head + vision


def _executed_flops(inp: PlanInput) -> float:
    s = inp.shape()
    t = inp.seq_len
    f = train_flops_per_sample(inp)
    if inp.gradient_checkpointing and inp.checkpoint_policy == "full":  # save_matmuls recomputes no matrix product
        f += 2.0 * round(inp.checkpoint_layers * s.num_hidden_layers) * sum(a * b for a, b in s.linear_dims().values()) * t
    if inp.logprob_impl == "naive":
        f += 6.0 * s.hidden_size * s.vocab_size * (t - inp.response_len)
    return f


def train_seconds_per_micro_batch(inp: PlanInput) -> float:
    """Compute time of one micro batch's forward + backward on one GPU, seconds."""
    g = inp.gpu_spec()
    eff = TRAIN_EFFICIENCY[inp.adapter_compute_dtype] * (inp.shape().hidden_size / REFERENCE_HIDDEN) ** EFFICIENCY_HIDDEN_EXPONENT
    b = inp.micro_train_batch_size_per_gpu
    return b * _executed_flops(inp) / (g.bf16_flops * eff) + FIXED_STEP_S["fsdp" if inp.fsdp else "plain"]


def comm_seconds(inp: PlanInput) -> float:
    """FSDP2 all-gather + reduce-scatter time of one micro batch per GPU (before overlap), seconds."""
    w = inp.world_size
    if not inp.fsdp or w == 1:
        return 0.0
    s = inp.shape()
    g = inp.gpu_spec()
    frac = (w - 1) / w
    volume = 2 * s.total_params * 2 * frac + lora_params(inp) * 4 * frac
    bw = g.nvlink_bytes_per_s if inp.nodes == 1 else min(g.nvlink_bytes_per_s, COMM["inter_node_bytes_per_s"])
    n_collectives = 2 * (s.num_hidden_layers + s.vision.depth + 1) + s.num_hidden_layers + 1
    return volume / (bw * COMM["efficiency"]) + n_collectives * COMM["latency_s"] * math.log2(max(w, 2))


def hf_decode_step_s(shape: ModelShape, constants: dict[str, float] = HF_DECODE) -> float:
    """Seconds of one compiled decode step of the reference backend: ``layers x (layer_s + head_s x attention heads)``."""
    return shape.num_hidden_layers * (constants["layer_s"] + constants["head_s"] * shape.num_attention_heads)


def _vllm_generate_and_sync(inp: PlanInput, sequences: int, kv_concurrent_sequences: int) -> tuple[float, float]:
    """vLLM's generate and weight-sync seconds of one step (estimates; the SkyRL backend)."""
    s = inp.shape()
    g = inp.gpu_spec()
    w = inp.world_size
    tp = inp.inference_tensor_parallel_size
    inf_gpus = w if inp.placement == "colocated" else (inp.inference_gpus or w)
    engines = max(1, inf_gpus // tp)
    per_engine = math.ceil(sequences / engines)
    waves = math.ceil(per_engine / max(1, kv_concurrent_sequences))
    prompt = inp.seq_len - inp.response_len
    prefill = per_engine * 2.0 * s.total_params * prompt / (tp * g.bf16_flops * PREFILL_EFFICIENCY)
    batch_per_wave = min(per_engine, max(1, kv_concurrent_sequences))
    kv_bytes_token = 2 * s.num_hidden_layers * s.kv_dim * 2
    avg_ctx = prompt + inp.response_len / 2
    decode_step = (s.total_params * 2 / tp + batch_per_wave * avg_ctx * kv_bytes_token / tp) / (g.hbm_bytes_per_s * DECODE_BW_EFFICIENCY)
    generate = prefill + waves * inp.response_len * decode_step
    sync = FIXED_SYNC_S + lora_params(inp) * 2 / g.host_bytes_per_s
    if inp.placement == "colocated":
        sync += 2 * s.total_params * 2 / (w if inp.fsdp else 1) / g.host_bytes_per_s
    return generate, sync


def step_time(inp: PlanInput, *, kv_concurrent_sequences: int) -> StepTime:
    """Estimate one GRPO step; ``kv_concurrent_sequences`` is per inference engine."""
    w = inp.world_size
    sequences = inp.train_batch_size * inp.group_size
    micro_per_gpu = math.ceil(sequences / (inp.micro_train_batch_size_per_gpu * w))
    compute = micro_per_gpu * train_seconds_per_micro_batch(inp)
    comm = micro_per_gpu * comm_seconds(inp)
    exposed = COMM["exposed"] * comm
    train = compute + exposed
    if inp.rollout_engine == "hf_compiled":  # every worker decodes its episodes in one batch per turn, in-process: no sync
        gen_tokens = inp.generated_tokens_per_turn or inp.max_response_tokens
        generate, sync = inp.turns * gen_tokens * hf_decode_step_s(inp.shape()), 0.0
    else:
        generate, sync = _vllm_generate_and_sync(inp, sequences, kv_concurrent_sequences)
    return StepTime(
        generate_s=generate,
        train_s=train,
        sync_s=sync,
        train_compute_s=compute,
        train_comm_exposed_s=exposed,
        train_tokens_per_s_per_gpu=sequences * inp.seq_len / w / train,
    )
