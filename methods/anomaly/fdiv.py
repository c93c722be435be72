"""f-divergences with their convex conjugates, as the variational (f-GAN) bound needs them.

D_f(P‖Q) = E_Q[f(p/q)] for a convex f with f(1) = 0. Its Fenchel conjugate f* gives, for any
critic T, the lower bound (Nguyen, Wainwright & Jordan 2010; Nowozin et al. 2016)

    D_f(P‖Q) ≥ E_P[T(x)] − E_Q[f*(T(x))],

tight at T*(x) = f'(p(x)/q(x)). Fenchel–Young: f(u) + f*(t) ≥ u·t, with equality exactly when
t = f'(u) (t ∈ ∂f(u) for the non-smooth TV). `activation` maps a real number into the domain of
f* (the f-GAN output activation), so a network's raw output is always a valid critic.

- kl: f(u) = u log u; f*(t) = exp(t − 1); f'(u) = 1 + log u; activation v.
- reverse_kl: f(u) = −log u; f*(t) = −1 − log(−t) for t < 0; f'(u) = −1/u; activation −exp(−v).
- js: f(u) = ½[u log u − (u+1) log((u+1)/2)] (so D_f is the Jensen–Shannon divergence);
  f*(t) = −½ log(2 − e^{2t}) for t < ½ log 2; f'(u) = ½ log(2u/(u+1));
  activation ½(log 2 − softplus(−v)).
- chi2 (Pearson): f(u) = (u − 1)²; f*(t) = t²/4 + t; f'(u) = 2(u − 1); activation v.
- tv: f(u) = ½|u − 1|; f*(t) = t for |t| ≤ ½; f'(u) = ½ sign(u − 1); activation ½ tanh(v).

All functions take and return torch tensors (any float dtype); outside its domain f* is +inf.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Tensor = Any  # torch.Tensor; torch is imported lazily


@dataclass(frozen=True)
class FDivergence:
    """A generator f with its conjugate, derivative and critic activation."""

    name: str
    f: Callable[[Tensor], Tensor]
    conjugate: Callable[[Tensor], Tensor]
    derivative: Callable[[Tensor], Tensor]
    activation: Callable[[Tensor], Tensor]


def _torch() -> Any:
    import torch

    return torch


def _kl() -> FDivergence:
    t = _torch()
    return FDivergence(
        "kl",
        f=lambda u: u * t.log(u),
        conjugate=lambda s: t.exp(s - 1),
        derivative=lambda u: 1 + t.log(u),
        activation=lambda v: v,
    )


def _reverse_kl() -> FDivergence:
    t = _torch()

    def conjugate(s: Tensor) -> Tensor:
        inside = s < 0
        safe = t.where(inside, s, -t.ones_like(s))
        return t.where(inside, -1 - t.log(-safe), t.full_like(s, math.inf))

    return FDivergence(
        "reverse_kl",
        f=lambda u: -t.log(u),
        conjugate=conjugate,
        derivative=lambda u: -1 / u,
        activation=lambda v: -t.exp(-v),
    )


def _js() -> FDivergence:
    t = _torch()
    edge = 0.5 * math.log(2)

    def conjugate(s: Tensor) -> Tensor:
        inside = s < edge
        safe = t.where(inside, s, t.zeros_like(s))
        return t.where(inside, -0.5 * t.log(2 - t.exp(2 * safe)), t.full_like(s, math.inf))

    return FDivergence(
        "js",
        f=lambda u: 0.5 * (u * t.log(u) - (u + 1) * t.log((u + 1) / 2)),
        conjugate=conjugate,
        derivative=lambda u: 0.5 * t.log(2 * u / (u + 1)),
        activation=lambda v: 0.5 * (math.log(2) - t.nn.functional.softplus(-v)),
    )


def _chi2() -> FDivergence:
    return FDivergence(
        "chi2",
        f=lambda u: (u - 1) ** 2,
        conjugate=lambda s: s**2 / 4 + s,
        derivative=lambda u: 2 * (u - 1),
        activation=lambda v: v,
    )


def _tv() -> FDivergence:
    t = _torch()

    def conjugate(s: Tensor) -> Tensor:
        return t.where(s.abs() <= 0.5, s, t.full_like(s, math.inf))

    return FDivergence(
        "tv",
        f=lambda u: 0.5 * (u - 1).abs(),
        conjugate=conjugate,
        derivative=lambda u: 0.5 * t.sign(u - 1),
        activation=lambda v: 0.5 * t.tanh(v),
    )


_BUILDERS: dict[str, Callable[[], FDivergence]] = {
    "kl": _kl,
    "reverse_kl": _reverse_kl,
    "js": _js,
    "chi2": _chi2,
    "tv": _tv,
}
DIVERGENCES: tuple[str, ...] = tuple(_BUILDERS)


def divergence(name: str) -> FDivergence:
    """The f-divergence called `name` (one of DIVERGENCES)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown f-divergence {name!r}; accepted: {', '.join(DIVERGENCES)}")
    return _BUILDERS[name]()


def f_divergence(p: Tensor, q: Tensor, fdiv: FDivergence) -> Tensor:
    """D_f(P‖Q) = Σ_x q(x) f(p(x)/q(x)) for discrete P, Q with q > 0 and p > 0."""
    return (q * fdiv.f(p / q)).sum()


def variational_bound(critic: Tensor, p: Tensor, q: Tensor, fdiv: FDivergence) -> Tensor:
    """E_P[T] − E_Q[f*(T)] for a critic given by its value on each support point."""
    return (p * critic).sum() - (q * fdiv.conjugate(critic)).sum()


def optimal_critic(p: Tensor, q: Tensor, fdiv: FDivergence) -> Tensor:
    """T*(x) = f'(p(x)/q(x)), where the bound equals D_f(P‖Q)."""
    return fdiv.derivative(p / q)


def sample_bound(critic_real: Tensor, critic_fake: Tensor, fdiv: FDivergence) -> Tensor:
    """The bound's Monte Carlo estimate: mean T on real samples − mean f*(T) on generated ones.

    Critic values are raw outputs; `fdiv.activation` maps them into the domain of f*.
    """
    return fdiv.activation(critic_real).mean() - fdiv.conjugate(fdiv.activation(critic_fake)).mean()
