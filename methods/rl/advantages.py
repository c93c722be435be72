"""Outcome advantages: GRPO group normalisation and Stratified Advantage Normalization (SAN).

Notation (Stratified GRPO's, Zhu et al., arXiv 2510.06214): a batch holds several prompts' groups;
item i has reward `R_i`, group id `g_i` (same prompt) and, for SAN, a stratum id `s_i` (a structural
property of the trajectory: number of tool calls, response length, ...).

- GRPO: `A_i = (R_i - mean_g R) / (std_g R + eps)`.
- SAN: the same inside each (group, stratum) cell: `A_i = (R_i - mean_k R) / (std_k R + eps)`.
- blend: `alpha * SAN + (1 - alpha) * GRPO` (alpha = 0 is GRPO, 1 is pure SAN).

`std` is the population standard deviation by default (`unbiased=False`): SAN's properties
(zero mean and unit variance per stratum, the variance decomposition) are exact with it. TRL
and verl use the sample (Bessel) std; `unbiased=True` matches them. A cell with one item or
constant rewards has advantage 0 (nothing to contrast), also when `eps=0`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import torch
from torch import Tensor

T = TypeVar("T")


def dense_ids(keys: Tensor) -> tuple[Tensor, int]:
    """Ids 0..n-1 for the distinct values of `keys` (any integer tensor), and n."""
    unique, inverse = torch.unique(keys, return_inverse=True)
    return inverse, int(unique.numel())


def strata_from(items: Sequence[T], key: Callable[[T], Hashable]) -> Tensor:
    """Stratum ids for `items` from a callable: equal keys share an id (first-seen order)."""
    seen: dict[Hashable, int] = {}
    return torch.tensor([seen.setdefault(key(item), len(seen)) for item in items], dtype=torch.long)


def cell_ids(groups: Tensor, strata: Tensor) -> Tensor:
    """One id per distinct (group, stratum) pair, so strata never mix prompts."""
    pairs = torch.stack([groups.long(), strata.long()], dim=1)
    _, inverse = torch.unique(pairs, dim=0, return_inverse=True)
    return inverse


def cell_stats(values: Tensor, ids: Tensor, *, unbiased: bool = False) -> tuple[Tensor, Tensor]:
    """Per-item mean and std of `values` over the items sharing its id (std 0 for singletons)."""
    dense, n = dense_ids(ids)
    values = values.to(torch.float64)
    count = torch.zeros(n, dtype=torch.float64).index_add_(0, dense, torch.ones_like(values))
    total = torch.zeros(n, dtype=torch.float64).index_add_(0, dense, values)
    mean = total / count
    centred = values - mean[dense]
    squares = torch.zeros(n, dtype=torch.float64).index_add_(0, dense, centred**2)
    denominator = (count - 1).clamp(min=1) if unbiased else count
    std = torch.where(count > 1, (squares / denominator).sqrt(), torch.zeros_like(count))
    return mean[dense], std[dense]


def _normalised(rewards: Tensor, ids: Tensor, eps: float, scale: bool, unbiased: bool) -> Tensor:
    mean, std = cell_stats(rewards, ids, unbiased=unbiased)
    centred = rewards.to(torch.float64) - mean
    if not scale:
        return centred
    # a constant or singleton cell has centred == 0 exactly: keep 0 even when eps == 0
    safe = torch.where(std > 0, std + eps, torch.ones_like(std))
    return torch.where(std > 0, centred / safe, torch.zeros_like(centred))


def grpo_advantages(
    rewards: Tensor,
    groups: Tensor,
    *,
    eps: float = 1e-6,
    scale: bool = True,
    unbiased: bool = False,
) -> Tensor:
    """GRPO advantages (B,) from rewards (B,) and group ids (B,).

    `scale=False` is Dr. GRPO's mean-centred advantage; `unbiased=True` uses the sample std as
    TRL (`eps=1e-4`) and verl (`eps=1e-6`) do.
    """
    return _normalised(rewards, groups, eps, scale, unbiased).to(rewards.dtype)


def stratified_advantages(
    rewards: Tensor,
    groups: Tensor,
    strata: Tensor,
    *,
    alpha: float = 1.0,
    eps: float = 1e-6,
    unbiased: bool = False,
) -> Tensor:
    """Stratified GRPO's blended advantage `alpha * A_SAN + (1 - alpha) * A_GN` (B,).

    alpha is docket's knob (the paper's value was not retrieved; 1.0 = pure SAN, as
    third-party ports use). alpha = 0 returns exactly `grpo_advantages`.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    global_adv = _normalised(rewards, groups, eps, True, unbiased)
    if alpha == 0.0:
        return global_adv.to(rewards.dtype)
    san = _normalised(rewards, cell_ids(groups, strata), eps, True, unbiased)
    return (alpha * san + (1.0 - alpha) * global_adv).to(rewards.dtype)


def stratified_decomposition(
    rewards: Tensor, groups: Tensor, strata: Tensor
) -> tuple[Tensor, Tensor]:
    """`R_i - mean_g R = (R_i - mean_k R) + (mean_k R - mean_g R)`: (within, cross-stratum bias).

    The second term is constant inside a stratum: it is what GRPO's global baseline charges a
    whole stratum for being easier or harder, and what SAN removes.
    """
    group_mean, _ = cell_stats(rewards, groups)
    stratum_mean, _ = cell_stats(rewards, cell_ids(groups, strata))
    values = rewards.to(torch.float64)
    return values - stratum_mean, stratum_mean - group_mean
