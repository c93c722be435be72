"""The history estimates on candidate blocks (Quest's page bound, then exact attention).

Dustin's history starts from the attention of the last prompt queries over the whole prompt,
a second read of every key (half the cache when every head estimates), and each dense check
that does not end the generation reads its estimation heads' keys again. Here each block of
`block` cached positions is first represented by the channel-wise minimum and maximum of its
keys (Quest's page metadata, kept up to date as the prefill and the dense checks store the
keys), which bound `q · k` for every key in the block: `Σ_d max(q_d · min_d, q_d · max_d)`. The
blocks whose bounds carry the most softmax mass are the candidates, and only their keys (with
the sinks and the queries' own positions) are read to compute the attention exactly,
normalised over what was read. A block that is not a candidate gets no history; a key whose
score is high lies in a block whose bound is at least as high.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch


def candidate_keys_read(prior: int, tail: int, block: int, candidates: int, sinks: int) -> int:
    """Keys each key-value group reads for the candidate estimate (at most, per group).

    Args:
        prior: Prompt positions before the last queries.
        tail: The last queries (their own positions are read exactly).
        block: Positions per block.
        candidates: Candidate positions (rounded down to whole blocks).
        sinks: First positions always read exactly.

    Returns:
        Two bound vectors per block, the candidates' keys, the sinks' and the tail's; never
        more than a plain estimate (`prior + tail`).
    """
    blocks = math.ceil(prior / block) if prior else 0
    chosen = min(candidates // block, blocks)
    return min(prior + tail, 2 * blocks + chosen * block + sinks + tail)


def block_bounds(key: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Channel-wise minimum and maximum of each block of keys (the last block may be short).

    Args:
        key: `[groups, positions, dim]` keys (float32).
        block: Positions per block.

    Returns:
        `(low, high)`, each `[groups, blocks, dim]`.
    """
    groups, positions, dim = key.shape
    blocks = math.ceil(positions / block)
    pad = blocks * block - positions
    if pad:  # repeat the last key: it changes neither bound
        key = torch.cat([key, key[:, -1:].expand(groups, pad, dim)], dim=1)
    shaped = key.reshape(groups, blocks, block, dim)
    return shaped.amin(dim=2), shaped.amax(dim=2)


def score_bounds(
    query: torch.Tensor, low: torch.Tensor, high: torch.Tensor, scale: float
) -> torch.Tensor:
    """Upper bounds of the scaled scores `q · k` over each block's keys.

    Args:
        query: `[heads, queries, dim]` (float32).
        low: The blocks' channel-wise minimum keys `[blocks, dim]`.
        high: Their maximum keys `[blocks, dim]`.
        scale: The attention's score scale.

    Returns:
        `[heads, queries, blocks]`: `Σ_d max(q_d · low_d, q_d · high_d)`, times `scale`.
    """
    return (query.clamp(min=0) @ high.T + query.clamp(max=0) @ low.T) * scale


def candidate_head_weights(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    heads: Sequence[int],
    prior: int,
    block: int,
    candidates: int,
    sinks: int,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Attention `[heads, queries, keys]` of the last queries on candidate blocks only.

    Args:
        module: The attention module (`scaling`, `num_key_value_groups`).
        query: The last queries `[1, heads, tail, dim]` (at positions `prior …`).
        key: The layer's keys `[1, kv heads, prior + tail, dim]`.
        heads: The query heads wanted.
        prior: Prompt positions before the last queries.
        block: Positions per block.
        candidates: Candidate positions per key-value group (whole blocks).
        sinks: First positions always read.
        allowed: `[queries, keys]` booleans of what each query sees (a token tree's check);
            None: every prior key and the last queries causally.

    Returns:
        Float32 weights, zero outside each group's sinks, candidate blocks and the last
        queries' positions; each query's row sums to 1 over what was read.
    """
    per_group = max(int(getattr(module, "num_key_value_groups", 1)), 1)
    scale = float(module.scaling)
    tail, keys = query.shape[2], key.shape[2]
    chosen = list(heads)
    out = torch.zeros(len(chosen), tail, keys, device=query.device)
    low, high = block_bounds(key[0, :, :prior].float(), block)
    take = min(candidates // block, low.shape[1])
    visible = allowed
    if visible is None:
        visible = torch.arange(keys, device=query.device)[None, :] <= (
            prior + torch.arange(tail, device=query.device)[:, None]
        )
    for group in sorted({head // per_group for head in chosen}):
        rows = [index for index, head in enumerate(chosen) if head // per_group == group]
        q = query[0, [chosen[index] for index in rows]].float()  # [h, tail, dim]
        bound = score_bounds(q, low[group], high[group], scale)  # [h, tail, blocks]
        potential = torch.softmax(bound, dim=-1).sum(dim=(0, 1))
        picked = torch.topk(potential, take).indices if take else potential.new_zeros(0).long()
        starts = picked[:, None] * block + torch.arange(block, device=query.device)[None, :]
        positions = torch.cat(
            [
                torch.arange(min(sinks, prior), device=query.device),
                starts.flatten()[starts.flatten() < prior],
                torch.arange(prior, keys, device=query.device),
            ]
        ).unique()
        scores = q @ key[0, group, positions].float().T * scale  # [h, tail, read]
        scores = scores.masked_fill(~visible[:, positions], -math.inf)
        weights = torch.softmax(scores, dim=-1)
        for index, row in enumerate(rows):
            out[row, :, positions] = weights[index]
    return out
