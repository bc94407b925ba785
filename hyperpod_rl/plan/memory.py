"""Per-GPU peak memory of the FSDP2 LoRA policy update (forward + backward + optimizer step).

The model counts what PyTorch's caching allocator holds at the peak, which is
the start of the backward pass (all saved activations plus the log-prob
gradient) or, with gradient checkpointing, the backward of one decoder layer:

* **weights**: bf16 base model, sharded over the ``W`` FSDP ranks; FSDP2 also
  keeps the root unit (embedding, output head, final norm, vision merger)
  unsharded through forward and backward, and gathers about two decoder
  layers at a time (current + prefetch).
* **LoRA**: float32 master adapters, float32 gradients and two AdamW moments,
  16 bytes a parameter, sharded.
* **activations**: what autograd saves per token in each decoder layer (counted
  tensor by tensor for the HF Qwen3 layer with sdpa: RMSNorms keep a float32
  copy, flash attention keeps q, k, v and its output, the SwiGLU MLP keeps four
  intermediate tensors; peft's float32 adapters add float32 copies of every
  adapter input). With checkpointing only each layer's input is kept, plus one
  layer recomputed during its backward; ``checkpoint_layers`` below 1 keeps the
  full activations of the layers not checkpointed, and ``checkpoint_policy=
  "save_matmuls"`` (selective checkpointing) keeps, per checkpointed layer, its
  input and the output of every matrix product (base linears, both LoRA factors)
  and of attention, in bf16 (counted, not fitted).
* **logits**: naive path, (B, T, V) bf16 logits plus float32 ``log_softmax`` and its
  gradient; chunked path, one (chunk, V) float32 block and its gradient.

``CALIBRATION`` holds the few factors fitted to the H200 measurements in
``benchmarks/results/`` (see docs/planner.md); everything else is counted.
"""

from __future__ import annotations

from hyperpod_rl.base import Model
from hyperpod_rl.config.decoding import decode_batch_rows, decode_cache_tokens
from hyperpod_rl.plan.inputs import PlanInput
from hyperpod_rl.plan.shapes import ModelShape

__all__ = [
    "KVCache",
    "CALIBRATION",
    "MemoryBreakdown",
    "activation_bytes_per_token_layer",
    "lora_params",
    "RolloutMemory",
    "policy_update_memory",
    "rollout_memory",
    "saved_bytes_per_token_checkpointed_layer",
]

GIB = 2**30

#: Factors fitted to the H200 runs in ``benchmarks.gpu.calibrate.FIT_FILES`` (benchmarks/results/planner_calibration.json);
#: 1.0 means "as counted".
CALIBRATION: dict[str, float] = {
    "activation_scale": 0.83,  # multiplies the counted per-layer saved bytes (fitted)
    "ckpt_layers_live": 1.0,  # decoder layers' full activations live during a checkpointed backward (held at 1)
    "naive_logit_bytes": 10.3,  # bytes per (token, vocab entry) at the naive path's peak (fitted; 2 bf16 + 4 fp32 + ~4 grad)
    "chunk_logit_bytes": 3.5,  # bytes per (chunk row, vocab entry) for the chunked path (fitted across 2B/4B/8B)
    "fsdp_layers_gathered": 2.0,  # decoder layers unsharded at once under FSDP2 (held: current + prefetch)
    "overhead_gib": 0.5,  # CUDA/cuBLAS workspaces, allocator slack, small buffers (held, not fitted: benchmarks/gpu/calibrate.py)
}


class MemoryBreakdown(Model):
    """Predicted per-GPU memory of one policy-update micro batch, GiB."""

    weights_gib: float
    fsdp_buffers_gib: float
    reference_gib: float
    lora_gib: float
    activations_gib: float
    logits_gib: float
    overhead_gib: float

    @property
    def peak_gib(self) -> float:
        return (
            self.weights_gib
            + self.fsdp_buffers_gib
            + self.reference_gib
            + self.lora_gib
            + self.activations_gib
            + self.logits_gib
            + self.overhead_gib
        )


def lora_params(inp: PlanInput) -> int:
    """Adapter parameters: ``rank * (in + out)`` per targeted linear per layer."""
    s = inp.shape()
    dims = s.linear_dims()
    return s.num_hidden_layers * sum(inp.lora_rank * (dims[m][0] + dims[m][1]) for m in inp.lora_target_modules)


def activation_bytes_per_token_layer(inp: PlanInput) -> float:
    """Bytes autograd saves per token in one decoder layer without checkpointing (before calibration)."""
    s = inp.shape()
    h, i, q, kv = s.hidden_size, s.intermediate_size, s.q_dim, s.kv_dim
    norms = 2 * (4 * h + 2 * h + 2 * h)  # two RMSNorms: fp32 input, bf16 normalised, bf16 scaled output
    qk_norm = (4 + 2) * (q + kv)  # q_norm / k_norm over heads
    attn = 2 * (q + 2 * kv) + 2 * q + 2 * q  # sdpa keeps q, k, v and its output; o_proj keeps its (contiguous) input
    mlp = 4 * 2 * i  # gate out, silu out, up out, product (down_proj input)
    total = norms + qk_norm + attn + mlp
    targets = set(inp.lora_target_modules)
    dims = s.linear_dims()
    total += sum(2 * inp.lora_rank for _ in targets)  # lora_A outputs
    if inp.adapter_compute_dtype == "fp32":  # peft casts each adapter's input to float32 and keeps it
        total += sum(4 * dims[m][0] for m in targets)
        total += sum(2 * inp.lora_rank for _ in targets)
    return float(total)


def saved_bytes_per_token_checkpointed_layer(inp: PlanInput) -> float:
    """Bytes a checkpointed decoder layer keeps per token until its backward.

    ``"full"``: its input (bf16 hidden state). ``"save_matmuls"``: also the bf16 output of every
    matrix product - the seven base linears, each targeted linear's ``lora_A`` (rank wide) and
    ``lora_B`` (as wide as the linear's output) - and attention's output.
    """
    s = inp.shape()
    kept = s.hidden_size
    if inp.checkpoint_policy == "save_matmuls":
        dims = s.linear_dims()
        kept += sum(out for _, out in dims.values()) + s.q_dim
        kept += sum(inp.lora_rank + dims[m][1] for m in inp.lora_target_modules)
    return 2.0 * kept


def policy_update_memory(inp: PlanInput) -> MemoryBreakdown:
    """Per-GPU memory of one micro batch of the policy update; see the module docstring."""
    s = inp.shape()
    c = CALIBRATION
    w = inp.world_size if inp.fsdp else 1
    total = s.total_params
    weights = total * 2 / w
    fsdp_buffers = 0.0
    if inp.fsdp:
        root = (
            s.embed_params * (1 if s.tie_word_embeddings else 2)
            + s.hidden_size
            + (s.vision.params - s.vision.depth * _vision_block_params(inp))
        )
        fsdp_buffers = root * 2 * (1 - 1 / w) + c["fsdp_layers_gathered"] * s.layer_params * 2
    reference = 0.0 if not inp.use_kl or inp.offload_reference else total * 2 / w
    lora = lora_params(inp) * 16 / w
    tokens = inp.micro_train_batch_size_per_gpu * inp.seq_len
    per_layer = activation_bytes_per_token_layer(inp) * c["activation_scale"] * tokens
    checkpointed = round(inp.checkpoint_layers * s.num_hidden_layers) if inp.gradient_checkpointing else 0
    if checkpointed:
        kept = saved_bytes_per_token_checkpointed_layer(inp) * tokens
        activations = checkpointed * kept + (s.num_hidden_layers - checkpointed) * per_layer + c["ckpt_layers_live"] * per_layer
    else:
        activations = s.num_hidden_layers * per_layer
    activations += _vision_outputs_bytes(inp)
    resp_tokens = inp.micro_train_batch_size_per_gpu * inp.response_len
    if inp.logprob_impl == "naive":
        logits = c["naive_logit_bytes"] * tokens * s.vocab_size
    else:
        logits = c["chunk_logit_bytes"] * min(inp.chunk_tokens, resp_tokens) * s.vocab_size + resp_tokens * s.hidden_size * 4
    return MemoryBreakdown(
        weights_gib=weights / GIB,
        fsdp_buffers_gib=fsdp_buffers / GIB,
        reference_gib=reference / GIB,
        lora_gib=lora / GIB,
        activations_gib=activations / GIB,
        logits_gib=logits / GIB,
        overhead_gib=c["overhead_gib"],
    )


def _vision_block_params(inp: PlanInput) -> int:
    v = inp.shape().vision
    h, i = v.hidden_size, v.intermediate_size
    return (h * 3 * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h) + 4 * h


def _vision_outputs_bytes(inp: PlanInput) -> float:
    """Image embeddings and the deepstack features kept for the language model (bf16)."""
    s = inp.shape()
    n = inp.micro_train_batch_size_per_gpu * inp.images_per_prompt * inp.image_tokens_per_image
    return n * s.hidden_size * 2 * (1 + len(s.vision.deepstack_visual_indexes))


class RolloutMemory(Model):
    """Predicted per-GPU memory of the reference backend's compiled decoding at its last turn, GiB."""

    rows: int
    tokens_per_row: int
    weights_gib: float
    lora_gib: float
    kv_cache_gib: float
    overhead_gib: float

    @property
    def peak_gib(self) -> float:
        return self.weights_gib + self.lora_gib + self.kv_cache_gib + self.overhead_gib


def rollout_memory(inp: PlanInput) -> RolloutMemory:
    """Memory of one worker's compiled decoding (``rollout_engine="hf_compiled"``), counted, not fitted.

    The whole model (bf16), the adapters with their AdamW state (float32 weights and two moments),
    and the static KV cache of the last turn: every episode of the worker in one batch filled up to
    :func:`~hyperpod_rl.config.decoding.decode_batch_rows` rows, each the longest prompt padded to
    the length bucket plus the new tokens (K and V, bf16, all layers).
    """
    s = inp.shape()
    gen = inp.generated_tokens_per_turn or inp.max_response_tokens
    rows = decode_batch_rows(max(1, -(-inp.train_batch_size * inp.group_size // inp.world_size)))
    tokens = decode_cache_tokens(inp.seq_len - gen, gen)
    kv = rows * tokens * 2 * s.num_hidden_layers * s.kv_dim * 2
    return RolloutMemory(
        rows=rows,
        tokens_per_row=tokens,
        weights_gib=s.total_params * 2 / GIB,
        lora_gib=lora_params(inp) * 12 / GIB,
        kv_cache_gib=kv / GIB,
        overhead_gib=CALIBRATION["overhead_gib"],
    )


#: GiB a colocated vLLM engine needs beyond weights and KV cache (CUDA graphs, activations of the
#: largest batch, the sampler's logits), counted generously; vLLM profiles its own peak at start.
VLLM_ENGINE_OVERHEAD_GIB = 6.0


def vllm_rollout_fraction(
    shape: ModelShape, *, sequences: int, tokens_per_sequence: int, gpu_total_bytes: int, free_bytes: int, cap: float
) -> float:
    """The GPU fraction a colocated vLLM engine of the reference backend asks for (``gpu_memory_utilization``).

    Counted, not fitted: the bf16 weights, the KV cache of every sequence of a turn at once
    (K and V, bf16, all layers) doubled for headroom (prefix caching and preemption), plus
    :data:`VLLM_ENGINE_OVERHEAD_GIB`; never more than ``cap`` (``rollout.gpu_memory_utilization``)
    nor than 95 % of what is free when the engine starts (vLLM refuses a fraction above the free
    share, vLLM 0.23 ``vllm/v1/worker/utils.py`` ``request_memory``).

    Args:
        shape: the base model's shape.
        sequences: sequences decoded at once (episodes of one turn).
        tokens_per_sequence: prompt + response tokens of one sequence.
        gpu_total_bytes: the GPU's memory, bytes.
        free_bytes: free GPU memory before the engine starts, bytes.
        cap: the largest fraction allowed.

    Returns:
        A fraction in (0, 1).
    """
    kv = 2 * sequences * tokens_per_sequence * 2 * shape.num_hidden_layers * shape.kv_dim * 2
    need = shape.total_params * 2 + kv + VLLM_ENGINE_OVERHEAD_GIB * GIB
    return float(min(cap, 0.95 * free_bytes / gpu_total_bytes, need / gpu_total_bytes))


class KVCache(Model):
    """vLLM KV-cache room on one inference engine."""

    bytes_per_token: int
    capacity_gib: float
    tokens: int
    concurrent_sequences: int
