"""Dustin's near-tie branches: the token tree, the tree-masked dense check and what branching
changes (greedy output, checks, reads)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from transformers import DynamicCache

from docket.methods.decoding.attention import head_weights
from docket.methods.decoding.dustin.algorithm import (
    DustinDecoder,
    Round,
    in_round,
    make_self_draft,
    register_attention,
)
from docket.methods.decoding.dustin.experimental import ExperimentalDustinSettings
from docket.methods.decoding.dustin.tree import TokenTree, common_prefix, compact_cache
from docket.methods.local.sampling import DecodeParams
from tests.methods.decoding.dustin_support import EOS, decode, greedy


def test_the_tree_merges_prefixes_and_marks_drafts() -> None:
    # main: 5 7 9 then draft 11; branch 5 8 (runner-up at index 1); branch 5 7 9 repeats main
    tree = TokenTree.of_paths(3, [([5, 7, 9, 11], 3), ([5, 8], 2), ([5, 7, 9], 3)])
    assert tree.tokens == [3, 5, 7, 9, 11, 8]
    assert tree.parents == [-1, 0, 1, 2, 3, 1]
    assert tree.depths == [0, 1, 2, 3, 4, 2]
    assert tree.tentative == [True, True, True, True, False, True]
    seen = tree.visibility()
    assert seen[5].tolist() == [True, True, False, False, False, True]  # 8 sees 3, 5 and itself
    assert seen[4].tolist() == [True, True, True, True, True, False]
    # the target's argmax per node: after 5 it says 8 (the branch), after 8 it says 42
    predicted = [5, 8, 9, 11, 0, 42]
    assert tree.greedy_path(predicted) == ([0, 1, 5], 42)
    assert tree.greedy_path([5, 7, 9, 11, 13, 0]) == ([0, 1, 2, 3, 4], 13)
    assert tree.has_tentative_child(2) and not tree.has_tentative_child(3)  # 11 is a draft
    assert not tree.has_tentative_child(5)
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and common_prefix([], [1]) == 0


def test_compact_cache_moves_the_kept_path_next_to_its_prefix() -> None:
    cache = DynamicCache()
    keys = torch.arange(8.0).view(1, 1, 8, 1).repeat(1, 2, 1, 3)
    cache.update(keys, -keys, 0)
    compact_cache(cache, 2, [0, 3, 5])  # keep tree nodes 0, 3, 5 after 2 cached positions
    layer: Any = cache.layers[0]
    assert layer.keys[0, 0, :5, 0].tolist() == [0.0, 1.0, 2.0, 5.0, 7.0]
    assert layer.values[0, 1, :5, 0].tolist() == [-0.0, -1.0, -2.0, -5.0, -7.0]


def test_head_weights_keep_only_the_allowed_keys() -> None:
    class Module:
        num_key_value_groups = 1
        scaling = 1.0

    query = torch.randn(1, 2, 3, 4, generator=torch.Generator().manual_seed(0))
    key = torch.randn(1, 2, 5, 4, generator=torch.Generator().manual_seed(1))
    allowed = torch.tensor([[1, 1, 0, 0, 0], [1, 0, 1, 0, 1], [1, 1, 1, 1, 1]], dtype=torch.bool)
    weights = head_weights(Module(), query, key, allowed=allowed)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 3))
    assert float(weights[:, ~allowed].abs().max()) == 0.0
    assert float(weights[:, allowed].min()) > 0.0


def test_a_tree_check_gives_each_path_its_own_dense_logits(target: Any, prompt: list[int]) -> None:
    """One tree-masked forward over two paths that share a prefix gives, at every node, the
    logits a plain forward of that node's own path gives; without the tree's positions (every
    node at its flattened place) or without its mask (plain causal attention), the mutants,
    the branch's logits are wrong."""
    register_attention()
    target.set_attn_implementation("docket_dustin")
    context, root = prompt[:100], prompt[100]
    main, branch = [17, 18, 19, 20], [17, 25, 26]
    tree = TokenTree.of_paths(root, [(main, 4), (branch, 3)])

    def run(ids: list[int], positions: list[int] | None, state: Round | None) -> torch.Tensor:
        cache = DynamicCache(config=target.config)
        with torch.inference_mode():
            target(torch.tensor([context]), cache=cache, use_cache=True)
            extra = {} if positions is None else {"position_ids": torch.tensor([positions])}
            with in_round(state):
                out = target(torch.tensor([ids]), cache=cache, use_cache=True, **extra)
        return out.logits[0]

    state = Round("dense", tree=tree.visibility())
    positions = [len(context) + depth for depth in tree.depths]
    logits = run(tree.tokens, positions, state)
    for path in ([root, *main], [root, *branch]):
        nodes = [0]
        for token in path[1:]:
            nodes.append(tree.children[(nodes[-1], token)])
        alone = run(path, None, None)
        assert torch.allclose(logits[nodes], alone, atol=1e-4)
    branch_nodes = [tree.children[(1, 25)], tree.children[(tree.children[(1, 25)], 26)]]
    alone = run([root, *branch], None, None)
    for mutant in (
        run(tree.tokens, None, Round("dense", tree=tree.visibility())),
        run(tree.tokens, positions, Round("dense")),
    ):
        assert not torch.allclose(mutant[branch_nodes], alone[[2, 3]], atol=1e-3)


@pytest.mark.parametrize(
    ("budget", "grow", "rank"),
    [(0, "sparse", 2), (8, "sparse", 2), (32, "sparse", 2), (8, "copy", 4), (32, "copy", 2)],
)
def test_branches_stay_dense_greedy_token_for_token(
    target: Any, prompt: list[int], budget: int, grow: str, rank: int
) -> None:
    """With branches on (every tentative token branches: margin 1e9), grown by sparse rounds
    or copied from the parent path, through the runner-up or lower ranks, the tokens and
    logprobs are still the dense target's greedy ones."""
    dense, _ = decode(target, prompt, 40, verify="dense")
    sparse, trace = decode(
        target,
        prompt,
        40,
        budget=budget,
        sinks=4,
        recent=8,
        refresh=4,
        branches=8,
        branch_margin=1e9,
        branch_grow=grow,
        branch_rank=rank,
    )
    assert sparse.token_ids == dense.token_ids == greedy(target, prompt, 40)
    assert torch.allclose(
        torch.tensor([s.logprob for s in sparse.steps]),
        torch.tensor([s.logprob for s in dense.steps]),
        atol=1e-4,
    )
    assert trace.branches > 0 and sparse.metadata["branches"] == trace.branches


def test_branches_save_checks_and_cost_sparse_reads(target: Any, prompt: list[int]) -> None:
    """The ablation: on the random target (near-ties everywhere) branching lets checks pass
    through runner-ups (branch hits), so fewer dense checks are needed; its rounds are read
    (more sparse reads) but have no dense counterpart (the dense-equivalent reads of the main
    path's rounds do not grow)."""
    common = {"budget": 32, "sinks": 4, "recent": 8, "refresh": 4}
    _, off = decode(target, prompt, 40, **common)
    _, on = decode(target, prompt, 40, branches=4, branch_margin=0.5, **common)
    assert off.branches == off.branch_hits == 0
    assert on.branch_hits >= 1
    assert on.dense_checks < off.dense_checks
    assert on.kv_read_sparse > off.kv_read_sparse  # the branches' own sparse rounds
    assert on.kv_read_dense < off.kv_read_dense  # fewer main-path rounds, none for branches


def test_copied_branches_read_nothing_before_the_check(target: Any, prompt: list[int]) -> None:
    """`branch_grow=copy`: a branch is the parent path with one token swapped, so it costs no
    sparse round; the checks still pass through the swapped tokens (branch hits), so the
    decoding differs from no branches (the ablation); lower ranks (`branch_rank` 4) give
    more branches than the runner-up alone."""
    common = {"budget": 32, "sinks": 4, "recent": 8, "refresh": 4, "branch_margin": 0.5}
    _, off = decode(target, prompt, 40, **common)
    _, grown = decode(target, prompt, 40, branches=4, **common)
    _, copied = decode(target, prompt, 40, branches=32, branch_grow="copy", **common)
    _, ranked = decode(target, prompt, 40, branches=32, branch_grow="copy", branch_rank=4, **common)
    assert grown.branch_rounds > 0 and off.branch_rounds == 0
    assert copied.branches > 0 and copied.branch_rounds == 0
    assert ranked.branches > copied.branches and ranked.branch_rounds == 0
    assert copied.branch_hits >= 1 and ranked.branch_hits >= copied.branch_hits
    # a hit passes the dense token where the check would have failed: fewer failed checks
    assert copied.failed_checks < off.failed_checks
    assert copied.kv_read_sparse != off.kv_read_sparse


def test_sampling_ignores_branches(target: Any, prompt: list[int]) -> None:
    draft = make_self_draft(target, 2)
    settings = ExperimentalDustinSettings(budget=8, sinks=4, recent=8, refresh=4, branches=4)
    decoder = DustinDecoder(target, draft, settings)
    params = DecodeParams(max_new_tokens=16, temperature=1.0)
    rng = torch.Generator().manual_seed(0)
    _, trace = decoder.generate(prompt, params, {EOS}, lambda ids: str(ids), rng)
    assert trace.branches == 0 and trace.emitted == 16


def test_block_summaries_are_exact_where_a_block_is_flat() -> None:
    """A summary entry is the mean key and value of a block's unselected positions with the
    log of their count as bias: where those keys are equal, attention over the selected
    entries and the summaries is exactly attention over the whole cache; a fully selected
    block gets no weight."""
    from docket.methods.decoding.dustin.algorithm import block_summaries, block_sums

    torch.manual_seed(0)
    heads, block, blocks, dim = 2, 4, 5, 8
    keys = torch.randn(1, heads, blocks, 1, dim).expand(1, heads, blocks, block, dim).clone()
    keys = keys.reshape(1, heads, blocks * block, dim)
    selected = torch.tensor([0, 1, 2, 3, 6, 13])  # block 0 whole, one each in blocks 1 and 3
    keys[0, :, selected] = torch.randn(heads, len(selected), dim)  # selected keys differ
    values = torch.randn(1, heads, blocks * block, dim)
    store: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    sums = block_sums(store, 0, keys, values, block, blocks)
    assert torch.allclose(sums[0], keys[0].reshape(heads, blocks, block, dim).sum(dim=2))
    mean_key, mean_value, bias = block_summaries(keys, values, selected, sums, block)
    assert bias[0] == -math.inf
    assert torch.allclose(bias[1:], torch.log(torch.tensor([3.0, 4, 3, 4])))
    query = torch.randn(1, heads, 3, dim)
    exact = torch.nn.functional.scaled_dot_product_attention(query, keys, values)
    sub_key = torch.cat([keys[:, :, selected], mean_key], dim=2)
    sub_value = torch.cat([values[:, :, selected], mean_value], dim=2)
    additive = torch.cat([torch.zeros(len(selected)), bias])[None, None, None]
    summarised = torch.nn.functional.scaled_dot_product_attention(
        query, sub_key, sub_value, attn_mask=additive.expand(1, heads, 3, -1)
    )
    assert torch.allclose(summarised, exact, atol=1e-5)
    dropped = torch.nn.functional.scaled_dot_product_attention(
        query, keys[:, :, selected], values[:, :, selected]
    )
    assert not torch.allclose(dropped, exact, atol=1e-2)  # without summaries it is not


def test_summaries_stay_dense_greedy_and_change_the_sparse_pass(
    target: Any, prompt: list[int]
) -> None:
    """With `summary_block` the output is still the dense target's (the checks decide); the
    sparse rounds read one entry more per block and agree with dense more or less often (the
    ablation: the mechanism reaches the sparse pass)."""
    common = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4}
    dense, _ = decode(target, prompt, 40, verify="dense")
    off_out, off = decode(target, prompt, 40, **common)
    on_out, on = decode(target, prompt, 40, summary_block=16, **common)
    assert on_out.token_ids == off_out.token_ids == dense.token_ids
    assert on.check_accepted != off.check_accepted
    with pytest.raises(ValueError, match="summary_block needs select_by=layer"):
        decode(target, prompt, 4, summary_block=16, select_by="group")
