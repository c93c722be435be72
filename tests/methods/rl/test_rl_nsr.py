"""NSR: plain clipping with the noise off, untouched tokens, Monte Carlo expectation = DGD."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from docket.methods.rl.losses import PolicyLoss, clipped_surrogate
from docket.methods.rl.nsr import dgd_policy_loss, expected_weight, nsr_policy_loss, rescue_band

EPS_LO, EPS_HI = 0.2, 0.28


def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    ratios = torch.tensor(
        [[1.0, 1.2, 1.4, 1.9, 0.5], [0.6, 0.75, 0.9, 1.5, 3.0]], dtype=torch.float64
    )
    adv = torch.tensor([1.5, -0.5], dtype=torch.float64)
    return torch.log(ratios), torch.zeros_like(ratios), adv, torch.ones_like(ratios)


def grads(loss_fn: Callable[..., PolicyLoss], **kwargs: Any) -> tuple[PolicyLoss, torch.Tensor]:
    logp, old, adv, mask = batch()
    logp = logp.clone().requires_grad_(True)
    out = loss_fn(logp, old, adv, mask, eps_low=EPS_LO, eps_high=EPS_HI, **kwargs)
    out.loss.backward()
    assert logp.grad is not None
    return out, logp.grad


def test_noise_off_is_bit_identical_to_clipping_including_gradients() -> None:
    plain, plain_grad = grads(clipped_surrogate)
    off, off_grad = grads(nsr_policy_loss, enabled=False)
    ones, ones_grad = grads(nsr_policy_loss, noise=torch.ones(2, 5, dtype=torch.float64))
    for out, grad in ((off, off_grad), (ones, ones_grad)):
        assert torch.equal(out.loss, plain.loss)
        assert torch.equal(out.per_token, plain.per_token)
        assert torch.equal(grad, plain_grad)
    assert ones.metrics["rescue_frac"] == 0.0


def test_rescue_keeps_scaled_gradient_only_on_clip_active_tokens() -> None:
    noise = torch.full((2, 5), 0.5, dtype=torch.float64)
    plain, plain_grad = grads(clipped_surrogate, aggregation="token_sum")
    out, grad = grads(nsr_policy_loss, noise=noise, aggregation="token_sum")
    # row 0 (A>0): 1.4 -> 0.7 ≤ 1.28 rescued, 1.9 -> 0.95 rescued; 0.5 (A>0, r<1-ε) untouched
    # row 1 (A<0): 0.6 -> 1.2 ≥ 0.8 rescued, 0.75 -> 1.5 rescued; 1.5 and 3.0 (A<0, r>1) untouched
    rescued = torch.tensor([[0, 0, 1, 1, 0], [1, 1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(grad[~rescued], plain_grad[~rescued])
    assert torch.equal(out.per_token[~rescued], plain.per_token[~rescued])
    ratios = torch.exp(batch()[0])
    adv = batch()[2].unsqueeze(-1).expand(2, 5)
    # upper side "scaled": weight u = 0.5 on -r·A; lower side "plain": weight 1
    weight = torch.tensor([[0, 0, 0.5, 0.5, 0], [1, 1, 0, 0, 0]], dtype=torch.float64)
    assert torch.allclose(grad[rescued], (-weight * ratios * adv)[rescued])
    assert out.metrics["rescue_frac"] == pytest.approx(0.4)
    assert out.metrics["clip_frac"] == pytest.approx(0.4)


def test_realised_weights_are_zero_or_the_drawn_u() -> None:
    logp, old, adv, mask = batch()
    noise = torch.rand(2, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    logp = logp.clone().requires_grad_(True)
    out = nsr_policy_loss(logp, old, adv, mask, noise=noise, aggregation="token_sum")
    out.loss.backward()
    assert logp.grad is not None
    ratios = torch.exp(logp.detach())
    upper = (adv.unsqueeze(-1) > 0) & (ratios > 1 + EPS_HI)
    weights = logp.grad[upper] / (-ratios * adv.unsqueeze(-1))[upper]
    for w, u in zip(weights.tolist(), noise[upper].tolist(), strict=True):
        assert w == pytest.approx(0.0) or w == pytest.approx(u)


def test_u_min_makes_the_rescue_boundary_local() -> None:
    low, high = rescue_band(EPS_HI, 0.5)
    assert (low, high) == (1.28, 2.56)
    ratios = torch.tensor([[2.0, 2.6, 4.0]], dtype=torch.float64)
    hits = torch.zeros(3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(200):
        out = nsr_policy_loss(
            torch.log(ratios), torch.zeros_like(ratios), torch.tensor([1.0], dtype=torch.float64),
            torch.ones_like(ratios), u_min_high=0.5, generator=gen, aggregation="token_sum",
        )  # fmt: skip
        hits += (out.per_token != -(1 + EPS_HI)).float()[0]
    assert hits[0] > 0 and hits[1] == 0 and hits[2] == 0


def test_sequence_level_draws_once_per_sequence() -> None:
    ratios = torch.tensor([[1.5, 1.6, 1.4, 1.5], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    logp, adv = torch.log(ratios), torch.tensor([1.0, 1.0], dtype=torch.float64)
    seen: set[float] = set()
    gen = torch.Generator().manual_seed(1)
    for _ in range(50):
        out = nsr_policy_loss(
            logp,
            torch.zeros_like(logp),
            adv,
            torch.ones_like(logp),
            level="sequence",
            generator=gen,
        )
        for row in out.per_token:
            assert torch.all(row == row[0])  # every token of a sequence shares the decision
        seen.add(round(float(out.per_token[0, 0]), 6))
        assert out.per_token[1].tolist() == pytest.approx([-1.0] * 4)  # inside: untouched
    # row 0 (sequence ratio 1.497 > 1.28): clipped (-1.28) or rescued (-u·r, varies per draw)
    assert -1.28 in seen and len(seen) > 5


def test_draws_are_reproducible_with_a_generator() -> None:
    logp, old, adv, mask = batch()
    a = nsr_policy_loss(logp, old, adv, mask, generator=torch.Generator().manual_seed(7))
    b = nsr_policy_loss(logp, old, adv, mask, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a.per_token, b.per_token)


def test_closed_form_weights() -> None:
    r = torch.tensor([1.5, 2.0, 4.0], dtype=torch.float64)
    c = 1 + EPS_HI
    assert expected_weight(r, eps=EPS_HI).tolist() == pytest.approx((c**2 / (2 * r**2)).tolist())
    assert expected_weight(r, eps=EPS_HI, variant="plain").tolist() == pytest.approx(
        (c / r).tolist()
    )
    inside = expected_weight(torch.tensor([1.1], dtype=torch.float64), eps=EPS_HI)
    assert inside.tolist() == [1.0]
    with pytest.raises(ValueError, match="u_min > 0"):
        expected_weight(r, side="low", variant="scaled", u_min=0.0)


@pytest.mark.parametrize(
    ("variant_high", "variant_low", "u_min_high", "u_min_low"),
    [("scaled", "plain", 0.0, 0.0), ("plain", "scaled", 0.3, 0.5)],
)
def test_monte_carlo_expectation_equals_deterministic_decay(
    variant_high: str, variant_low: str, u_min_high: float, u_min_low: float
) -> None:
    """Mean NSR gradient over 20k independent draws = the DGD gradient, within 4 standard
    errors per ratio (ratios on a grid on both sides of the trust region)."""
    draws = 20_000
    upper = torch.tensor([1.3, 1.5, 2.0, 3.0], dtype=torch.float64)
    lower = torch.tensor([0.3, 0.5, 0.7, 0.79], dtype=torch.float64)
    ratios = torch.cat([upper, lower]).expand(draws, 8)
    adv = torch.cat([torch.ones(4), -torch.ones(4)]).double().expand(draws, 8)
    knobs: dict[str, Any] = dict(
        variant_high=variant_high, variant_low=variant_low,
        u_min_high=u_min_high, u_min_low=u_min_low, aggregation="token_sum",
    )  # fmt: skip
    logp = torch.log(ratios).clone().requires_grad_(True)
    nsr = nsr_policy_loss(
        logp, torch.zeros_like(ratios), adv, torch.ones_like(ratios),
        generator=torch.Generator().manual_seed(0), **knobs,
    )  # fmt: skip
    nsr.loss.backward()
    assert logp.grad is not None
    mc_mean, mc_se = logp.grad.mean(0), logp.grad.std(0) / draws**0.5
    single = torch.log(ratios[:1]).clone().requires_grad_(True)
    dgd = dgd_policy_loss(
        single,
        torch.zeros_like(single),
        adv[:1],
        torch.ones_like(single),
        **knobs,
    )
    dgd.loss.backward()
    assert single.grad is not None
    assert torch.all((mc_mean - single.grad[0]).abs() <= 4 * mc_se + 1e-12), (mc_mean, single.grad)
