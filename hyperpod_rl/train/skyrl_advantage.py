"""The tie-safe GRPO advantage estimator of the SkyRL backend, registered in SkyRL's registry.

SkyRL 0.3.0's ``grpo`` estimator (``skyrl.backends.skyrl_train.utils.ppo_utils.compute_grpo_outcome_advantage``)
computes ``(score - mean) / (std + epsilon)`` per group in float32. For a group whose rewards are
all equal the float32 mean is not exactly the value (``mean([1.36] * 8) - 1.36`` is about 1e-7),
and dividing that residue by ``0 + 1e-6`` gives every sample a full-size advantage (+0.1057).

:func:`tie_safe_grpo_advantage` calls SkyRL's estimator and sets the advantages (and returns) of
every tied group (:func:`hyperpod_rl.train.grpo.is_tied`, groups of two or more) to exactly 0;
other groups keep SkyRL's values. :func:`register_tie_safe_estimator` registers it under
:data:`~hyperpod_rl.config.skyrl.TIE_SAFE_ESTIMATOR` through SkyRL's ``AdvantageEstimatorRegistry``
(the extension point SkyRL documents for custom estimators); the run's overrides select it with
``trainer.algorithm.advantage_estimator``. The share of tied groups of the last call is kept for
the step's metrics (:data:`~hyperpod_rl.train.grpo.TIED_GROUP_METRIC`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import torch

from hyperpod_rl.config.skyrl import TIE_SAFE_ESTIMATOR
from hyperpod_rl.train.grpo import is_tied

__all__ = ["last_tied_share", "register_tie_safe_estimator", "tie_safe_grpo_advantage", "tied_rows"]

_last_share: list[float] = []


def tied_rows(scores: torch.Tensor, index: Sequence[Any]) -> tuple[torch.Tensor, float]:
    """Which samples belong to a tied group, and the share of tied groups.

    Args:
        scores: (B,) per-sample returns.
        index: B group ids (SkyRL's ``uids``: one per prompt).

    Returns:
        ``((B,) bool, share)``: True for samples of a tied group of two or more samples; the
        share of groups (of two or more) that are tied, 0.0 when there is none.
    """
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, uid in enumerate(index):
        groups[uid].append(i)
    mask = torch.zeros(len(index), dtype=torch.bool)
    sized = [rows for rows in groups.values() if len(rows) > 1]
    tied = 0
    for rows in sized:
        if is_tied(scores[rows]):
            mask[rows] = True
            tied += 1
    return mask, (tied / len(sized) if sized else 0.0)


def tie_safe_grpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Any],
    epsilon: float = 1e-6,
    grpo_norm_by_std: bool = True,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """SkyRL's GRPO outcome advantages with tied groups set to exactly 0.

    Args:
        token_level_rewards: (B, T) rewards (SkyRL puts a response's reward on its last token).
        response_mask: (B, T) response-token mask.
        index: B group ids.
        epsilon: added to the std (SkyRL's default).
        grpo_norm_by_std: divide by the group std (``trainer.algorithm.grpo_norm_by_std``).
        **kwargs: the rest of SkyRL's estimator call (``config``, ``values``, ``gamma``, ...).

    Returns:
        ``(advantages, returns)``, each (B, T), as SkyRL's estimator returns them.
    """
    from skyrl.backends.skyrl_train.utils.ppo_utils import compute_grpo_outcome_advantage

    scores = token_level_rewards.sum(dim=-1).detach().cpu()
    advantages, returns = compute_grpo_outcome_advantage(
        token_level_rewards=token_level_rewards,
        response_mask=response_mask,
        index=index,
        epsilon=epsilon,
        grpo_norm_by_std=grpo_norm_by_std,
    )
    mask, share = tied_rows(scores, list(index))
    rows = mask.to(advantages.device).unsqueeze(-1)
    advantages = advantages.masked_fill(rows, 0.0)
    returns = returns.masked_fill(rows, 0.0)
    _last_share[:] = [share]
    return advantages, returns


def last_tied_share() -> float | None:
    """The tied-group share of the last :func:`tie_safe_grpo_advantage` call in this process."""
    return _last_share[0] if _last_share else None


def register_tie_safe_estimator() -> str:
    """Register :func:`tie_safe_grpo_advantage` in SkyRL's ``AdvantageEstimatorRegistry`` (idempotent).

    SkyRL's registry is per process and, once Ray is up, mirrored in a named registry actor, so
    this runs in the job's driver (before ``validate_cfg``) and again in the trainer task.

    Returns:
        The estimator name (:data:`~hyperpod_rl.config.skyrl.TIE_SAFE_ESTIMATOR`).
    """
    from skyrl.backends.skyrl_train.utils.ppo_utils import AdvantageEstimatorRegistry

    if TIE_SAFE_ESTIMATOR not in AdvantageEstimatorRegistry.list_available():
        try:
            AdvantageEstimatorRegistry.register(TIE_SAFE_ESTIMATOR, tie_safe_grpo_advantage)
        except ValueError:  # registered meanwhile (another process through the registry actor)
            pass
    return TIE_SAFE_ESTIMATOR
