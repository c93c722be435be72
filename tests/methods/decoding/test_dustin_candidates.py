"""Dustin's prefill estimate on candidate blocks (`prefill_candidates`): Quest's per-block key
bounds pick the blocks, and only their keys are read for the history's first estimate."""

from __future__ import annotations

import types
from typing import Any

import pytest
import torch

from docket.methods.decoding.attention import head_weights
from docket.methods.decoding.dustin.algorithm import DustinDecoder
from docket.methods.decoding.dustin.candidates import (
    block_bounds,
    candidate_head_weights,
    candidate_keys_read,
    score_bounds,
)
from tests.methods.decoding.dustin_support import decode

MODULE = types.SimpleNamespace(scaling=0.125, num_key_value_groups=3)


def test_block_bounds_bound_every_score_and_are_exact_for_single_keys() -> None:
    torch.manual_seed(0)
    query, keys = torch.randn(2, 5, 16), torch.randn(1, 37, 16)  # a short last block
    low, high = block_bounds(keys, 8)
    assert low.shape == high.shape == (1, 5, 16)
    bounds = score_bounds(query, low[0], high[0], 0.25)
    scores = (query @ keys[0].T) * 0.25
    for block in range(5):
        inside = scores[..., block * 8 : (block + 1) * 8]
        assert torch.all(bounds[..., block] >= inside.amax(dim=-1) - 1e-5)
    low, high = block_bounds(keys, 1)
    assert torch.allclose(score_bounds(query, low[0], high[0], 0.25), scores, atol=1e-5)


def test_candidates_that_cover_the_prompt_give_the_exact_estimate() -> None:
    torch.manual_seed(1)
    query, keys = torch.randn(1, 9, 8, 32), torch.randn(1, 3, 200, 32)
    exact = head_weights(MODULE, query, keys, list(range(9)), 192)
    covered = candidate_head_weights(MODULE, query, keys, list(range(9)), 192, 16, 192, 4)
    assert torch.allclose(covered, exact, atol=1e-6)


def test_the_block_of_a_planted_key_is_read_and_nothing_else_but_sinks_and_tail() -> None:
    """Keys of small noise and one key along the queries at position 137: with one candidate
    block the estimate reads the sinks, the block 128–143 and the last queries' own positions,
    and the planted key takes nearly all of the mass of every chosen head."""
    torch.manual_seed(2)
    direction = torch.randn(32)
    query = direction.repeat(1, 9, 8, 1) + 0.05 * torch.randn(1, 9, 8, 32)
    keys = 0.05 * torch.randn(1, 3, 200, 32)
    keys[0, :, 137] = 3 * direction
    heads = [0, 4, 8]  # one head of each key-value group
    weights = candidate_head_weights(MODULE, query, keys, heads, 192, 16, 16, 4)
    read = {tuple(torch.nonzero(weights[i, -1]).flatten().tolist()) for i in range(3)}
    assert read == {(0, 1, 2, 3, *range(128, 144), *range(192, 200))}
    assert torch.all(weights[:, :, 137] > 0.9)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(3, 8))
    # a query sees only the last queries up to its own position
    assert torch.all(weights[:, 0, 193:] == 0)


def test_keys_read_per_group() -> None:
    # 3,433 prior positions: 215 blocks of bounds (two keys each), 32 blocks read, 4 sinks, 8
    assert candidate_keys_read(3433, 8, 16, 512, 4) == 2 * 215 + 512 + 4 + 8
    # never more than the plain estimate
    assert candidate_keys_read(100, 8, 16, 512, 4) == 108


def test_candidate_prefill_stays_dense_greedy_and_counts_only_what_it_reads(
    target: Any, prompt: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output is the dense target's with any candidate count; the prefill's estimate is
    counted as the bounds, candidates, sinks and tail per key-value group (fewer keys than the
    whole prompt), and candidates that cover the prompt change nothing at all."""
    common = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4}
    dense, _ = decode(target, prompt, 32, verify="dense")
    plain_out, plain = decode(target, prompt, 32, **common)
    covered_out, covered = decode(target, prompt, 32, prefill_candidates=4096, **common)
    assert covered_out.token_ids == plain_out.token_ids == dense.token_ids
    assert covered.kv_read_sparse == plain.kv_read_sparse
    calls: list[int] = []
    count = DustinDecoder._count_estimation

    def recording(self: Any, trace: Any, keys: int, q: int, chosen: Any) -> None:
        calls.append(keys)
        count(self, trace, keys, q, chosen)

    monkeypatch.setattr(DustinDecoder, "_count_estimation", recording)
    out, _ = decode(target, prompt, 32, prefill_candidates=32, **common)
    assert out.token_ids == dense.token_ids
    width = len(prompt) - 1
    assert calls[0] == candidate_keys_read(width - 8, 8, 16, 32, 4) < width


def test_covering_candidates_follow_a_token_tree_s_visibility() -> None:
    torch.manual_seed(3)
    query, keys = torch.randn(1, 9, 4, 32), torch.randn(1, 3, 100, 32)
    allowed = torch.ones(4, 100, dtype=torch.bool)
    allowed[:, 96:] = torch.tensor(
        [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 1, 1]], dtype=torch.bool
    )  # a root with two children, the second with a child
    exact = head_weights(MODULE, query, keys, [1, 5], allowed=allowed)
    covered = candidate_head_weights(MODULE, query, keys, [1, 5], 96, 16, 96, 4, allowed=allowed)
    assert torch.allclose(covered, exact, atol=1e-6)
    assert torch.all(covered[:, 1, 98:] == 0) and torch.all(covered[:, 3, 97] == 0)


def test_candidate_refresh_stays_dense_greedy_and_counts_each_non_final_check(
    target: Any, prompt: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At each dense check that does not end the generation, the estimation heads read the
    bounds, the candidates, the sinks and the check's own inputs (fewer keys than the cache);
    covering candidates change nothing."""
    common = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4}
    dense, _ = decode(target, prompt, 32, verify="dense")
    _, plain = decode(target, prompt, 32, **common)
    covered_out, covered = decode(target, prompt, 32, refresh_candidates=4096, **common)
    assert covered_out.token_ids == dense.token_ids
    assert covered.kv_read_sparse == plain.kv_read_sparse
    calls: list[tuple[int, int]] = []
    count = DustinDecoder._count_estimation

    def recording(self: Any, trace: Any, keys: int, q: int, chosen: Any) -> None:
        calls.append((keys, q))
        count(self, trace, keys, q, chosen)

    monkeypatch.setattr(DustinDecoder, "_count_estimation", recording)
    out, trace = decode(target, prompt, 32, refresh_candidates=32, **common)
    assert out.token_ids == dense.token_ids
    refreshes = calls[1:]  # the first is the prefill's plain estimate
    assert len(refreshes) == trace.dense_checks - 1 > 0
    assert calls[0][0] == len(prompt) - 1
    for keys, q in refreshes:
        bounds = keys - q - 4 - 32  # two per block of the cached positions
        assert bounds % 2 == 0 and (bounds // 2) * 16 >= len(prompt) - 1
        assert keys < len(prompt) + q
