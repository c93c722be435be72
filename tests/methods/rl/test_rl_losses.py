"""The clipped surrogate: exact values, asymmetric ε, clip-active tokens, levels, aggregation."""

from __future__ import annotations

import math

import pytest
import torch

from docket.methods.rl.losses import aggregate, clipped_surrogate, reinforce_loss

# ratios 1.0, 1.25, 1.5, 0.7, 0.9 on one sequence
RATIOS = torch.tensor([[1.0, 1.25, 1.5, 0.7, 0.9]], dtype=torch.float64)
OLD = torch.zeros_like(RATIOS)
MASK = torch.ones_like(RATIOS)


def logp_for(ratios: torch.Tensor) -> torch.Tensor:
    return torch.log(ratios).clone().requires_grad_(True)


def test_token_level_values_with_asymmetric_epsilon() -> None:
    out = clipped_surrogate(
        logp_for(RATIOS), OLD, torch.tensor([2.0], dtype=torch.float64), MASK,
        eps_low=0.2, eps_high=0.28, aggregation="token_sum",
    )  # fmt: skip
    # A > 0: -min(r A, clip(r) A): 1.0 -> -2, 1.25 -> -2.5, 1.5 -> clip 1.28 -> -2.56,
    # 0.7 -> r A = 1.4 < clip(0.8) A: -1.4, 0.9 -> -1.8
    assert out.per_token.tolist()[0] == pytest.approx([-2.0, -2.5, -2.56, -1.4, -1.8])
    assert out.loss.item() == pytest.approx(-10.26)
    # symmetric 0.2 clips 1.25 as well
    sym = clipped_surrogate(logp_for(RATIOS), OLD, torch.tensor([2.0], dtype=torch.float64), MASK)
    assert sym.per_token[0, 1].item() == pytest.approx(-2.4)


def test_clip_active_tokens_have_no_gradient_and_others_have_r_a() -> None:
    logp = logp_for(RATIOS)
    adv = torch.tensor([-1.0], dtype=torch.float64)
    out = clipped_surrogate(
        logp, OLD, adv, MASK, eps_low=0.2, eps_high=0.28, aggregation="token_sum"
    )
    out.loss.backward()
    assert logp.grad is not None
    # A < 0: clip-active where r < 0.8 (0.7); others gradient of -r·A w.r.t. log r = r (A = -1)
    assert logp.grad.tolist()[0] == pytest.approx([1.0, 1.25, 1.5, 0.0, 0.9])
    assert out.metrics["clip_frac"] == pytest.approx(0.2)
    assert out.metrics["clip_frac_low"] == pytest.approx(0.2)
    assert out.metrics["clip_frac_high"] == 0.0


def test_sequence_level_uses_one_geometric_mean_ratio() -> None:
    logp = logp_for(RATIOS)
    adv = torch.tensor([1.0], dtype=torch.float64)
    out = clipped_surrogate(logp, OLD, adv, MASK, level="sequence", aggregation="token_sum")
    seq_ratio = math.exp(float(torch.log(RATIOS).mean()))
    assert seq_ratio < 1.2  # inside the trust region: every token carries -s·A
    assert out.per_token.tolist()[0] == pytest.approx([-seq_ratio] * 5)
    out.loss.backward()
    assert logp.grad is not None
    # d/d logp_t of -5·exp(mean log r) = -exp(mean)·(5/5) for every token
    assert logp.grad.tolist()[0] == pytest.approx([-seq_ratio] * 5)


def test_per_sequence_epsilon_equals_the_float_when_constant() -> None:
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    ratios = torch.cat([RATIOS, RATIOS])
    const = clipped_surrogate(
        logp_for(ratios), torch.zeros_like(ratios), adv, torch.ones_like(ratios), eps_low=0.1
    )
    tensor = clipped_surrogate(
        logp_for(ratios), torch.zeros_like(ratios), adv, torch.ones_like(ratios),
        eps_low=torch.tensor([0.1, 0.1], dtype=torch.float64),
    )  # fmt: skip
    assert torch.equal(const.per_token, tensor.per_token)
    wide = clipped_surrogate(
        logp_for(ratios), torch.zeros_like(ratios), adv, torch.ones_like(ratios),
        eps_low=torch.tensor([0.1, 0.5], dtype=torch.float64),
    )  # fmt: skip
    # row 0 unchanged, row 1 (A<0) with ε=0.5: r=0.7 no longer clipped
    assert torch.equal(wide.per_token[0], const.per_token[0])
    assert wide.per_token[1, 3].item() == pytest.approx(0.7)


def test_aggregations_by_hand() -> None:
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert float(aggregate(loss, mask, "token_mean")) == pytest.approx(10 / 4)
    assert float(aggregate(loss, mask, "seq_mean_token_mean")) == pytest.approx((2 + 4) / 2)
    assert float(aggregate(loss, mask, "seq_mean_token_sum_norm", horizon=5)) == pytest.approx(
        10 / 10
    )
    assert float(aggregate(loss, mask, "token_sum")) == 10.0
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate(loss, mask, "mean")


def test_reinforce_weights_log_likelihood_without_ratio() -> None:
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.5]], requires_grad=True)
    out = reinforce_loss(logp, torch.tensor([1.0, -2.0]), torch.ones(2, 2))
    # seq means: -1.5 and -0.5 -> -(1·-1.5) and -(-2·-0.5) -> 1.5, -1.0 -> mean 0.25
    assert out.loss.item() == pytest.approx(0.25)
