"""Chunked response log-probs against the naive full-vocabulary path (CPU)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from hyperpod_rl.model.logprobs import (
    LogprobInputError,
    naive_response_entropy,
    naive_response_logprobs,
    response_entropy,
    response_logprobs,
)

B, T, H, V = 3, 19, 32, 501


def _inputs(seed: int, dtype: torch.dtype, *, bias: bool = False) -> tuple[torch.Tensor, torch.nn.Linear, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(B, T, H, generator=gen).to(dtype).requires_grad_(True)
    head = torch.nn.Linear(H, V, bias=bias).to(dtype)
    with torch.no_grad():
        head.weight.copy_(torch.randn(V, H, generator=gen) * 0.3)
        if bias:
            head.bias.copy_(torch.randn(V, generator=gen))
    targets = torch.randint(0, V, (B, T), generator=gen)
    mask = torch.rand(B, T, generator=gen) > 0.4
    mask[0, -1] = True  # the last position is a response token in real rollouts
    return hidden, head, targets, mask


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.detach().double() - b.detach().double()).norm() / b.detach().double().norm())


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_fp32_values_and_gradients_match_naive(chunk: int, bias: bool) -> None:
    hidden, head, targets, mask = _inputs(chunk, torch.float32, bias=bias)
    upstream = torch.randn(B, T, generator=torch.Generator().manual_seed(99))

    got = response_logprobs(hidden, head, targets, mask, chunk_tokens=chunk)
    (got * upstream).sum().backward()
    grads_got = [hidden.grad.clone(), head.weight.grad.clone()] + ([head.bias.grad.clone()] if bias else [])
    hidden.grad = None
    head.zero_grad(set_to_none=True)

    ref = naive_response_logprobs(head(hidden), targets, mask)
    (ref * upstream).sum().backward()
    grads_ref = [hidden.grad, head.weight.grad] + ([head.bias.grad] if bias else [])

    assert got.dtype == torch.float32 and got.shape == (B, T)
    assert torch.all(got[~mask] == 0)
    assert torch.all(got[mask] < 0)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    for g, r in zip(grads_got, grads_ref, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)


def test_bf16_within_bf16_tolerance() -> None:
    hidden, head, targets, mask = _inputs(3, torch.bfloat16)
    got = response_logprobs(hidden, head, targets, mask, chunk_tokens=8)
    got.sum().backward()
    g_h, g_w = hidden.grad.clone(), head.weight.grad.clone()
    hidden.grad = None
    head.zero_grad(set_to_none=True)
    # float64 reference on upcast inputs
    ref = naive_response_logprobs(torch.nn.functional.linear(hidden.double(), head.weight.double()), targets, mask)
    ref.sum().backward()
    assert _rel(got[mask], ref[mask]) <= 1e-2
    assert _rel(g_h.float(), hidden.grad.float()) <= 2e-2
    assert _rel(g_w.float(), head.weight.grad.float()) <= 2e-2


def test_temperature_scales_logits() -> None:
    hidden, head, targets, mask = _inputs(4, torch.float32)
    got = response_logprobs(hidden, head, targets, mask, chunk_tokens=5, temperature=0.7)
    got.sum().backward()
    g = hidden.grad.clone()
    hidden.grad = None
    ref = naive_response_logprobs(head(hidden) / 0.7, targets, mask)
    ref.sum().backward()
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g, hidden.grad, rtol=1e-4, atol=1e-5)


def test_bare_weight_tensor_and_generic_module() -> None:
    hidden, head, targets, mask = _inputs(5, torch.float32)
    ref = naive_response_logprobs(head(hidden), targets, mask)
    weight = head.weight.detach().clone().requires_grad_(True)
    from_tensor = response_logprobs(hidden, weight, targets, mask, chunk_tokens=6)
    from_tensor.sum().backward()
    assert weight.grad is not None and weight.grad.abs().sum() > 0
    seq_head = torch.nn.Sequential(head)  # not a plain Linear: the checkpointed fallback
    generic = response_logprobs(hidden, seq_head, targets, mask, chunk_tokens=6)
    torch.testing.assert_close(from_tensor, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(generic, ref, rtol=1e-5, atol=1e-5)
    hidden.grad = None
    generic.sum().backward()
    g_generic = hidden.grad.clone()
    hidden.grad = None
    ref.sum().backward()
    torch.testing.assert_close(g_generic, hidden.grad, rtol=1e-4, atol=1e-5)


def test_entropy_matches_naive_with_gradients() -> None:
    hidden, head, _, mask = _inputs(6, torch.float32)
    got = response_entropy(hidden, head, mask, chunk_tokens=4)
    got.sum().backward()
    g = hidden.grad.clone()
    hidden.grad = None
    ref = naive_response_entropy(head(hidden), mask)
    ref.sum().backward()
    assert torch.all(got[mask] > 0) and torch.all(got[mask] <= torch.log(torch.tensor(float(V))) + 1e-4)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g, hidden.grad, rtol=1e-4, atol=1e-5)


class _LargestTensor(TorchDispatchMode):
    """Records the largest tensor any op produces."""

    def __init__(self) -> None:
        super().__init__()
        self.max_numel = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.max_numel = max(self.max_numel, t.numel())
        return out


def test_never_materialises_full_logits() -> None:
    hidden, head, targets, _ = _inputs(7, torch.float32)
    mask = torch.ones(B, T, dtype=torch.bool)
    chunk = 40  # > H, so the (V, H) weight gradient is smaller than one chunk; < B * T, so it chunks
    with _LargestTensor() as probe:
        out = response_logprobs(hidden, head, targets, mask, chunk_tokens=chunk)
        out.sum().backward()
        response_entropy(hidden, head, mask, chunk_tokens=chunk).sum().backward()
    assert probe.max_numel <= chunk * V
    with _LargestTensor() as probe_naive:
        naive_response_logprobs(head(hidden), targets, mask).sum().backward()
    assert probe_naive.max_numel >= B * T * V


def test_empty_mask_gives_zeros() -> None:
    hidden, head, targets, _ = _inputs(8, torch.float32)
    mask = torch.zeros(B, T, dtype=torch.bool)
    out = response_logprobs(hidden, head, targets, mask)
    assert out.shape == (B, T) and torch.count_nonzero(out) == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mask": torch.ones(B, T + 1, dtype=torch.bool)}, "mask must be"),
        ({"mask": torch.ones(B, T)}, "bool tensor"),
        ({"targets": torch.zeros(B, T, dtype=torch.float32)}, "token ids"),
        ({"chunk_tokens": 0}, "chunk_tokens must be >= 1"),
        ({"temperature": 0.0}, "temperature must be > 0"),
        ({"hidden": torch.zeros(B * T, H)}, r"hidden must be \(B, T, H\)"),
        ({"lm_head": torch.zeros(V, H + 1)}, "hidden size"),
    ],
)
def test_bad_inputs_name_the_argument(kwargs: dict, match: str) -> None:
    hidden, head, targets, mask = _inputs(9, torch.float32)
    args = {"hidden": hidden, "lm_head": head, "targets": targets, "mask": mask} | kwargs
    extra = {k: args.pop(k) for k in ("chunk_tokens", "temperature") if k in args}
    with pytest.raises(LogprobInputError, match=match):
        response_logprobs(args["hidden"], args["lm_head"], args["targets"], args["mask"], **extra)
