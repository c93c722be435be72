"""NSR — Near-boundary Stochastic Rescue — and its deterministic partner DGD.

Our reconstruction: the official code (github.com/qwenpilot/NSR) could not be obtained; this follows
the paper's abstract and a third-party summary of it: hard clipping makes a keep/drop decision per
clip-active token; NSR perturbs such a token's ratio once with uniform noise `u ~ U(u_min, 1)`
toward 1 and keeps the token's gradient when the perturbed ratio falls back inside the trust region:

    upper side (A > 0, r > c_hi = 1+ε_hi):  r̃ = u·r,  rescued iff r̃ ≤ c_hi
    lower side (A < 0, r < c_lo = 1-ε_lo):  r̃ = r/u,  rescued iff r̃ ≥ c_lo

A rescued token's loss is `-s·r·A` with `s = sg(r̃/r)` ("scaled": the gradient the token would
have at the perturbed ratio) or `s = 1` ("plain"); every other token keeps the clipped
surrogate. In expectation the gradient weight on `A·∇r` is (`expected_weight`):

    upper, scaled: (min(c/r, 1)² - u_min²)₊ / (2(1-u_min))   (u_min = 0: c²/(2r²), the O(1/r²) law)
    upper, plain:  (min(c/r, 1) - u_min)₊ / (1-u_min)
    lower, plain:  (r/c - u_min)₊ / (1-u_min)
    lower, scaled: ln((r/c)/u_min)₊ / (1-u_min)                (needs u_min > 0: E[1/u] diverges)

DGD (deterministic gradient decay) applies exactly that expected weight to every clip-active
token; NSR's expectation equals DGD's (tested by Monte Carlo). The knobs (`variant_*`,
`u_min_*`) let the paper's exact rule be dropped in — verify against the official code.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .losses import (
    PolicyLoss,
    aggregate,
    as_token_advantages,
    clip_metrics,
    clip_sides,
    clipped_surrogate,
    log_ratio,
    masked_mean,
    surrogate_terms,
)

VARIANTS: tuple[str, ...] = ("scaled", "plain")


def _check(variant: str, u_min: float, side: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"unknown NSR variant {variant!r} (accepted: {', '.join(VARIANTS)})")
    if not 0.0 <= u_min < 1.0:
        raise ValueError(f"u_min must be in [0, 1), got {u_min}")
    if side == "low" and variant == "scaled" and u_min == 0.0:
        raise ValueError("the scaled lower-side rescue needs u_min > 0 (E[1/u] is infinite)")


def expected_weight(
    ratio: Tensor,
    *,
    side: str = "high",
    eps: float = 0.28,
    u_min: float = 0.0,
    variant: str = "scaled",
) -> Tensor:
    """The expected NSR gradient weight on `A·∇r` of a clip-active token at `ratio` (closed
    form; 1 inside the trust region, where nothing is clipped)."""
    _check(variant, u_min, side)
    span = 1.0 - u_min
    if side == "high":
        bound = 1.0 + eps
        reach = torch.clamp(bound / ratio, max=1.0)
        if variant == "scaled":
            weight = torch.clamp(reach**2 - u_min**2, min=0.0) / (2 * span)
        else:
            weight = torch.clamp(reach - u_min, min=0.0) / span
        return torch.where(ratio > bound, weight, torch.ones_like(ratio))
    if side == "low":
        bound = 1.0 - eps
        reach = torch.clamp(ratio / bound, max=1.0)
        if variant == "plain":
            weight = torch.clamp(reach - u_min, min=0.0) / span
        else:
            weight = torch.clamp(torch.log(reach / u_min), min=0.0) / span
        return torch.where(ratio < bound, weight, torch.ones_like(ratio))
    raise ValueError(f"side must be 'high' or 'low', got {side!r}")


def draw_noise(
    shape: torch.Size, u_min: float, generator: torch.Generator | None, like: Tensor
) -> Tensor:
    """u ~ U(u_min, 1), detached, one per entry of `shape`."""
    u = torch.rand(shape, generator=generator, dtype=like.dtype, device="cpu").to(like.device)
    return u_min + (1.0 - u_min) * u


def nsr_policy_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    level: str = "token",
    aggregation: str = "token_mean",
    horizon: int | None = None,
    variant_high: str = "scaled",
    variant_low: str = "plain",
    u_min_high: float = 0.0,
    u_min_low: float = 0.0,
    enabled: bool = True,
    generator: torch.Generator | None = None,
    noise: Tensor | None = None,
) -> PolicyLoss:
    """The clipped surrogate with near-boundary stochastic rescue of clip-active tokens.

    Defaults: DAPO's ε (0.2 / 0.28), "scaled" upper rescue with U(0, 1) (the paper's O(1/r²)),
    "plain" lower rescue. `level="sequence"` draws once per sequence (GSPO), so every token of a
    sequence shares the decision. `noise` overrides the draw (the ratio's shape: (B, T) or
    (B, 1)); `enabled=False` is exactly `clipped_surrogate`. Metrics add `rescue_frac`, the
    share of response tokens rescued.
    """
    _check(variant_high, u_min_high, "high")
    _check(variant_low, u_min_low, "low")
    if not enabled:
        return clipped_surrogate(
            logp,
            old_logp,
            advantages,
            mask,
            eps_low=eps_low,
            eps_high=eps_high,
            level=level,
            aggregation=aggregation,
            horizon=horizon,
        )
    ratio = torch.exp(log_ratio(logp, old_logp, mask, level))
    adv = as_token_advantages(advantages, logp)
    upper, lower = clip_sides(ratio, adv, eps_low, eps_high)
    shape = torch.broadcast_shapes(ratio.shape, adv.shape)
    if noise is None:
        u_high = draw_noise(shape, u_min_high, generator, logp)
        u_low = u_high if u_min_low == u_min_high else draw_noise(shape, u_min_low, generator, logp)
    else:
        u_high = u_low = noise.to(logp.dtype).expand(shape)
    r = ratio.detach().expand(shape)
    rescued_high = upper & (u_high * r <= 1 + eps_high)
    rescued_low = lower & (r / u_low >= 1 - eps_low)
    scale = torch.ones(shape, dtype=logp.dtype, device=logp.device)
    if variant_high == "scaled":
        scale = torch.where(rescued_high, u_high, scale)
    if variant_low == "scaled":
        scale = torch.where(rescued_low, 1.0 / u_low, scale)
    rescued = rescued_high | rescued_low
    per_token = torch.where(
        rescued, -scale * ratio * adv, surrogate_terms(ratio, adv, eps_low, eps_high)
    )
    per_token = per_token.expand(torch.broadcast_shapes(per_token.shape, mask.shape))
    metrics = clip_metrics(upper, lower, ratio, mask)
    full = torch.broadcast_shapes(shape, mask.shape)
    metrics["rescue_frac"] = masked_mean(rescued.to(logp.dtype).expand(full), mask)
    return PolicyLoss(aggregate(per_token, mask, aggregation, horizon=horizon), per_token, metrics)


def dgd_policy_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    level: str = "token",
    aggregation: str = "token_mean",
    horizon: int | None = None,
    variant_high: str = "scaled",
    variant_low: str = "plain",
    u_min_high: float = 0.0,
    u_min_low: float = 0.0,
) -> PolicyLoss:
    """Deterministic gradient decay: clip-active tokens keep `-sg(w(r))·r·A` with NSR's expected
    weight `w(r)` (the ablation partner with the same expected gradient)."""
    ratio = torch.exp(log_ratio(logp, old_logp, mask, level))
    adv = as_token_advantages(advantages, logp)
    upper, lower = clip_sides(ratio, adv, eps_low, eps_high)
    r = ratio.detach()
    w_high = expected_weight(r, side="high", eps=eps_high, u_min=u_min_high, variant=variant_high)
    w_low = expected_weight(r, side="low", eps=eps_low, u_min=u_min_low, variant=variant_low)
    weight = torch.where(upper, w_high, torch.where(lower, w_low, torch.ones_like(r)))
    active = upper | lower
    per_token = torch.where(
        active, -weight * ratio * adv, surrogate_terms(ratio, adv, eps_low, eps_high)
    )
    per_token = per_token.expand(torch.broadcast_shapes(per_token.shape, mask.shape))
    metrics = clip_metrics(upper, lower, ratio, mask)
    return PolicyLoss(aggregate(per_token, mask, aggregation, horizon=horizon), per_token, metrics)


def rescue_band(eps_high: float, u_min: float) -> tuple[float, float]:
    """The upper-side ratios that can be rescued: (1+ε_hi, (1+ε_hi)/u_min] (inf when u_min=0)."""
    low = 1.0 + eps_high
    return low, (low / u_min if u_min > 0 else math.inf)
