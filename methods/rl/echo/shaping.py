"""ECHO's entropy–confidence hybrid advantage and confidence-adaptive clipping (released
`hybrid_adv` path of user683/ECHO).

- hybrid score `S_t = clamp(α_s·z(H_t) + β_s·z(1 - C_t), -s_max, s_max)`, `z` = whitening over
  every response token of the batch (population std);
- multiplicative shaping `A'_t = A·(1 + a·S_t)`, optional additive term
  `λ·(S_t - mean_group S)` (token-weighted mean over the group's response tokens), masked;
- per-sequence clip range `ε = ε_min + (ε_max - ε_min)·σ(κ·(1 - C̄_tail))`, with C̄_tail the
  mean actor confidence over the last `tail_window` response tokens, clamped to [0, 1]:
  confident tails get a tighter trust region.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..advantages import dense_ids
from ..losses import PolicyLoss, clipped_surrogate
from .signals import tail_mean


def masked_whiten(values: Tensor, mask: Tensor, eps: float = 1e-8) -> Tensor:
    """(x - mean) / (std + eps) over the tokens in `mask` (population std); 0 outside it."""
    m = mask.to(torch.float64)
    x = values.to(torch.float64)
    count = m.sum().clamp(min=1.0)
    mean = (x * m).sum() / count
    var = (((x - mean) * m) ** 2).sum() / count
    return (((x - mean) / (var.sqrt() + eps)) * m).to(values.dtype)


def hybrid_scores(
    entropy: Tensor,
    confidence: Tensor,
    mask: Tensor,
    *,
    alpha_s: float = 1.0,
    beta_s: float = 1.0,
    s_max: float = 2.0,
) -> Tensor:
    """S_t (B, T), masked: high entropy and low confidence raise it."""
    raw = alpha_s * masked_whiten(entropy, mask) + beta_s * masked_whiten(1 - confidence, mask)
    return torch.clamp(raw, -s_max, s_max) * mask.to(raw.dtype)


def group_token_mean(values: Tensor, mask: Tensor, groups: Tensor) -> Tensor:
    """Per row (B, 1): the token-weighted mean of `values` over its group's response tokens."""
    ids, n = dense_ids(groups)
    m = mask.to(torch.float64)
    sums = torch.zeros(n, dtype=torch.float64).index_add_(0, ids, (values * m).sum(-1).double())
    counts = torch.zeros(n, dtype=torch.float64).index_add_(0, ids, m.sum(-1))
    return (sums / counts.clamp(min=1.0))[ids].unsqueeze(-1).to(values.dtype)


def hybrid_advantages(
    advantages: Tensor,
    entropy: Tensor,
    confidence: Tensor,
    mask: Tensor,
    groups: Tensor,
    *,
    alpha_s: float = 1.0,
    beta_s: float = 1.0,
    s_max: float = 2.0,
    mult_coeff: float = 0.1,
    add_coeff: float = 0.0,
) -> Tensor:
    """Token advantages (B, T): `A·(1 + a·S) + λ·(S - mean_group S)`, zero off the mask."""
    scores = hybrid_scores(entropy, confidence, mask, alpha_s=alpha_s, beta_s=beta_s, s_max=s_max)
    base = advantages.unsqueeze(-1).to(scores.dtype) * (1 + mult_coeff * scores)
    if add_coeff:
        base = base + add_coeff * (scores - group_token_mean(scores, mask, groups))
    return base * mask.to(scores.dtype)


def adaptive_clip_eps(
    confidence: Tensor,
    mask: Tensor,
    *,
    tail_window: int = 16,
    eps_min: float = 0.05,
    eps_max: float = 0.2,
    kappa: float = 4.0,
) -> Tensor:
    """ε per sequence (B,): ε_min + (ε_max - ε_min)·σ(κ·(1 - C̄_tail))."""
    tail = tail_mean(confidence, mask, tail_window).clamp(0.0, 1.0)
    return eps_min + (eps_max - eps_min) * torch.sigmoid(kappa * (1 - tail))


def echo_policy_loss(
    logp: Tensor,
    old_logp: Tensor,
    token_advantages: Tensor,
    mask: Tensor,
    confidence: Tensor,
    *,
    tail_window: int = 16,
    eps_min: float = 0.05,
    eps_max: float = 0.2,
    kappa: float = 4.0,
    adaptive: bool = True,
    aggregation: str = "token_mean",
) -> PolicyLoss:
    """The clipped surrogate with ECHO's per-sequence ε (both sides); `adaptive=False` uses
    ε_max everywhere."""
    eps: float | Tensor = eps_max
    if adaptive:
        eps = adaptive_clip_eps(
            confidence.detach(),
            mask,
            tail_window=tail_window,
            eps_min=eps_min,
            eps_max=eps_max,
            kappa=kappa,
        )
    out = clipped_surrogate(
        logp, old_logp, token_advantages, mask, eps_low=eps, eps_high=eps, aggregation=aggregation
    )
    out.metrics["clip_eps_mean"] = float(eps.mean()) if isinstance(eps, Tensor) else eps
    return out
