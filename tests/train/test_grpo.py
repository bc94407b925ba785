"""GRPO advantages and loss: values checked by hand."""

import torch

from hyperpod_rl.train.grpo import group_advantages, grpo_loss


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
