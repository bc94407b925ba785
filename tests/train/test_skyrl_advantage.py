"""Issue 14 item 1 on the SkyRL backend: the tie-safe estimator, through SkyRL 0.3.0's own registry."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from skyrl.backends.skyrl_train.utils.ppo_utils import (
    AdvantageEstimatorRegistry,
    compute_advantages_and_returns,
    compute_grpo_outcome_advantage,
)

from hyperpod_rl.config.skyrl import TIE_SAFE_ESTIMATOR
from hyperpod_rl.train.skyrl_advantage import last_tied_share, register_tie_safe_estimator, tied_rows


def _batch(tied_value: float, size: int):
    """Two groups of ``size``: one tied at ``tied_value``, one with mixed rewards (SkyRL layout)."""
    rewards = torch.zeros(2 * size, 3)
    rewards[:size, -1] = tied_value
    rewards[size:, -1] = torch.tensor([float(i % 2) for i in range(size)])
    return rewards, torch.ones(2 * size, 3), np.array(["tied"] * size + ["mixed"] * size)


def test_skyrl_grpo_has_the_residue():
    """SkyRL 0.3.0's own estimator turns the issue's tied group into +0.1057 advantages."""
    rewards, mask, index = _batch(1.36, 8)
    adv, _ = compute_grpo_outcome_advantage(rewards.clone(), mask, index)
    assert adv[:8].abs().min() > 0.1


@pytest.mark.parametrize("value", [1.36, 0.1, -2.5, 1e6, 0.0])
@pytest.mark.parametrize("size", [2, 5, 8, 16])
def test_registered_estimator_zeroes_tied_groups_only(value, size):
    assert register_tie_safe_estimator() == TIE_SAFE_ESTIMATOR
    assert TIE_SAFE_ESTIMATOR in AdvantageEstimatorRegistry.list_available()
    register_tie_safe_estimator()  # idempotent
    rewards, mask, index = _batch(value, size)
    adv, ret = compute_advantages_and_returns(rewards.clone(), mask, index, TIE_SAFE_ESTIMATOR, config=None)
    assert torch.equal(adv[:size], torch.zeros(size, 3)) and torch.equal(ret[:size], torch.zeros(size, 3))
    skyrl_adv, _ = compute_grpo_outcome_advantage(rewards.clone(), mask, index)
    assert torch.equal(adv[size:], skyrl_adv[size:])  # the other group keeps SkyRL's values
    assert last_tied_share() == 0.5


def test_tied_rows_share_counts_groups_of_two_or_more():
    mask, share = tied_rows(torch.tensor([1.0, 1.0, 0.0, 1.0, 5.0]), ["a", "a", "b", "b", "c"])
    assert mask.tolist() == [True, True, False, False, False] and share == 0.5
