"""ECHO's token signals: entropy, the two confidences of the released code, and their windows.

Two confidence definitions exist in the released ECHO code (user683/ECHO):

- actor path (advantage shaping, adaptive clipping): `C_t = mean of the top-k probabilities`
  (k = 5; the paper's definition). `normalization="mass_topk"` uses their sum (k·mean) instead:
  with the mean, C ≤ 1/k, so the adaptive clip range barely moves (documented caveat).
- rollout path (branching, pruning): the top-`logprob_top_k` log-probabilities renormalised,
  then `C_t = -mean log p̃` over the `confidence_top_k` largest (DeepConf-style; larger = more
  peaked). By Jensen, C ≥ ln(confidence_top_k) (1.61 for k = 5), so the released thresholds
  τ_b = 1.2 and prune 0.4 can never be reached in this unit; `TreeConfig` exposes them.

Windows: grouped confidence C^G = trailing mean over W_G tokens (current included), tail
confidence C^tail over W_T, entropy slope ΔH_t = H_t - mean(H over the W_H tokens before t)
(0 at the first token).
"""

from __future__ import annotations

import torch
from torch import Tensor

NORMALIZATIONS: tuple[str, ...] = ("mean_topk", "mass_topk")


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Shannon entropy (nats) of softmax(logits) over the last axis."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def top_renormalised(logits: Tensor, k: int | None) -> tuple[Tensor, Tensor]:
    """The k largest probabilities renormalised to sum 1 (all when k is None) and their token
    ids, both sorted by probability, descending."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    size = logp.size(-1) if k is None else min(k, logp.size(-1))
    top, ids = torch.topk(logp, size, dim=-1)
    return torch.softmax(top, dim=-1), ids


def rollout_entropy(logits: Tensor, logprob_top_k: int | None = None) -> Tensor:
    """Entropy of the renormalised top-`logprob_top_k` distribution (full vocabulary if None)."""
    if logprob_top_k is None:
        return entropy_from_logits(logits)
    probs, _ = top_renormalised(logits, logprob_top_k)
    return -(probs * torch.log(probs.clamp(min=1e-9))).sum(-1)


def rollout_confidence(
    logits: Tensor, logprob_top_k: int | None = 64, confidence_top_k: int = 5
) -> Tensor:
    """DeepConf token confidence: -mean log of the `confidence_top_k` largest renormalised
    top-`logprob_top_k` probabilities (≥ ln confidence_top_k)."""
    probs, _ = top_renormalised(logits, logprob_top_k)
    k = min(confidence_top_k, probs.size(-1))
    return -torch.log(probs[..., :k] + 1e-9).mean(-1)


def actor_confidence(logits: Tensor, k: int = 5, normalization: str = "mean_topk") -> Tensor:
    """Mean (or, `mass_topk`, sum) of the top-k probabilities of softmax(logits)."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(
            f"unknown normalization {normalization!r} (accepted: {', '.join(NORMALIZATIONS)})"
        )
    probs = torch.softmax(logits.float(), dim=-1)
    top = torch.topk(probs, min(k, probs.size(-1)), dim=-1).values
    return top.mean(-1) if normalization == "mean_topk" else top.sum(-1)


def trailing_mean(values: Tensor, window: int) -> Tensor:
    """Mean of the last `window` values up to and including t, along the last axis."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    sums = torch.cumsum(values.to(torch.float64), dim=-1)
    shifted = torch.nn.functional.pad(sums, (window, 0))[..., : values.size(-1)]
    counts = torch.clamp(torch.arange(1, values.size(-1) + 1, device=values.device), max=window)
    return ((sums - shifted) / counts).to(values.dtype)


def entropy_delta(entropy: Tensor, window: int) -> Tensor:
    """ΔH_t = H_t - mean(H_{t-W} .. H_{t-1}); 0 at t = 0."""
    if entropy.size(-1) == 0:
        return entropy
    previous = trailing_mean(entropy, window)[..., :-1]
    return torch.cat([torch.zeros_like(entropy[..., :1]), entropy[..., 1:] - previous], dim=-1)


def tail_mean(values: Tensor, mask: Tensor, window: int) -> Tensor:
    """Per row (B,), the mean of `values` over the last `window` positions inside `mask`."""
    m = mask.to(torch.float64)
    position_from_end = torch.flip(torch.cumsum(torch.flip(m, [-1]), -1), [-1])
    tail = m * (position_from_end <= window).to(torch.float64)
    total = (values.to(torch.float64) * tail).sum(-1)
    return (total / tail.sum(-1).clamp(min=1.0)).to(values.dtype)
