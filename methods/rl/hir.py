"""HiR — Hindsight instruction Replay (Zhang et al., arXiv 2512.23457): select failed responses
that satisfied some constraints, rewrite their instruction to exactly those constraints, replay
them as successes.

An instruction is a task plus constraints; verifiers judge each constraint. The binary reward is
"all satisfied" (ILA); CLA is the satisfied fraction.

1. select: candidates are failed responses with 0 < CLA < 1; score
   `F = entropy + λ_t · CLA` with `λ_t = λ_0 · growth^t` (released code: 2.0 · 1.05^t): diversity
   first, integrity later; keep the top k (ties: lower index first).
2. rewrite: the instruction re-rendered with only the satisfied constraints; under it the same
   response satisfies everything, so its reward is 1.
3. replay: the rewritten rows keep the *original* instruction's old log-probabilities, so the
   ratio is π_θ(y|q') / π_old(y|q) — the paper's instruction-level preference. Where they join
   the batch was not retrieved (our choice): `placement="group"` appends them to the original
   prompt's group (contrasted against its failures, the default); `"own"` gives each its own
   group id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
from torch import Tensor

from .batch import Rollouts, with_prompts

C = TypeVar("C")
PLACEMENTS: tuple[str, ...] = ("group", "own")


def hir_lambda(step: int, lam0: float = 2.0, growth: float = 1.05) -> float:
    """The curriculum weight λ_t = λ_0 · growth^t."""
    return lam0 * growth**step


def replay_scores(
    cla: Tensor, entropy: Tensor, step: int, *, lam0: float = 2.0, growth: float = 1.05
) -> Tensor:
    """F = entropy + λ_t · CLA for every row (candidates or not)."""
    return entropy.to(torch.float64) + hir_lambda(step, lam0, growth) * cla.to(torch.float64)


def select_replay(
    cla: Tensor,
    entropy: Tensor,
    step: int,
    k: int,
    *,
    lam0: float = 2.0,
    growth: float = 1.05,
) -> Tensor:
    """Indices of up to k candidates (0 < CLA < 1) of highest F, best first (ties: lower index)."""
    candidates = torch.nonzero((cla > 0) & (cla < 1)).flatten()
    if k <= 0 or candidates.numel() == 0:
        return torch.zeros(0, dtype=torch.long)
    scores = replay_scores(cla, entropy, step, lam0=lam0, growth=growth)[candidates]
    # stable sort on -score keeps the lower index first among ties
    order = torch.sort(-scores, stable=True).indices
    return candidates[order[:k]]


def satisfied_constraints(constraints: Sequence[C], judgements: Sequence[bool]) -> list[C]:
    """The constraints the response satisfied, in their original order."""
    if len(constraints) != len(judgements):
        raise ValueError(f"{len(judgements)} judgements for {len(constraints)} constraints")
    return [c for c, ok in zip(constraints, judgements, strict=True) if ok]


def rewrite_instruction(
    task: str,
    constraints: Sequence[C],
    judgements: Sequence[bool],
    render: Callable[[str, list[C]], str],
) -> str:
    """The hindsight instruction: `render(task, satisfied constraints)`."""
    return render(task, satisfied_constraints(constraints, judgements))


def hindsight_rows(
    batch: Rollouts,
    selected: Tensor,
    new_prompt_ids: list[list[int]],
    *,
    placement: str = "group",
    next_group: int | None = None,
) -> Rollouts:
    """Replayed rows for `selected`: rewritten prompts, the same responses and the same old
    log-probabilities (π_old under the original instruction), reward 1, `is_replay` True.

    `placement="group"` keeps each row in its original prompt's group; `"own"` gives each a new
    group id from `next_group` (default: one past the batch's largest id).
    """
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r} (accepted: {', '.join(PLACEMENTS)})")
    rows = batch.rows(selected)
    groups = rows.groups.clone()
    if placement == "own":
        start = int(batch.groups.max()) + 1 if next_group is None else next_group
        groups = torch.arange(start, start + len(rows), dtype=batch.groups.dtype)
    return with_prompts(
        rows,
        new_prompt_ids,
        rewards=torch.ones_like(rows.rewards),
        groups=groups,
        is_replay=torch.ones_like(rows.is_replay),
        info=[{**info, "hindsight": True} for info in (rows.info or [{}] * len(rows))],
    )
