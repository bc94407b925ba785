"""Response-only, chunked log-probabilities and entropy for the policy update.

The naive way to score a rollout is ``lm_head(hidden)`` over every position,
then a float32 ``log_softmax`` over the whole vocabulary: for Qwen3-VL
(vocabulary 151,936) a batch of 16 x 807 tokens makes 7.3 GiB of float32
logits, plus the same again for the saved softmax in the backward pass, most
of it for prompt and image positions whose log-probs GRPO never uses.

:func:`response_logprobs` instead gathers the hidden states at the masked
(response) positions only and projects them through the output head in chunks
of ``chunk_tokens`` rows. A custom autograd function keeps just the per-token
log-sum-exp (4 bytes a token) for the backward pass and recomputes each
chunk's logits there, so at most one ``(chunk_tokens, V)`` float32 block is
alive at a time. Gradients flow to ``hidden`` and to the output-head weight
(and bias); the result equals the naive path up to rounding.

The idea is the one of fused/chunked linear cross-entropy kernels (Liger
Kernel's ``FusedLinearCrossEntropy``, Wijmans et al. 2024 "Cut Your Losses in
Large-Vocabulary Language Models"); the code here is written from scratch in
plain PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
from torch.utils.checkpoint import checkpoint

from hyperpod_rl.errors import LogprobInputError

__all__ = [
    "LogprobInputError",
    "naive_response_entropy",
    "naive_response_logprobs",
    "response_entropy",
    "response_logprobs",
]


# --------------------------------------------------------------------------- checks


def _check_inputs(hidden: torch.Tensor, targets: torch.Tensor | None, mask: torch.Tensor, *, chunk_tokens: int, temperature: float) -> None:
    if hidden.dim() != 3:
        raise LogprobInputError(
            f"hidden must be (B, T, H), got shape {tuple(hidden.shape)}; pass the final hidden states before the output head"
        )
    batch, seq = hidden.shape[:2]
    if mask.shape != (batch, seq):
        raise LogprobInputError(f"mask must be (B, T) = {(batch, seq)} like hidden, got {tuple(mask.shape)}")
    if mask.dtype != torch.bool:
        raise LogprobInputError(f"mask must be a bool tensor (True at response tokens), got dtype {mask.dtype}")
    if targets is not None:
        if targets.shape != (batch, seq):
            raise LogprobInputError(f"targets must be (B, T) = {(batch, seq)} like hidden, got {tuple(targets.shape)}")
        if targets.dtype not in (torch.int64, torch.int32):
            raise LogprobInputError(f"targets must be token ids (int64), got dtype {targets.dtype}")
    if chunk_tokens < 1:
        raise LogprobInputError(f"chunk_tokens must be >= 1, got {chunk_tokens}")
    if not temperature > 0:
        raise LogprobInputError(f"temperature must be > 0, got {temperature}; use 1.0 for the plain policy distribution")


def _head_params(lm_head: torch.nn.Module | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """Return (weight (V, H), bias (V,) | None) for a plain head, or None for any other module."""
    if isinstance(lm_head, torch.Tensor):
        if lm_head.dim() != 2:
            raise LogprobInputError(f"lm_head weight must be (V, H), got shape {tuple(lm_head.shape)}")
        return lm_head, None
    if type(lm_head) is torch.nn.Linear:
        return lm_head.weight, lm_head.bias
    return None


def _gather_rows(x: torch.Tensor, flat_idx: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, *x.shape[2:]).index_select(0, flat_idx)


def _scatter_rows(values: torch.Tensor, flat_idx: torch.Tensor, batch: int, seq: int) -> torch.Tensor:
    out = values.new_zeros(batch * seq)
    return out.index_copy(0, flat_idx, values).view(batch, seq)


# --------------------------------------------------------------------------- fused log-probs


class _ChunkedLinearLogprob(torch.autograd.Function):
    """log softmax(h W^T + b)[target] / temperature, chunked, recomputing logits in backward."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        h: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        chunk_tokens: int,
        temperature: float,
    ) -> torch.Tensor:
        n = h.shape[0]
        out = torch.empty(n, dtype=torch.float32, device=h.device)
        lse = torch.empty(n, dtype=torch.float32, device=h.device)
        for start in range(0, n, chunk_tokens):
            end = min(start + chunk_tokens, n)
            z = _chunk_logits(h[start:end], weight, bias, temperature)
            lse[start:end] = torch.logsumexp(z, dim=-1)
            out[start:end] = z.gather(1, targets[start:end, None]).squeeze(1) - lse[start:end]
            del z
        ctx.save_for_backward(h, weight, bias, targets, lse)
        ctx.chunk_tokens = chunk_tokens
        ctx.temperature = temperature
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        h, weight, bias, targets, lse = ctx.saved_tensors
        chunk, temperature = ctx.chunk_tokens, ctx.temperature
        need_h, need_w, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1], bias is not None and ctx.needs_input_grad[2]
        grad_h = torch.empty_like(h) if need_h else None
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_w else None
        grad_b = torch.zeros(weight.shape[0], dtype=torch.float32, device=weight.device) if need_b else None
        grad_out = grad_out.float()
        n = h.shape[0]
        for start in range(0, n, chunk):
            end = min(start + chunk, n)
            z = _chunk_logits(h[start:end], weight, bias, temperature)
            go = grad_out[start:end]
            # d/dz [z_t - lse(z)] = onehot(t) - softmax(z); times upstream grad, times 1/T for the scaled logits.
            g = torch.exp_(z.sub_(lse[start:end, None])).mul_(-go[:, None])
            rows = torch.arange(end - start, device=g.device)
            g[rows, targets[start:end]] += go
            if temperature != 1.0:
                g.div_(temperature)
            if grad_b is not None:
                grad_b += g.sum(0)
            g_low = g.to(h.dtype)
            del z, g
            if grad_h is not None:
                grad_h[start:end] = g_low @ weight
            if grad_w is not None:
                grad_w += (g_low.t() @ h[start:end]).float()
        return (
            grad_h,
            grad_w.to(weight.dtype) if grad_w is not None else None,
            grad_b.to(bias.dtype) if grad_b is not None else None,
            None,
            None,
            None,
        )


def _chunk_logits(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, temperature: float) -> torch.Tensor:
    """(n, H) x (V, H) -> (n, V) float32 logits / temperature, the matmul in the input dtype like the naive head."""
    z = torch.nn.functional.linear(h, weight, bias).float()
    if temperature != 1.0:
        z.div_(temperature)
    return z


def _module_logprob_chunk(head: torch.nn.Module, temperature: float) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def run(h: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        z = head(h).float() / temperature
        return z.gather(1, tgt[:, None]).squeeze(1) - torch.logsumexp(z, dim=-1)

    return run


def response_logprobs(
    hidden: torch.Tensor,
    lm_head: torch.nn.Module | torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    *,
    chunk_tokens: int = 1024,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Log-probabilities of the target tokens at response positions, without full logits.

    Args:
        hidden: (B, T, H) final hidden states (after the last norm) at the positions
            that predict ``targets``, i.e. already shifted by one against the input ids.
        lm_head: the output head: an ``nn.Linear`` (weight (V, H), optional bias), a
            bare weight tensor (V, H), or any module mapping (n, H) -> (n, V) (run in
            gradient-checkpointed chunks; slower but still never holds (B, T, V)).
        targets: (B, T) int64 token ids whose log-probs are wanted.
        mask: (B, T) bool, True at response tokens; other positions are not projected.
        chunk_tokens: rows projected at a time; peak extra memory is about
            ``chunk_tokens * V * 12`` bytes (float32 logits plus their gradient).
        temperature: logits are divided by this before the softmax (the sampling
            temperature of the rollout, as SkyRL and vLLM apply it).

    Returns:
        (B, T) float32: ``log p(targets[b, t])`` where ``mask`` is True, 0.0 elsewhere.
        Differentiable with respect to ``hidden`` and the head's weight and bias.

    Raises:
        LogprobInputError: shapes or dtypes disagree, ``chunk_tokens < 1`` or
            ``temperature <= 0``.
    """
    _check_inputs(hidden, targets, mask, chunk_tokens=chunk_tokens, temperature=temperature)
    batch, seq = mask.shape
    flat_idx = mask.reshape(-1).nonzero().squeeze(1)
    h = _gather_rows(hidden, flat_idx)
    tgt = targets.reshape(-1).index_select(0, flat_idx).long()
    params = _head_params(lm_head)
    if params is not None:
        weight, bias = params
        if weight.shape[1] != hidden.shape[-1]:
            raise LogprobInputError(f"lm_head weight is (V, {weight.shape[1]}) but hidden size is {hidden.shape[-1]}")
        if h.dtype != weight.dtype:
            h = h.to(weight.dtype)
        values = _ChunkedLinearLogprob.apply(h, weight, bias, tgt, chunk_tokens, float(temperature))
    else:
        run = _module_logprob_chunk(cast(torch.nn.Module, lm_head), float(temperature))
        parts = []
        for start in range(0, h.shape[0], chunk_tokens):
            hc, tc = h[start : start + chunk_tokens], tgt[start : start + chunk_tokens]
            parts.append(checkpoint(run, hc, tc, use_reentrant=False) if torch.is_grad_enabled() else run(hc, tc))
        values = torch.cat(parts) if parts else h.new_zeros(0, dtype=torch.float32)
    return _scatter_rows(values, flat_idx, batch, seq)


# --------------------------------------------------------------------------- entropy


def _entropy_chunk(head: torch.nn.Module | torch.Tensor, temperature: float) -> Callable[[torch.Tensor], torch.Tensor]:
    params = _head_params(head)

    def run(h: torch.Tensor) -> torch.Tensor:
        if params is not None:
            z = _chunk_logits(h.to(params[0].dtype), params[0], params[1], 1.0) / temperature
        else:
            z = head(h).float() / temperature  # type: ignore[operator]
        logp = torch.log_softmax(z, dim=-1)
        return -(logp.exp() * logp).sum(-1)

    return run


def response_entropy(
    hidden: torch.Tensor,
    lm_head: torch.nn.Module | torch.Tensor,
    mask: torch.Tensor,
    *,
    chunk_tokens: int = 1024,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Entropy (nats) of the policy's next-token distribution at response positions, chunked.

    Args:
        hidden: (B, T, H) final hidden states, as for :func:`response_logprobs`.
        lm_head: output head, as for :func:`response_logprobs`.
        mask: (B, T) bool, True at response tokens.
        chunk_tokens: rows projected at a time.
        temperature: logits are divided by this before the softmax.

    Returns:
        (B, T) float32 entropy ``-sum_v p_v log p_v`` at masked positions, 0.0 elsewhere.
        Differentiable (each chunk is gradient-checkpointed) when grad is enabled.

    Raises:
        LogprobInputError: as :func:`response_logprobs`.
    """
    _check_inputs(hidden, None, mask, chunk_tokens=chunk_tokens, temperature=temperature)
    batch, seq = mask.shape
    flat_idx = mask.reshape(-1).nonzero().squeeze(1)
    h = _gather_rows(hidden, flat_idx)
    run = _entropy_chunk(lm_head, float(temperature))
    needs_grad = torch.is_grad_enabled() and (h.requires_grad or any(p.requires_grad for p in _params_of(lm_head)))
    parts = []
    for start in range(0, h.shape[0], chunk_tokens):
        hc = h[start : start + chunk_tokens]
        parts.append(checkpoint(run, hc, use_reentrant=False) if needs_grad else run(hc))
    values = torch.cat(parts) if parts else h.new_zeros(0, dtype=torch.float32)
    return _scatter_rows(values, flat_idx, batch, seq)


def _params_of(head: torch.nn.Module | torch.Tensor) -> list[torch.Tensor]:
    return [head] if isinstance(head, torch.Tensor) else list(head.parameters())


# --------------------------------------------------------------------------- naive baselines


def naive_response_logprobs(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Baseline: full-vocabulary float32 ``log_softmax`` over every position, then gather.

    Args:
        logits: (B, T, V) logits (any float dtype) at the positions predicting ``targets``.
        targets: (B, T) int64 token ids.
        mask: (B, T) bool, True at response tokens.

    Returns:
        (B, T) float32 log-probs at masked positions, 0.0 elsewhere.

    Raises:
        LogprobInputError: shapes disagree.
    """
    if logits.dim() != 3:
        raise LogprobInputError(f"logits must be (B, T, V), got shape {tuple(logits.shape)}")
    _check_inputs(logits, targets, mask, chunk_tokens=1, temperature=1.0)
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    return torch.where(mask, logp, torch.zeros_like(logp))


def naive_response_entropy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Baseline entropy from full (B, T, V) logits in float32; (B, T), 0.0 off the mask.

    Raises:
        LogprobInputError: shapes disagree.
    """
    if logits.dim() != 3:
        raise LogprobInputError(f"logits must be (B, T, V), got shape {tuple(logits.shape)}")
    _check_inputs(logits, None, mask, chunk_tokens=1, temperature=1.0)
    logp = torch.log_softmax(logits.float(), dim=-1)
    ent = -(logp.exp() * logp).sum(-1)
    return torch.where(mask, ent, torch.zeros_like(ent))
