"""GRPO and Stratified GRPO advantages: the properties that define them, exactly."""

from __future__ import annotations

import pytest
import torch

from docket.methods.rl.advantages import (
    grpo_advantages,
    strata_from,
    stratified_advantages,
    stratified_decomposition,
)

# two prompts of six rollouts; every (prompt, stratum) cell has two distinct rewards or more
REWARDS = torch.tensor(
    [1.0, 0.0, 1.0, 0.0, 0.2, 0.6, 3.0, 1.0, 2.0, 5.0, 4.0, 1.0], dtype=torch.float64
)
GROUPS = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
STRATA = torch.tensor([0, 0, 1, 1, 2, 2, 0, 0, 0, 1, 1, 1])


def test_grpo_matches_the_formula_by_hand() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1])
    adv = grpo_advantages(rewards, groups, eps=0.0)
    # group 0: mean 0.5, population std 0.5 -> +-1; group 1 constant -> 0
    assert adv.tolist() == [1.0, -1.0, -1.0, 1.0, 0.0, 0.0]
    sample = grpo_advantages(rewards, groups, eps=0.0, unbiased=True)
    expected = 0.5 / (1 / 3) ** 0.5
    assert sample[:4].tolist() == pytest.approx([expected, -expected, -expected, expected])
    assert grpo_advantages(rewards, groups, scale=False).tolist() == [
        0.5,
        -0.5,
        -0.5,
        0.5,
        0.0,
        0.0,
    ]


def test_grpo_is_zero_mean_unit_variance_per_group() -> None:
    adv = grpo_advantages(REWARDS, GROUPS, eps=0.0).double()
    for g in (0, 1):
        part = adv[GROUPS == g]
        assert float(part.mean()) == pytest.approx(0.0, abs=1e-12)
        assert float(part.var(unbiased=False)) == pytest.approx(1.0, abs=1e-12)


def test_san_is_zero_mean_unit_variance_inside_every_stratum() -> None:
    adv = stratified_advantages(REWARDS, GROUPS, STRATA, alpha=1.0, eps=0.0).double()
    for g in (0, 1):
        for s in (0, 1, 2):
            cell = adv[(GROUPS == g) & (STRATA == s)]
            if cell.numel() == 0:
                continue
            assert float(cell.mean()) == pytest.approx(0.0, abs=1e-12)
            assert float(cell.var(unbiased=False)) == pytest.approx(1.0, abs=1e-12)
    # hence also globally zero mean, unit variance
    assert float(adv.mean()) == pytest.approx(0.0, abs=1e-12)
    assert float(adv.var(unbiased=False)) == pytest.approx(1.0, abs=1e-12)


def test_alpha_zero_is_grpo_and_alpha_blends_linearly() -> None:
    grpo = grpo_advantages(REWARDS, GROUPS)
    assert torch.equal(stratified_advantages(REWARDS, GROUPS, STRATA, alpha=0.0), grpo)
    san = stratified_advantages(REWARDS, GROUPS, STRATA, alpha=1.0)
    blend = stratified_advantages(REWARDS, GROUPS, STRATA, alpha=0.3)
    assert torch.allclose(blend, 0.3 * san + 0.7 * grpo, atol=1e-6)
    with pytest.raises(ValueError, match="alpha"):
        stratified_advantages(REWARDS, GROUPS, STRATA, alpha=1.5)


def test_decomposition_of_the_global_advantage_is_exact() -> None:
    within, between = stratified_decomposition(REWARDS, GROUPS, STRATA)
    group_mean = torch.tensor([REWARDS[GROUPS == g].double().mean() for g in GROUPS.tolist()])
    assert torch.allclose(within + between, REWARDS.double() - group_mean, atol=1e-12)
    # the cross-stratum bias is constant inside a stratum
    for g in (0, 1):
        for s in (0, 1, 2):
            cell = between[(GROUPS == g) & (STRATA == s)]
            if cell.numel():
                assert torch.allclose(cell, cell[0].expand_as(cell))
    # variance gap: mean (R - R̄)^2 - mean (R - R̄_k)^2 = (1/K) Σ n_k (R̄_k - R̄)^2 per group
    for g in (0, 1):
        sel = GROUPS == g
        gap = float(((within + between)[sel] ** 2).mean() - (within[sel] ** 2).mean())
        assert gap == pytest.approx(float((between[sel] ** 2).mean()), abs=1e-12)
        assert gap > 0


def test_one_stratum_san_equals_grpo_and_singletons_get_zero() -> None:
    one = torch.zeros_like(STRATA)
    same = stratified_advantages(REWARDS, GROUPS, one)
    assert torch.allclose(same, grpo_advantages(REWARDS, GROUPS))
    singleton = stratified_advantages(
        torch.tensor([1.0, 0.0, 1.0]), torch.tensor([0, 0, 0]), torch.tensor([0, 1, 1]), eps=0.0
    )
    assert singleton[0].item() == 0.0


def test_affine_invariance_and_no_mixing_across_prompts() -> None:
    base = stratified_advantages(REWARDS, GROUPS, STRATA, eps=0.0)
    scaled = stratified_advantages(3.0 * REWARDS + 7.0, GROUPS, STRATA, eps=0.0)
    assert torch.allclose(base, scaled, atol=1e-12)
    # changing prompt 1's rewards leaves prompt 0's advantages alone
    other = REWARDS.clone()
    other[GROUPS == 1] = torch.tensor([9.0, 0.0, 1.0, 2.0, 8.0, 3.0], dtype=torch.float64)
    unchanged = stratified_advantages(REWARDS, GROUPS, STRATA)[:6]
    assert torch.equal(stratified_advantages(other, GROUPS, STRATA)[:6], unchanged)


def test_strata_from_a_callable() -> None:
    responses = ["search search answer", "answer", "search answer", "answer"]
    strata = strata_from(responses, key=lambda text: text.count("search"))
    assert strata.tolist() == [0, 1, 2, 1]


def test_san_does_not_penalise_a_hard_stratum_uniformly() -> None:
    """GN charges every trajectory of a harder stratum the stratum's low mean; SAN contrasts
    each trajectory only with its own stratum."""
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    strata = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])  # stratum 1 (e.g. 2 tool calls) is harder
    groups = torch.zeros(8, dtype=torch.long)
    grpo = grpo_advantages(rewards, groups, eps=0.0)
    san = stratified_advantages(rewards, groups, strata, eps=0.0)
    # the one success in the hard stratum: GN gives it less credit than an easy success
    assert grpo[6] == grpo[0]
    assert san[6] > san[0]
    # an easy-stratum failure is punished harder by SAN than by GN
    assert san[3] < grpo[3]
