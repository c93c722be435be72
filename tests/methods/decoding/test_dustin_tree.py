"""Dustin's near-tie branches: the token tree, the tree-masked dense check and what branching
changes (greedy output, checks, reads)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import DynamicCache

from docket.methods.decoding.attention import head_weights
from docket.methods.decoding.dustin.algorithm import (
    DustinDecoder,
    DustinSettings,
    Round,
    in_round,
    make_self_draft,
    register_attention,
)
from docket.methods.decoding.dustin.tree import TokenTree, common_prefix, compact_cache
from docket.methods.local.sampling import DecodeParams

EOS = 299


@pytest.fixture(scope="module")
def prompt() -> list[int]:
    return torch.randint(1, 298, (160,), generator=torch.Generator().manual_seed(1)).tolist()


def decode(target: Any, prompt: list[int], new: int, **settings: Any) -> tuple[Any, Any]:
    decoder = DustinDecoder(target, make_self_draft(target, 2), DustinSettings(**settings))
    params = DecodeParams(max_new_tokens=new, logprobs=True)
    return decoder.generate(prompt, params, {EOS}, lambda ids: str(ids))


def greedy(target: Any, prompt: list[int], new: int) -> list[int]:
    with torch.inference_mode():
        out = target.generate(torch.tensor([prompt]), max_new_tokens=new, do_sample=False)
    return list(out[0, len(prompt) :].tolist())


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


@pytest.mark.parametrize("budget", [0, 8, 32])
def test_branches_stay_dense_greedy_token_for_token(
    target: Any, prompt: list[int], budget: int
) -> None:
    """With branches on (every tentative token branches: margin 1e9), the tokens and logprobs
    are still the dense target's greedy ones."""
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


def test_sampling_ignores_branches(target: Any, prompt: list[int]) -> None:
    draft = make_self_draft(target, 2)
    settings = DustinSettings(budget=8, sinks=4, recent=8, refresh=4, branches=4)
    decoder = DustinDecoder(target, draft, settings)
    params = DecodeParams(max_new_tokens=16, temperature=1.0)
    rng = torch.Generator().manual_seed(0)
    _, trace = decoder.generate(prompt, params, {EOS}, lambda ids: str(ids), rng)
    assert trace.branches == 0 and trace.emitted == 16
