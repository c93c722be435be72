"""Experience replay: FIFO capacity, sampling without removal, B/R uses, uniform ages, positive
up-weighting, and AsymRE's policy improvement on an exact bandit."""

from __future__ import annotations

import pytest
import torch

from docket.methods.rl.replay import (
    FIFOReplayBuffer,
    asymre_loss,
    cost_per_update,
    expected_uses,
    staleness_horizon,
)


def test_fifo_evicts_the_oldest_beyond_capacity() -> None:
    buffer: FIFOReplayBuffer[str] = FIFOReplayBuffer(3)
    buffer.push(["a", "b"], [0, 1], version=0)
    buffer.push(["c", "d"], [0, 0], version=1)
    assert [s.item for s in buffer.stored()] == ["b", "c", "d"]
    assert [s.item for s in buffer.evicted] == ["a"]
    buffer.push(["e", "f", "g"], [1, 1, 1], version=2)
    assert [s.item for s in buffer.stored()] == ["e", "f", "g"]
    with pytest.raises(ValueError, match="capacity"):
        FIFOReplayBuffer(0)


def test_sampling_does_not_remove_or_change_items() -> None:
    buffer: FIFOReplayBuffer[int] = FIFOReplayBuffer(10, seed=1)
    buffer.push(range(6), [0.0] * 6, version=4)
    before = [(s.item, s.reward, s.version, s.serial) for s in buffer.stored()]
    drawn = buffer.sample(4, version=6)
    assert len(drawn) == 4 and len({d.serial for d in drawn}) == 4  # distinct within a batch
    assert all(d.age == 2 for d in drawn)
    assert [(s.item, s.reward, s.version, s.serial) for s in buffer.stored()] == before
    assert sum(s.uses for s in buffer.stored()) == 4
    with pytest.raises(ValueError, match="empty"):
        FIFOReplayBuffer[int](2).sample(1, 0)


def test_steady_state_uses_are_b_over_r_and_ages_uniform() -> None:
    """N = 32, R = 8 fresh per update, B = 16 drawn: each rollout is used B/R = 2 times in
    expectation and drawn ages are uniform over N/R = 4 updates (Monte Carlo, 3 standard errors)."""
    capacity, fresh, batch, updates = 32, 8, 16, 3000
    buffer: FIFOReplayBuffer[int] = FIFOReplayBuffer(capacity, seed=0)
    ages = torch.zeros(8)
    for version in range(updates):
        buffer.push(range(fresh), [0.0] * fresh, version)
        for drawn in buffer.sample(batch, version):
            ages[drawn.age] += 1
    retired = [s.uses for s in buffer.evicted if s.version >= 10]  # past the warm-up
    uses = torch.tensor(retired, dtype=torch.float64)
    assert expected_uses(batch, fresh) == 2.0 and staleness_horizon(capacity, fresh) == 4.0
    assert abs(float(uses.mean()) - 2.0) < 3 * float(uses.std()) / len(uses) ** 0.5
    share = ages[:4] / ages.sum()
    assert ages[4:].sum() == 0
    assert torch.allclose(share, torch.full((4,), 0.25, dtype=share.dtype), atol=0.01)


def test_positive_up_weighting_draws_positives_with_the_set_probability() -> None:
    buffer: FIFOReplayBuffer[int] = FIFOReplayBuffer(10, positive_weight=3.0, seed=2)
    buffer.push(range(10), [1.0, 1.0] + [0.0] * 8, version=0)  # 2 positives, 8 negatives
    draws = 20_000
    positives = sum(buffer.sample(1, 0)[0].reward > 0.5 for _ in range(draws))
    expected = 3 * 2 / (3 * 2 + 8)  # 0.4286
    assert abs(positives / draws - expected) < 3 * (expected * (1 - expected) / draws) ** 0.5


def test_cost_accounting() -> None:
    assert cost_per_update(5.28) == pytest.approx(6.28)
    assert cost_per_update(5.28, workers=5, trainers=3) == pytest.approx(1 + 5 / 3)


def test_asymre_improves_on_the_behaviour_policy_of_an_exact_bandit() -> None:
    """5 arms, behaviour μ, rewards r; with V below every reward the expected AsymRE objective
    Σ μ(y)(r(y) - V) log π(y) peaks at π* ∝ μ(r - V), whose expected reward exceeds μ's.
    Gradient ascent on the exact expected loss (one row per arm, weighted by μ) reaches it."""
    mu = torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05], dtype=torch.float64)
    r = torch.tensor([0.0, 0.2, 0.5, 0.9, 1.0], dtype=torch.float64)
    baseline = -0.05  # V < min r: every weight positive
    target = mu * (r - baseline) / (mu * (r - baseline)).sum()
    theta = torch.log(mu).clone().requires_grad_(True)
    opt = torch.optim.SGD([theta], lr=20.0)
    arms = torch.arange(5)
    for _ in range(400):
        opt.zero_grad()
        logp = torch.log_softmax(theta, -1)[arms].unsqueeze(-1)
        out = asymre_loss(logp, torch.ones(5, 1), r, baseline=baseline, aggregation="token_sum")
        # the batch holds each arm once: weight its loss by μ to get the exact expectation
        (out.per_token.squeeze(-1) * mu).sum().backward()
        opt.step()
    policy = torch.softmax(theta.detach(), -1)
    assert torch.allclose(policy, target, atol=1e-4)
    assert float((policy * r).sum()) > float((mu * r).sum())
    # V defaults to the batch mean minus the offset
    out = asymre_loss(torch.zeros(5, 1), torch.ones(5, 1), r, offset=0.1)
    assert out.metrics["asymre_baseline"] == pytest.approx(float(r.mean()) - 0.1)
