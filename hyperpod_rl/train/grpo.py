"""GRPO objective: group-relative advantages and the clipped policy-gradient loss.

Group Relative Policy Optimization (Shao et al. 2024, "DeepSeekMath", arXiv:2402.03300, §4.1):
for each prompt (here: a maze) a group of G episodes is sampled; an episode's advantage is its
return minus the group mean, divided by the group std (SkyRL: ``advantage_estimator=grpo``,
``grpo_norm_by_std``). The loss is PPO's clipped surrogate (Schulman et al. 2017) on every
sampled token, averaged over tokens (SkyRL ``loss_reduction=token_mean``), plus an optional KL
penalty to the reference model with the k3 estimator (Schulman 2020, "Approximating KL
divergence"; SkyRL ``kl_estimator_type=k3``) and an optional entropy bonus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = [
    "TIED_GROUP_METRIC",
    "TIE_RTOL",
    "LossTerms",
    "group_advantages",
    "grpo_loss",
    "is_tied",
    "process_advantages",
    "tied_groups",
]

#: Rewards of a group count as tied (all equal) when their spread (max - min) is at most this
#: fraction of their largest magnitude. A tied group carries no signal, and its advantages are
#: exactly 0: otherwise the float32 residue of the mean (``mean([1.36] * 8) - 1.36`` is
#: about 1e-7) divided by ``std + eps`` becomes a full-size advantage (+0.1057 for every sample).
TIE_RTOL = 1e-6

#: Per-step metric (both backends): the share of the step's groups whose rewards were tied, so
#: they contributed no gradient (0.0 to 1.0).
TIED_GROUP_METRIC = "reward/tied_group_share"


def is_tied(values: Sequence[float] | torch.Tensor, *, rtol: float = TIE_RTOL) -> bool:
    """True when ``values`` are all equal within ``rtol`` of their largest magnitude.

    Compared in float64; an exact tie (spread 0, zeros included) always counts.
    """
    t = torch.as_tensor(values, dtype=torch.float64).reshape(-1)
    if t.numel() == 0:
        return False
    spread = float(t.max() - t.min())
    return spread == 0.0 or spread <= rtol * float(t.abs().max())


def tied_groups(returns: torch.Tensor, *, rtol: float = TIE_RTOL) -> torch.Tensor:
    """(num_groups,) bool: which rows of a (num_groups, group_size) tensor are tied (:func:`is_tied`)."""
    r = returns.double()
    spread = r.max(dim=1).values - r.min(dim=1).values
    return (spread == 0) | (spread <= rtol * r.abs().max(dim=1).values)


def group_advantages(returns: torch.Tensor, *, normalize_std: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """Group-relative advantages.

    Args:
        returns: (num_groups, group_size) float episode returns.
        normalize_std: divide by the group's (unbiased) std.
        eps: added to the std.

    Returns:
        (num_groups, group_size) float32 advantages; exactly 0 in every group whose returns are
        tied (:func:`tied_groups`, whatever the group size and reward value); other groups are
        ``(r - mean) / (std + eps)`` (or ``r - mean``).
    """
    tied = tied_groups(returns)
    returns = returns.float()
    centered = returns - returns.mean(dim=1, keepdim=True)
    if normalize_std and returns.shape[1] > 1:
        centered = centered / (returns.std(dim=1, keepdim=True) + eps)
    return centered.masked_fill(tied.unsqueeze(1), 0.0)


def process_advantages(step_rewards: list[list[list[float]]], *, gamma: float = 1.0, eps: float = 1e-6) -> list[list[list[float]]]:
    """GRPO with process supervision (DeepSeekMath, arXiv:2402.03300, §4.1.3).

    Every step reward is normalised by the mean and std of *all* step rewards of its group;
    the advantage of a step is the (discounted) sum of the normalised rewards from that step on.
    For multi-turn episodes this credits each turn with what followed it, instead of giving
    every turn the episode's one outcome advantage.

    Args:
        step_rewards: ``[group][episode][turn]`` rewards (episodes may differ in length).
        gamma: discount over turns (1.0 as in the paper).
        eps: added to the std.

    Returns:
        Advantages with the same nesting as ``step_rewards``; exactly 0 for every step of a
        group whose step rewards are all tied (:func:`is_tied`).
    """
    out: list[list[list[float]]] = []
    for group in step_rewards:
        flat = torch.tensor([r for ep in group for r in ep], dtype=torch.float64)
        if is_tied(flat):
            out.append([[0.0] * len(ep) for ep in group])
            continue
        mean = float(flat.mean()) if flat.numel() else 0.0
        std = float(flat.std()) if flat.numel() > 1 else 0.0
        episodes = []
        for ep in group:
            norm = [(r - mean) / (std + eps) for r in ep]
            adv, running = [0.0] * len(ep), 0.0
            for t in range(len(ep) - 1, -1, -1):
                running = norm[t] + gamma * running
                adv[t] = running
            episodes.append(adv)
        out.append(episodes)
    return out


@dataclass
class LossTerms:
    """Loss and its parts (scalars). ``loss`` carries gradients; the rest are detached floats."""

    loss: torch.Tensor
    policy_loss: float
    kl: float
    entropy: float
    clip_fraction: float


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps: float = 0.2,
    entropy: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    num_tokens: int | None = None,
    is_weights: torch.Tensor | None = None,
) -> LossTerms:
    """Clipped surrogate + KL (k3) - entropy bonus, token-mean reduced.

    Args:
        logprobs: (B, L) log-probs of sampled tokens under the current policy (with grad).
        old_logprobs: (B, L) log-probs under the policy that sampled them.
        advantages: (B,) per-sample advantage, broadcast over its tokens.
        mask: (B, L) bool, True at sampled tokens.
        clip_eps: PPO ratio clip epsilon.
        entropy: (B, L) per-token entropy (with grad) for the bonus.
        entropy_coef: entropy bonus weight.
        ref_logprobs: (B, L) reference-model log-probs (no grad) for the KL term.
        kl_coef: KL weight; 0 skips it.
        num_tokens: divide by this many tokens instead of ``mask.sum()`` (micro-batching over
            a larger batch).
        is_weights: (B, L) per-token importance weights (no grad) multiplying the policy-gradient
            term, for rollouts sampled by another engine (:func:`truncated_is_weights`); None: 1.

    Returns:
        :class:`LossTerms`.
    """
    m = mask.float()
    denom = float(num_tokens) if num_tokens else max(float(m.sum()), 1.0)
    adv = advantages.float().unsqueeze(-1)
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    pg = -torch.minimum(unclipped, clipped)
    if is_weights is not None:
        pg = pg * is_weights.detach()
    loss = (pg * m).sum() / denom
    kl_val = 0.0
    if ref_logprobs is not None and kl_coef > 0:
        log_r = ref_logprobs - logprobs
        kl = torch.exp(log_r) - log_r - 1.0  # k3, >= 0
        loss = loss + kl_coef * (kl * m).sum() / denom
        kl_val = float((kl.detach() * m).sum() / denom)
    ent_val = 0.0
    if entropy is not None:
        ent_mean = (entropy * m).sum() / denom
        ent_val = float(ent_mean.detach())
        if entropy_coef > 0:
            loss = loss - entropy_coef * ent_mean
    clip_frac = float((((ratio - 1.0).abs() > clip_eps).float() * m).sum().detach() / denom)
    return LossTerms(loss=loss, policy_loss=float((pg.detach() * m).sum() / denom), kl=kl_val, entropy=ent_val, clip_fraction=clip_frac)


@dataclass(frozen=True)
class EngineGap:
    """How far the rollout engine's sampled-token log-probs are from the trainer's, over one batch.

    Attributes:
        weights: (B, L) truncated importance weights ``min(exp(trainer - engine), cap)``, zero outside the mask.
        gap_sum: sum over sampled tokens of ``|trainer - engine|`` (nats).
        gap_max: largest ``|trainer - engine|`` of one token (nats).
        tokens: sampled tokens compared.
        truncated: tokens whose ratio exceeded ``cap`` (their weight was cut to ``cap``).
    """

    weights: torch.Tensor
    gap_sum: float
    gap_max: float
    tokens: int
    truncated: int


def engine_gap(trainer_logprobs: torch.Tensor, engine_logprobs: torch.Tensor, mask: torch.Tensor, *, cap: float) -> EngineGap:
    """Truncated importance weights and the log-prob gap between the trainer and the rollout engine.

    Truncated importance sampling (Yao et al. 2025, "Your Efficient RL Framework Secretly Brings You
    Off-Policy RL Training"; SkyRL and verl call it TIS): the tokens were sampled by the engine's
    copy of the policy (vLLM kernels, bf16), not by the trainer's, so each token's policy-gradient
    term is weighted by ``pi_train / pi_engine``, cut at ``cap`` so that a token the engine found
    unlikely cannot dominate the batch.

    Args:
        trainer_logprobs: (B, L) the trainer's log-probs of the sampled tokens (detached).
        engine_logprobs: (B, L) the engine's log-probs of the same tokens.
        mask: (B, L) bool, True at sampled tokens.
        cap: the truncation bound C >= 1.

    Returns:
        :class:`EngineGap`.
    """
    m = mask.bool()
    delta = (trainer_logprobs.detach().float() - engine_logprobs.float()).masked_fill(~m, 0.0)
    ratio = torch.exp(delta)
    weights = torch.clamp(ratio, max=cap).masked_fill(~m, 0.0)
    gaps = delta.abs()[m]
    return EngineGap(
        weights=weights,
        gap_sum=float(gaps.sum()) if gaps.numel() else 0.0,
        gap_max=float(gaps.max()) if gaps.numel() else 0.0,
        tokens=int(m.sum()),
        truncated=int(((ratio > cap) & m).sum()),
    )
