"""The variational f-divergence bound and the conjugates, exactly, on discrete distributions."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.methods.anomaly.fdiv import (
    DIVERGENCES,
    divergence,
    f_divergence,
    optimal_critic,
    sample_bound,
    variational_bound,
)

WEIGHTS = st.lists(st.floats(0.05, 5.0), min_size=2, max_size=6)


def distribution(weights: list[float]) -> torch.Tensor:
    values = torch.tensor(weights, dtype=torch.float64)
    return values / values.sum()


@settings(max_examples=60)
@given(st.sampled_from(DIVERGENCES), WEIGHTS, st.data())
def test_the_bound_never_exceeds_the_divergence_and_is_tight_at_the_optimal_critic(
    name: str, weights: list[float], data: st.DataObject
) -> None:
    fdiv = divergence(name)
    p = distribution(weights)
    q = distribution(data.draw(st.lists(st.floats(0.05, 5.0), min_size=len(weights),
                                        max_size=len(weights))))  # fmt: skip
    exact = f_divergence(p, q, fdiv)
    raw = torch.tensor(
        data.draw(st.lists(st.floats(-4, 4), min_size=len(weights), max_size=len(weights))),
        dtype=torch.float64,
    )
    critic = fdiv.activation(raw)  # any critic inside the conjugate's domain
    assert float(variational_bound(critic, p, q, fdiv)) <= float(exact) + 1e-12
    best = optimal_critic(p, q, fdiv)
    assert float(variational_bound(best, p, q, fdiv)) == pytest.approx(float(exact), abs=1e-10)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("kl", 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)),
        ("reverse_kl", 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)),
        ("chi2", (0.5 - 0.25) ** 2 / 0.25 + (0.5 - 0.75) ** 2 / 0.75),
        ("tv", 0.25),
        (
            "js",
            0.5 * (0.5 * math.log(0.5 / 0.375) + 0.5 * math.log(0.5 / 0.625))
            + 0.5 * (0.25 * math.log(0.25 / 0.375) + 0.75 * math.log(0.75 / 0.625)),
        ),
    ],
)
def test_each_divergence_on_a_hand_case(name: str, expected: float) -> None:
    p = torch.tensor([0.5, 0.5], dtype=torch.float64)
    q = torch.tensor([0.25, 0.75], dtype=torch.float64)
    assert float(f_divergence(p, q, divergence(name))) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=60)
@given(st.sampled_from(DIVERGENCES), st.floats(0.01, 20.0), st.floats(-5, 5))
def test_fenchel_young_holds_with_equality_at_the_derivative(
    name: str, u: float, raw: float
) -> None:
    fdiv = divergence(name)
    point = torch.tensor([u], dtype=torch.float64)
    t = fdiv.activation(torch.tensor([raw], dtype=torch.float64))
    assert float(fdiv.f(point) + fdiv.conjugate(t)) >= float(point * t) - 1e-12
    slope = fdiv.derivative(point)
    assert float(fdiv.f(point) + fdiv.conjugate(slope)) == pytest.approx(
        float(point * slope), abs=1e-9
    )


def test_outside_its_domain_the_conjugate_is_infinite() -> None:
    assert math.isinf(float(divergence("tv").conjugate(torch.tensor([0.7]))))
    assert math.isinf(float(divergence("reverse_kl").conjugate(torch.tensor([0.1]))))
    assert math.isinf(float(divergence("js").conjugate(torch.tensor([0.5]))))
    with pytest.raises(ValueError, match="accepted: kl, reverse_kl, js, chi2, tv"):
        divergence("hellinger")


def test_the_sample_bound_for_js_is_a_logistic_loss() -> None:
    """For JS: bound = log 2 − ½ E_real softplus(−T) − ½ E_fake softplus(T)."""
    real, fake = torch.tensor([1.0, 2.0]), torch.tensor([-1.0, 0.5])
    softplus = torch.nn.functional.softplus
    expected = math.log(2) - 0.5 * softplus(-real).mean() - 0.5 * softplus(fake).mean()
    assert float(sample_bound(real, fake, divergence("js"))) == pytest.approx(float(expected))
