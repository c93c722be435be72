"""Experience replay: FIFO capacity, sampling without removal, B/R uses, uniform ages, positive
up-weighting, and AsymRE's policy improvement on an exact bandit."""

from __future__ import annotations

import pytest
import torch

from docket.methods.rl.configs import ReplayConfig, config_for
from docket.methods.rl.replay import (
    FIFOReplayBuffer,
    asymre_loss,
    cost_per_update,
    expected_uses,
    inclusion_probabilities,
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


def test_a_sampled_batch_is_not_the_last_generated_batch() -> None:
    """N = 256 > B = 64, R = 32 fresh per update (the trainer's defaults): after three pushes the
    64 drawn are neither the 32 just generated nor the whole buffer, and their ages and use
    counts are recorded per draw."""
    buffer: FIFOReplayBuffer[int] = FIFOReplayBuffer(256, seed=0)
    for version in range(3):
        buffer.push(range(32), [0.0] * 32, version)
        drawn = buffer.sample(64, version)
    last = {s.serial for s in buffer.stored() if s.version == 2}
    serials = {d.serial for d in drawn}
    assert len(buffer) == 96 and len(serials) == 64
    assert serials != last and not serials <= last and len(serials - last) > 0
    assert sorted({d.age for d in drawn}) == [0, 1, 2]
    assert all(1 <= d.uses <= 3 for d in drawn)
    assert sum(d.uses for d in drawn) == sum(s.uses for s in buffer.stored() if s.serial in serials)


def _per_item_rate(weight: float, capacity: int, batch: int, positives: int, draws: int) -> tuple:
    buffer: FIFOReplayBuffer[int] = FIFOReplayBuffer(capacity, positive_weight=weight, seed=3)
    buffer.push(range(capacity), [1.0] * positives + [0.0] * (capacity - positives), version=0)
    for _ in range(draws):
        buffer.sample(batch, 0)
    uses = torch.tensor([s.uses for s in buffer.stored()], dtype=torch.float64)
    return float(uses[:positives].mean()) / draws, float(uses[positives:].mean()) / draws


def test_the_positive_weight_sets_the_per_item_draw_ratio() -> None:
    """Weight w, one item per draw: a positive is drawn w times as often as a negative (exact).
    B = 64 of N = 256 without replacement (a quarter positive): the ratio is Rosén's 1.791, not 2,
    and weight 1 gives 1. Tolerance: 4 standard errors of the ratio by the delta method, each rate
    a mean of per-item Bernoulli frequencies (draws within a batch are negatively correlated,
    which only shrinks the error)."""
    for weight, capacity, batch, positives, draws in (
        (2.0, 40, 1, 10, 20_000),
        (2.0, 256, 64, 64, 1_500),
    ):
        pos, neg = _per_item_rate(weight, capacity, batch, positives, draws)
        probs = inclusion_probabilities(
            torch.tensor([weight] * positives + [1.0] * (capacity - positives)), batch
        )
        expected = weight if batch == 1 else float(probs[0] / probs[-1])
        se_pos = (pos * (1 - pos) / (draws * positives)) ** 0.5
        se_neg = (neg * (1 - neg) / (draws * (capacity - positives))) ** 0.5
        se_ratio = (pos / neg) * ((se_pos / pos) ** 2 + (se_neg / neg) ** 2) ** 0.5
        assert abs(pos / neg - expected) < 4 * se_ratio, (batch, pos / neg, expected, se_ratio)
    assert float(probs[0] / probs[-1]) == pytest.approx(1.791, abs=0.001)
    assert float(probs.sum()) == pytest.approx(64.0)
    pos, neg = _per_item_rate(1.0, 256, 64, 64, 1_500)
    assert pos / neg == pytest.approx(1.0, abs=0.03)  # uniform: 64/256 each
    assert pos == pytest.approx(0.25, abs=0.01) and neg == pytest.approx(0.25, abs=0.01)


def test_the_config_refuses_replay_that_cannot_sample() -> None:
    """N <= B would train every update on the whole buffer: refused with both numbers."""
    with pytest.raises(ValueError, match=r"replay_capacity N = 64 must exceed the batch B = .* 64"):
        ReplayConfig(replay_capacity=64).validate()
    with pytest.raises(ValueError, match=r"set replay_capacity > 32, e.g. 128"):
        ReplayConfig(prompts_per_step=4, replay_capacity=16).validate()
    with pytest.raises(ValueError, match=r"80 fresh rollouts per update .* replay_capacity = 72"):
        ReplayConfig(replay_fresh_prompts=10, replay_capacity=72).validate()
    ReplayConfig(replay_capacity=65).validate()  # N = B + 1 samples
    ReplayConfig().validate()  # the default N = 256
    with pytest.raises(
        ValueError, match="setting replay_capacity belongs to variant replay, not grpo"
    ):
        config_for("grpo", replay_capacity=8)  # only replay has a buffer
    with pytest.raises(ValueError, match="replay_loss must be clip or asymre"):
        config_for("replay", replay_loss="ppo")
