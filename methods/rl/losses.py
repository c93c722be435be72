"""Policy losses: the clipped surrogate (token- and sequence-level, asymmetric or per-sequence ε),
its aggregation modes, and REINFORCE-style losses.

Per token `ℓ = -min(r·A, clip(r, 1-ε_lo, 1+ε_hi)·A)` with `r = π_θ/π_old`. A token is
*clip-active* when the clipped branch is selected and carries no gradient:
`(A > 0 ∧ r > 1+ε_hi) ∨ (A < 0 ∧ r < 1-ε_lo)`. At sequence level (GSPO) `r` is
`exp(mean_t log r_t)`, one ratio per sequence that every token of it shares.

`ε` may be a float or a per-sequence tensor (B,) (ECHO's confidence-adaptive clipping).
Aggregations (TRL `loss_type` / verl `loss_agg_mode` names in brackets):

- `token_mean`: Σ ℓ·m / Σ m over the batch (TRL bnpo and dapo per batch; verl token-mean);
- `seq_mean_token_mean`: mean over sequences of each sequence's token mean (TRL grpo);
- `seq_mean_token_sum_norm`: Σ ℓ·m / (B · horizon) (TRL dr_grpo with horizon =
  max_completion_length; verl seq-mean-token-sum-norm);
- `token_sum`: Σ ℓ·m.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor

Level = Literal["token", "sequence"]
Aggregation = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm", "token_sum"]
AGGREGATIONS: tuple[str, ...] = (
    "token_mean",
    "seq_mean_token_mean",
    "seq_mean_token_sum_norm",
    "token_sum",
)
LEVELS: tuple[str, ...] = ("token", "sequence")


@dataclass
class PolicyLoss:
    """A scalar loss, the per-token loss matrix (B, T) it aggregates, and float metrics."""

    loss: Tensor
    per_token: Tensor
    metrics: dict[str, float] = field(default_factory=dict)


def aggregate(
    per_token: Tensor, mask: Tensor, mode: str = "token_mean", *, horizon: int | None = None
) -> Tensor:
    """Reduce a (B, T) loss matrix over the response tokens in `mask`."""
    mask = mask.to(per_token.dtype)
    masked = per_token * mask
    if mode == "token_mean":
        return masked.sum() / mask.sum().clamp(min=1.0)
    if mode == "seq_mean_token_mean":
        return (masked.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if mode == "seq_mean_token_sum_norm":
        return masked.sum() / (per_token.size(0) * (horizon or per_token.size(1)))
    if mode == "token_sum":
        return masked.sum()
    raise ValueError(f"unknown aggregation {mode!r} (accepted: {', '.join(AGGREGATIONS)})")


def masked_mean(values: Tensor, mask: Tensor) -> float:
    """Mean of `values` over `mask` (0.0 when the mask is empty), as a float metric."""
    mask = mask.to(values.dtype).expand_as(values) if values.shape != mask.shape else mask
    total = mask.sum()
    return float((values * mask).sum() / total) if total > 0 else 0.0


def log_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor, level: str = "token") -> Tensor:
    """log r: per token (B, T), or per sequence (B, 1) as the masked mean of the token log r."""
    diff = logp - old_logp
    if level == "token":
        return diff
    if level == "sequence":
        m = mask.to(diff.dtype)
        return ((diff * m).sum(-1) / m.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    raise ValueError(f"unknown level {level!r} (accepted: {', '.join(LEVELS)})")


def as_column(value: float | Tensor, like: Tensor) -> float | Tensor:
    """A float, or a per-sequence (B,) tensor as a (B, 1) column broadcasting over tokens."""
    if isinstance(value, Tensor):
        return value.to(like.dtype).reshape(-1, 1)
    return value


def as_token_advantages(advantages: Tensor, like: Tensor) -> Tensor:
    """Sequence advantages (B,) as a (B, 1) column; token advantages (B, T) unchanged."""
    return advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages.to(like.dtype)


def clip_sides(
    ratio: Tensor, adv: Tensor, eps_low: float | Tensor, eps_high: float | Tensor
) -> tuple[Tensor, Tensor]:
    """(upper, lower) clip-active masks: (A>0 ∧ r>1+ε_hi), (A<0 ∧ r<1-ε_lo)."""
    upper = (adv > 0) & (ratio > 1 + eps_high)
    lower = (adv < 0) & (ratio < 1 - eps_low)
    return upper, lower


def surrogate_terms(
    ratio: Tensor, adv: Tensor, eps_low: float | Tensor, eps_high: float | Tensor
) -> Tensor:
    """The clipped surrogate per token, `-min(r·A, clip(r)·A)` (broadcast to adv's shape)."""
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)  # type: ignore[arg-type]
    return -torch.min(ratio * adv, clipped * adv)


def clip_metrics(upper: Tensor, lower: Tensor, ratio: Tensor, mask: Tensor) -> dict[str, float]:
    """Clip fractions (upper, lower, both) and the mean ratio over response tokens."""
    shape = torch.broadcast_shapes(upper.shape, mask.shape)
    m = mask.to(ratio.dtype).expand(shape)
    return {
        "clip_frac": masked_mean((upper | lower).to(ratio.dtype).expand(shape), m),
        "clip_frac_high": masked_mean(upper.to(ratio.dtype).expand(shape), m),
        "clip_frac_low": masked_mean(lower.to(ratio.dtype).expand(shape), m),
        "ratio_mean": masked_mean(ratio.detach().expand(shape), m),
    }


def clipped_surrogate(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float | Tensor = 0.2,
    eps_high: float | Tensor | None = None,
    level: str = "token",
    aggregation: str = "token_mean",
    horizon: int | None = None,
) -> PolicyLoss:
    """The PPO/GRPO clipped surrogate.

    Args:
        logp: log π_θ of the response tokens (B, T), with gradient.
        old_logp: log π_old of the same tokens (B, T) (behaviour policy).
        advantages: (B,) per sequence or (B, T) per token (ECHO's shaped advantages).
        mask: 1 on response tokens (B, T).
        eps_low: ε_lo, float or per-sequence (B,) tensor.
        eps_high: ε_hi (default ε_lo), float or per-sequence (B,) tensor.
        level: "token" (PPO/GRPO/DAPO) or "sequence" (GSPO).
        aggregation: see the module docstring.
        horizon: the constant of `seq_mean_token_sum_norm` (default T).
    """
    eps_hi = as_column(eps_low if eps_high is None else eps_high, logp)
    eps_lo = as_column(eps_low, logp)
    ratio = torch.exp(log_ratio(logp, old_logp, mask, level))
    adv = as_token_advantages(advantages, logp)
    per_token = surrogate_terms(ratio, adv, eps_lo, eps_hi)
    per_token = per_token.expand(torch.broadcast_shapes(per_token.shape, mask.shape))
    upper, lower = clip_sides(ratio, adv, eps_lo, eps_hi)
    loss = aggregate(per_token, mask, aggregation, horizon=horizon)
    return PolicyLoss(loss, per_token, clip_metrics(upper, lower, ratio, mask))


def reinforce_loss(
    logp: Tensor,
    weights: Tensor,
    mask: Tensor,
    *,
    aggregation: str = "seq_mean_token_mean",
    horizon: int | None = None,
) -> PolicyLoss:
    """`-w · log π_θ(y|x)` with no importance ratio; `weights` (B,) or (B, T), detached.

    With `seq_mean_token_mean` each sequence's log-likelihood is length-normalised.
    """
    per_token = -as_token_advantages(weights.detach(), logp) * logp
    per_token = per_token.expand(torch.broadcast_shapes(per_token.shape, mask.shape))
    return PolicyLoss(aggregate(per_token, mask, aggregation, horizon=horizon), per_token, {})
