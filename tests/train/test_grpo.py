"""GRPO advantages and loss: values checked by hand."""

import pytest
import torch

from hyperpod_rl.train.grpo import group_advantages, grpo_loss, is_tied, process_advantages, tied_groups


def test_group_advantages_are_zero_mean_unit_std_per_group():
    returns = torch.tensor([[1.0, 0.0, 0.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
    adv = group_advantages(returns)
    assert torch.allclose(adv.mean(dim=1), torch.zeros(2), atol=1e-6)
    assert torch.allclose(adv[0].std(), torch.tensor(1.0), atol=1e-4)
    assert torch.equal(adv[1], torch.zeros(4))  # equal returns carry no signal
    assert torch.allclose(group_advantages(returns, normalize_std=False)[0], torch.tensor([0.5, -0.5, -0.5, 0.5]))


def test_on_policy_gradient_is_advantage_weighted_logprob_gradient():
    logits = torch.zeros(2, 4, requires_grad=True)
    logp_all = torch.log_softmax(logits, -1)
    logp = torch.stack([logp_all[0, 1], logp_all[1, 2]]).view(2, 1)
    mask = torch.ones(2, 1, dtype=torch.bool)
    adv = torch.tensor([1.0, -1.0])
    terms = grpo_loss(logp, logp.detach(), adv, mask)
    terms.loss.backward()
    # d/dlogits of -(A * logp) / 2 tokens
    expected = torch.zeros(2, 4)
    expected[0] = -(torch.nn.functional.one_hot(torch.tensor(1), 4) - 0.25) * 1.0 / 2
    expected[1] = -(torch.nn.functional.one_hot(torch.tensor(2), 4) - 0.25) * -1.0 / 2
    assert torch.allclose(logits.grad, expected, atol=1e-6)
    assert terms.clip_fraction == 0.0


def test_clipping_stops_the_gradient_beyond_the_trust_region():
    logp = torch.tensor([[0.0]], requires_grad=True)
    old = torch.tensor([[-1.0]])  # ratio e > 1 + eps
    terms = grpo_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 1, dtype=torch.bool), clip_eps=0.2)
    terms.loss.backward()
    assert logp.grad.abs().item() == 0.0
    assert terms.clip_fraction == 1.0


def test_kl_k3_is_zero_at_the_reference_and_positive_elsewhere():
    mask = torch.ones(1, 1, dtype=torch.bool)
    same = grpo_loss(
        torch.tensor([[-1.0]]), torch.tensor([[-1.0]]), torch.tensor([0.0]), mask, ref_logprobs=torch.tensor([[-1.0]]), kl_coef=1.0
    )
    apart = grpo_loss(
        torch.tensor([[-1.0]]), torch.tensor([[-1.0]]), torch.tensor([0.0]), mask, ref_logprobs=torch.tensor([[-2.0]]), kl_coef=1.0
    )
    assert same.kl == 0.0
    assert apart.kl > 0.0


# process_advantages (the quickstart's default estimator, DeepSeekMath §4.1.3), worked by hand.
# Recipe per group: pool every step reward of the group; mean m and sample std s (n - 1 in the
# denominator, torch's default); normalise each reward r -> (r - m) / (s + eps); then a turn's
# advantage is the discounted sum of the normalised rewards from that turn to the episode's end:
# A_t = n_t + gamma * A_{t+1}. eps = 1e-6 shifts the results by ~1e-6 relative only.
PROCESS_TABLE = [
    pytest.param(
        # One group: episode A answered two turns (rewards 0, then 1), episode B one turn (-1).
        # pooled [0, 1, -1]: m = 0; s = sqrt((0 + 1 + 1) / 2) = 1; normalised A = [0, 1], B = [-1].
        # gamma = 1:   A_1 = 1, A_0 = 0 + 1 * 1 = 1;  B_0 = -1.
        [[[0.0, 1.0], [-1.0]]],
        1.0,
        [[[1.0, 1.0], [-1.0]]],
        id="two-episodes-gamma-1",
    ),
    pytest.param(
        # Same rewards, gamma = 0.5 (the quickstart's): A_1 = 1, A_0 = 0 + 0.5 * 1 = 0.5; B_0 = -1.
        [[[0.0, 1.0], [-1.0]]],
        0.5,
        [[[0.5, 1.0], [-1.0]]],
        id="two-episodes-gamma-half",
    ),
    pytest.param(
        # Three episodes: [3], [1, 3], [-1].  pooled [3, 1, 3, -1]: m = 6 / 4 = 1.5;
        # deviations 1.5, -0.5, 1.5, -2.5; squares 2.25 + 0.25 + 2.25 + 6.25 = 11; s = sqrt(11 / 3) = 1.9148542;
        # normalised: 3 -> 1.5 / 1.9148542 = 0.7833495; 1 -> -0.5 / 1.9148542 = -0.2611165; -1 -> -2.5 / 1.9148542 = -1.3055824.
        # gamma = 0.5: [3] -> 0.7833495; [1, 3] -> A_1 = 0.7833495, A_0 = -0.2611165 + 0.5 * 0.7833495 = 0.1305583;
        # [-1] -> -1.3055824.
        [[[3.0], [1.0, 3.0], [-1.0]]],
        0.5,
        [[[0.7833495], [0.1305583, 0.7833495], [-1.3055824]]],
        id="three-episodes-discounted",
    ),
    pytest.param(
        # Two groups are normalised separately. Group 1 as in the first row (gamma 1); group 2: every
        # step reward is 2, so m = 2, s = 0 and every normalised reward is 0 / (0 + eps) = 0: no signal.
        [[[0.0, 1.0], [-1.0]], [[2.0, 2.0], [2.0]]],
        1.0,
        [[[1.0, 1.0], [-1.0]], [[0.0, 0.0], [0.0]]],
        id="groups-are-independent-and-a-flat-group-gets-zero",
    ),
    pytest.param(
        # A single step reward: s is undefined (one value), taken as 0; r - m = 0, so the advantage is 0.
        [[[5.0]]],
        1.0,
        [[[0.0]]],
        id="single-step",
    ),
]


@pytest.mark.parametrize(("step_rewards", "gamma", "expected"), PROCESS_TABLE)
def test_process_advantages_hand_computed(step_rewards, gamma, expected):
    got = process_advantages(step_rewards, gamma=gamma)
    assert [[len(ep) for ep in group] for group in got] == [[len(ep) for ep in group] for group in expected]
    flat_got = [a for group in got for ep in group for a in ep]
    flat_expected = [a for group in expected for ep in group for a in ep]
    assert flat_got == pytest.approx(flat_expected, rel=1e-5, abs=1e-6)


# Issue 14 item 1: tied rewards give exactly zero advantages, for every group size and value.
TIED_VALUES = [1.36, 0.1, 0.3, -7.3, 1e6, 1e-9, 0.0, 1 / 3]


@pytest.mark.parametrize("value", TIED_VALUES)
@pytest.mark.parametrize("size", [2, 3, 5, 8, 16, 64])
def test_tied_rewards_give_exactly_zero_advantages(value, size):
    returns = torch.tensor([[value] * size, [1.0] + [0.0] * (size - 1)])
    adv = group_advantages(returns)
    assert torch.equal(adv[0], torch.zeros(size))  # not ~1e-1 noise from the float32 mean residue
    untouched = returns[1:].float()
    expected = (untouched - untouched.mean(dim=1, keepdim=True)) / (untouched.std(dim=1, keepdim=True) + 1e-6)
    assert torch.equal(adv[1:], expected)  # other groups keep the GRPO formula exactly
    assert torch.equal(group_advantages(returns, normalize_std=False)[0], torch.zeros(size))


def test_the_issue_input_gave_noise_before():
    """The issue's input: float32 mean([1.36] * 8) != 1.36, and the residue / (0 + 1e-6) was +0.1057."""
    returns = torch.tensor([[1.36] * 8])
    residue = returns - returns.mean(dim=1, keepdim=True)
    assert residue.abs().max() > 0  # the residue exists ...
    assert (residue / (returns.std(dim=1, keepdim=True) + 1e-6)).abs().max() > 0.1  # ... and was a full-size advantage
    assert torch.equal(group_advantages(returns), torch.zeros(1, 8))


def test_tie_tolerance_is_relative_to_the_magnitude():
    assert is_tied([1.36, 1.36 * (1 + 1e-8)])
    assert is_tied([1e6, 1e6 + 1e-3])
    assert not is_tied([1.36, 1.37])
    assert not is_tied([0.0, 1e-9])  # tiny rewards are compared relative to themselves
    assert tied_groups(torch.tensor([[0.1 + 0.2, 0.3], [0.0, 1.0]])).tolist() == [True, False]


def test_process_advantages_of_tied_step_rewards_are_exactly_zero():
    out = process_advantages([[[1.36, 1.36], [1.36], [1.36, 1.36, 1.36]], [[1.0], [0.0]]])
    assert out[0] == [[0.0, 0.0], [0.0], [0.0, 0.0, 0.0]]
    assert out[1][0][0] > 0 > out[1][1][0]
