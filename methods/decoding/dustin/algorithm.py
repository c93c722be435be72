"""Dustin: speculative decoding with sparse verification for long contexts (`-M method=dustin`).

The paper: arXiv 2606.24957 (only its abstract and summaries were read; no code). Stated
there: verification is the bottleneck of long-context speculative decoding because the target
reads its whole KV cache; Dustin scores context tokens by combining the draft's *lookahead*
attention with the target's *historical* attention, estimated on a minimal subset of heads,
and verifies against the selected entries only. The rest is our reconstruction (the paper leaves
it open), with every choice exposed as a knob (`settings.DustinSettings`; the knobs only our
experiments use are in `experimental.ExperimentalDustinSettings`):

- draft: the target's first `draft_layers` layers with its final norm and LM head
  (self-speculative, same tokenizer; `make_self_draft`), or `-M draft=DIR` (a small model with
  the same vocabulary); it proposes `draft_tokens` (γ) tokens per round;
- lookahead score: the draft's post-softmax attention of its γ proposal queries over the
  context, summed over its layers and heads;
- historical score: the target's attention mass per cached position on `est_heads` (layer,
  head) pairs spread over the layers (at least one per layer up to 32 layers), an EMA (`decay`)
  per layer, initialised from the last prompt queries and refreshed at every dense check;
- score of layer l = `mix` · lookahead_l/Σ + (1 − `mix`) · history_l/Σ, where the self-draft's
  layer l gives lookahead_l for its own layers (the same modules as the target's) and the mean
  of its layers for the rest; a layer without estimation heads takes the mean history of those
  with them. Each layer reads its own index set: sinks (`sinks` first positions) ∪ the recent
  window (`recent` last positions) ∪ its top-`budget` scored positions, plus the new tokens;
- lossless: tokens accepted by the sparse pass are only *tentative*. Every `refresh` sparse
  rounds (and before EOS or the token limit is emitted) one dense pass re-runs the tentative
  tokens from the last dense-verified position, reading the whole cache: its logits verify them
  as speculative decoding verifies drafts (greedy: longest prefix equal to the dense argmax,
  then the dense token; sampling: accept with min(1, p_dense/p_sparse)), its keys and values
  replace the sparse pass's in the cache, and its queries refresh the historical attention.
  Only dense-verified tokens are emitted, so the output is the dense target's (at greedy,
  token for token); the sparse pass decides only how many dense passes are needed.

`verify=dense` is vanilla speculative decoding (the target reads everything): at greedy it is
exactly transformers' assisted generation (`generate(assistant_model=...)`, constant γ, no
confidence stop). With a budget that covers the context, sparse verification gathers every
entry, so every tentative token passes its check. Greedy acceptance at temperature 0;
speculative sampling (accept with min(1, p/q), resample from (p − q)+) otherwise.

Attention goes through transformers' attention interface (`docket_dustin`): outside a Dustin
round it is plain `sdpa`, so the shared (cached) model object behaves as before.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from docket.methods.local.sampling import (
    DecodeParams,
    Generation,
    GenerationInterrupted,
    TokenStep,
    filter_logits,
    forward_style,
    token_step,
)

from ..attention import head_weights, register, sdpa
from .candidates import candidate_head_weights, candidate_keys_read
from .experimental import ExperimentalDustinSettings
from .settings import DustinSettings
from .tree import TokenTree, common_prefix, compact_cache

ATTENTION = "docket_dustin"

# --- the per-round state the attention function reads ------------------------------------------


@dataclass
class Round:
    """What the attention function does in the current forward.

    Every per-layer tensor has `groups` rows per layer (1: one row per layer; the key-value
    heads: one row per key-value group, row `layer · groups + group`). Mode `draft`: plain
    attention, plus the draft's attention over the first `context` positions summed per row
    into `lookahead` (`[layers · groups, context]`); `sparse`: each key-value group of layer l
    reads the cached positions of its row of `selected` (sorted) plus the new tokens; `dense`
    (a check) and `prefill`: plain attention, plus the attention of `est_heads` (the last
    `tail` queries in a prefill) summed per row into `history_now` (`[layers · groups, keys]`);
    a check over a token tree has its `[new, new]` visibility in `tree` (every new token sees
    the whole cache and its ancestors);
    with `defer`, a dense check only keeps what that needs in `deferred`
    (`estimate_deferred` adds it later).
    """

    mode: Literal["draft", "sparse", "dense", "prefill"]
    context: int = 0
    selected: torch.Tensor | None = None
    lookahead: torch.Tensor | None = None
    est_heads: dict[int, list[int]] = field(default_factory=dict)
    history_now: torch.Tensor | None = None
    tail: int = 8
    groups: int = 1
    #: A prefill or dense check whose estimate reads only candidate blocks
    #: (`prefill_candidates`, `refresh_candidates`): the candidate positions per key-value
    #: group (0: every key), the block size, the sinks.
    candidates: int = 0
    block: int = 16
    sinks: int = 0
    tree: torch.Tensor | None = None
    #: Sparse rounds with tail samples: the column of `selected` where each row's samples
    #: start, and each sample's logit bias (`[rows, samples]`: the log of the mass it
    #: stands for).
    sampled_from: int = 0
    sample_bias: torch.Tensor | None = None
    #: Sparse rounds with summaries: the block size, the positions with dense keys and
    #: values, and each layer's running block sums (`{layer: (keys, values)}`).
    summary_block: int = 0
    dense_length: int = 0
    block_sums: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None
    defer: bool = False
    deferred: list[tuple[Any, torch.Tensor, torch.Tensor, list[int], int]] = field(
        default_factory=list
    )


def estimate_weights(
    state: Round,
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    heads: list[int],
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """The estimating `heads`' attention `[heads, queries, keys]` of the last `query` rows
    (the keys end with their own entries): on candidate blocks with `state.candidates`, else
    over every key (causal, or as `allowed` marks).

    Args:
        state: The prefill or dense round.
        module: The attention module.
        query: The estimating queries `[1, heads, queries, dim]`.
        key: The layer's keys.
        heads: The query heads wanted.
        allowed: `[queries, keys]` visibility of a token tree's check (None: causal).

    Returns:
        Float32 attention weights.
    """
    prior = key.shape[2] - query.shape[2]
    if state.candidates:
        return candidate_head_weights(
            module, query, key, heads, prior, state.block, state.candidates, state.sinks, allowed
        )
    if allowed is None:
        return head_weights(module, query, key, heads, prior)
    return head_weights(module, query, key, heads, allowed=allowed)


def estimate_deferred(state: Round) -> None:
    """Add a deferred dense check's estimation heads' attention to `state.history_now`.

    Args:
        state: A dense round run with `defer`, whose keys are still in the cache buffers.
    """
    assert state.history_now is not None
    for module, query, key, heads, _ in state.deferred:
        allowed = None if state.tree is None else tree_mask(state.tree, key)
        weights = estimate_weights(state, module, query, key, heads, allowed)
        layer = int(getattr(module, "layer_idx", 0))
        add_mass(state.history_now, state.groups, module, layer, heads, weights.sum(dim=1))
    state.deferred.clear()


def add_mass(
    rows: torch.Tensor,
    groups: int,
    module: Any,
    layer: int,
    heads: list[int],
    mass: torch.Tensor,
) -> None:
    """Add per-head attention mass to a layer's rows of a per-row tensor.

    Args:
        rows: `[layers · groups, positions]` accumulator (lookahead or history).
        groups: Rows per layer: 1 (all heads into the layer's row) or the key-value heads
            (each head into its key-value group's row).
        module: The attention module (its `num_key_value_groups` maps heads to groups).
        layer: The layer index.
        heads: The query heads `mass` holds, in order.
        mass: `[len(heads), keys]` attention mass per head (keys beyond `rows` are dropped).
    """
    width = min(mass.shape[-1], rows.shape[1])
    if groups == 1:
        if layer < rows.shape[0]:
            rows[layer, :width] += mass.sum(dim=0)[:width]
        return
    per_group = max(int(getattr(module, "num_key_value_groups", 1)), 1)
    for index, head in enumerate(heads):
        row = layer * groups + head // per_group
        if row < rows.shape[0]:
            rows[row, :width] += mass[index, :width]


_ROUND: contextvars.ContextVar[Round | None] = contextvars.ContextVar("dustin_round", default=None)


@contextlib.contextmanager
def in_round(state: Round | None) -> Iterator[None]:
    """Run the model's forwards inside `with` as round `state` of the attention function.

    Args:
        state: The round (None: plain sdpa attention, the dense verifier).

    Yields:
        Nothing; the previous round is restored on exit.
    """
    token = _ROUND.set(state)
    try:
        yield
    finally:
        _ROUND.reset(token)


def dustin_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """transformers attention function `docket_dustin` (batch 1): sdpa outside a round; in a
    round, also records draft / historical attention, or verifies on the selected entries."""
    state = _ROUND.get()
    if state is None or query.shape[0] != 1:
        return sdpa(module, query, key, value, attention_mask, **kwargs)
    layer = int(getattr(module, "layer_idx", 0))
    q_len, kv_len = query.shape[2], key.shape[2]
    cached = kv_len - q_len
    if state.mode == "draft":
        rows = state.lookahead
        if q_len <= 64 and rows is not None and layer * state.groups < rows.shape[0]:
            weights = head_weights(module, query, key, None, cached)
            mass = weights[..., : state.context].sum(dim=1)
            add_mass(rows, state.groups, module, layer, list(range(mass.shape[0])), mass)
        return sdpa(module, query, key, value, attention_mask, **kwargs)
    if state.mode in ("prefill", "dense"):
        if state.tree is not None:
            attention_mask = tree_mask(state.tree, key)[None, None]
        heads = state.est_heads.get(layer)
        if heads and state.history_now is not None:
            tail = min(state.tail, q_len) if state.mode == "prefill" else q_len
            if state.defer:
                state.deferred.append((module, query, key, heads, kv_len - tail))
                return sdpa(module, query, key, value, attention_mask, **kwargs)
            allowed = None if state.tree is None else tree_mask(state.tree, key)
            weights = estimate_weights(state, module, query[:, :, -tail:], key, heads, allowed)
            add_mass(state.history_now, state.groups, module, layer, heads, weights.sum(dim=1))
        return sdpa(module, query, key, value, attention_mask, **kwargs)
    assert state.selected is not None
    sub_key, sub_value = _gather_selected(state, layer, key, value, cached)
    reads = sub_key.shape[2] - q_len
    mask = torch.ones(q_len, reads + q_len, dtype=torch.bool, device=key.device)
    mask[:, reads:] = torch.ones(q_len, q_len, dtype=torch.bool, device=key.device).tril()
    if state.summary_block and state.block_sums is not None and state.groups == 1:
        blocks = min(state.dense_length, cached) // state.summary_block
        if blocks:
            sums = block_sums(state.block_sums, layer, key, value, state.summary_block, blocks)
            selected = state.selected[min(layer, state.selected.shape[0] - 1)]
            mean_key, mean_value, bias = block_summaries(
                key, value, selected, sums, state.summary_block
            )
            sub_key = torch.cat([sub_key[:, :, :reads], mean_key, sub_key[:, :, reads:]], dim=2)
            sub_value = torch.cat(
                [sub_value[:, :, :reads], mean_value, sub_value[:, :, reads:]], dim=2
            )
            additive = torch.zeros(q_len, reads + blocks + q_len, device=key.device)
            additive[:, reads : reads + blocks] = bias
            additive[:, reads + blocks :] = torch.where(mask[:, reads:], 0.0, -math.inf)
            return sdpa(
                module, query, sub_key, sub_value, additive.to(query.dtype)[None, None], **kwargs
            )
    if state.sample_bias is not None and state.sampled_from < reads:
        groups = state.groups
        bias = state.sample_bias[layer * groups : (layer + 1) * groups]  # [groups, samples]
        additive = torch.where(mask, 0.0, -math.inf).expand(groups, -1, -1).clone()
        additive[:, :, state.sampled_from : reads] = bias[:, None, :]
        if groups > 1:  # each query head takes its key-value group's biases
            per_group = query.shape[1] // groups
            additive = additive.repeat_interleave(per_group, dim=0)
        return sdpa(module, query, sub_key, sub_value, additive.to(query.dtype)[None], **kwargs)
    return sdpa(module, query, sub_key, sub_value, mask[None, None], **kwargs)


def block_sums(
    store: dict[int, tuple[torch.Tensor, torch.Tensor]],
    layer: int,
    key: torch.Tensor,
    value: torch.Tensor,
    block: int,
    blocks: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's key and value sums over its first `blocks` blocks of `block` positions
    (`[kv heads, blocks, dim]` each, float32), kept in `store` and extended only by the
    blocks completed since: each dense entry is summed once, when its block is complete.

    Args:
        store: `{layer: (key sums, value sums)}` of this generation.
        layer: The layer index.
        key: The layer's cached keys `[1, kv heads, positions, dim]` (dense below the blocks).
        value: Its values.
        block: Positions per block.
        blocks: Complete blocks wanted.

    Returns:
        The key sums and value sums of blocks `0 … blocks − 1`.
    """
    old_keys, old_values = store.get(layer, (None, None))
    done = 0 if old_keys is None else int(old_keys.shape[1])
    if done >= blocks and old_keys is not None and old_values is not None:
        return old_keys[:, :blocks], old_values[:, :blocks]
    heads, dim = key.shape[1], key.shape[3]
    fresh_keys = key[0, :, done * block : blocks * block].float()
    fresh_values = value[0, :, done * block : blocks * block].float()
    new_keys = fresh_keys.reshape(heads, blocks - done, block, dim).sum(dim=2)
    new_values = fresh_values.reshape(heads, blocks - done, block, value.shape[3]).sum(dim=2)
    if old_keys is not None and old_values is not None:
        new_keys = torch.cat([old_keys, new_keys], dim=1)
        new_values = torch.cat([old_values, new_values], dim=1)
    store[layer] = (new_keys, new_values)
    return new_keys, new_values


def block_summaries(
    key: torch.Tensor,
    value: torch.Tensor,
    selected: torch.Tensor,
    sums: tuple[torch.Tensor, torch.Tensor],
    block: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One summary entry per block: the mean key and value of its unselected positions and
    the log of their count as a logit bias (−inf for a block read in full), so that a query
    whose logits are equal over a block's unselected keys gets exactly their attention mass.

    Args:
        key: The layer's keys `[1, kv heads, positions, dim]`.
        value: Its values.
        selected: The sorted positions the round reads exactly (their keys and values are
            gathered anyway; they are taken out of their blocks' sums).
        sums: `block_sums` of the complete blocks.
        block: Positions per block.

    Returns:
        Mean keys and values `[1, kv heads, blocks, dim]` (the key's dtype) and the bias
        `[blocks]` (float32).
    """
    key_sums, value_sums = sums
    blocks = key_sums.shape[1]
    inside = selected[selected < blocks * block]
    owner = torch.div(inside, block, rounding_mode="floor")
    key_sums = key_sums.index_add(1, owner, -key[0, :, inside].float())
    value_sums = value_sums.index_add(1, owner, -value[0, :, inside].float())
    count = block - torch.bincount(owner, minlength=blocks).to(key_sums.dtype)
    scale = count.clamp(min=1.0)[None, :, None]
    mean_key = (key_sums / scale).to(key.dtype)[None]
    mean_value = (value_sums / scale).to(value.dtype)[None]
    bias = torch.where(count > 0, count.clamp(min=1.0).log(), -math.inf)
    return mean_key, mean_value, bias


def tree_mask(tree: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """`[new, keys]` booleans of a tree check: every cached key, then the tree's visibility.

    Args:
        tree: `[new, new]` visibility among the new tokens (a node sees its ancestors).
        key: The layer's keys (`[1, heads, keys, dim]`), the new tokens' last.

    Returns:
        The mask the attention of the new tokens uses.
    """
    new = tree.shape[0]
    cached = torch.ones(new, key.shape[2] - new, dtype=torch.bool, device=key.device)
    return torch.cat([cached, tree.to(key.device)], dim=1)


def _gather_selected(
    state: Round, layer: int, key: torch.Tensor, value: torch.Tensor, cached: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The keys and values a sparse round's layer reads: its selected cached positions (one
    set for the layer, or one per key-value group) followed by the new tokens'."""
    kv_len = key.shape[2]
    new = torch.arange(cached, kv_len, device=key.device)
    groups = state.groups
    assert state.selected is not None
    if groups > 1 and key.shape[1] != groups:
        raise ValueError(
            f"-M method=dustin: select_by=group expects {groups} key-value heads in layer "
            f"{layer}, the keys have {key.shape[1]}"
        )
    if groups == 1:
        selected = state.selected[min(layer * groups, state.selected.shape[0] - 1)]
        keep = torch.cat([selected, new])
        return key.index_select(2, keep), value.index_select(2, keep)
    rows = state.selected[layer * groups : (layer + 1) * groups]
    keep = torch.cat([rows, new.expand(groups, -1)], dim=1)[None, :, :, None]
    sub_key = key.gather(2, keep.expand(-1, -1, -1, key.shape[3]))
    sub_value = value.gather(2, keep.expand(-1, -1, -1, value.shape[3]))
    return sub_key, sub_value


def register_attention() -> None:
    """Register `docket_dustin` with transformers' attention interface (idempotent)."""
    register(ATTENTION, dustin_attention)


# --- draft models -----------------------------------------------------------------------------


def make_self_draft(target: Any, layers: int) -> Any:
    """A causal LM made of the target's first `layers` decoder layers, its final norm and LM
    head (the same module objects: no extra weights); a Llama-style `model.layers` is needed."""
    inner: Any = getattr(target, "model", None)
    stack = getattr(inner, "layers", None)
    if stack is None or not hasattr(inner, "norm") or not hasattr(target, "lm_head"):
        raise ValueError(
            "-M method=dustin: -M draft_layers needs a Llama-style model (model.layers, "
            "model.norm, lm_head); pass -M draft=DIR instead"
        )
    if not 1 <= layers < len(stack):
        raise ValueError(
            f"-M method=dustin: -M draft_layers={layers} must be in [1, {len(stack) - 1}] "
            f"(the target has {len(stack)} layers)"
        )
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = layers
    if getattr(config, "layer_types", None):
        config.layer_types = list(config.layer_types)[:layers]
    with torch.device("meta"):
        draft = type(target)(config)
    draft.model.embed_tokens = inner.embed_tokens
    draft.model.layers = torch.nn.ModuleList(list(stack)[:layers])
    draft.model.norm = inner.norm
    if hasattr(inner, "rotary_emb"):
        draft.model.rotary_emb = inner.rotary_emb
    draft.lm_head = target.lm_head
    draft.generation_config = copy.deepcopy(target.generation_config)
    leftover = [n for n, t in [*draft.named_parameters(), *draft.named_buffers()] if t.is_meta]
    if leftover:
        raise ValueError(f"-M method=dustin: cannot share {leftover[0]} with the draft")
    draft.eval()
    return draft


def assisted_generation_draft(draft: Any, draft_tokens: int) -> Any:
    """Configure `draft` for transformers' assisted generation with a constant γ and no
    confidence stop, i.e. the same rounds as Dustin's dense verification."""
    draft.generation_config.num_assistant_tokens = draft_tokens
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0
    return draft


# --- a KV cache that grows in place -----------------------------------------------------------


def growing_cache() -> Any:
    """A new `GrowingCache` (see `_growing_cache_class`)."""
    return _growing_cache_class()()


@functools.cache
def _growing_cache_class() -> Any:
    """A transformers `DynamicCache` whose layers write new entries into a preallocated buffer
    (capacity doubling) instead of concatenating: appending γ + 1 entries costs O(γ), not a
    copy of the whole cache, so a long context's verification step pays only for what its
    attention reads. Cropping (rejected drafts) just shortens the view."""
    from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

    class GrowingLayer(DynamicLayer):
        buffer_keys: torch.Tensor | None = None
        buffer_values: torch.Tensor | None = None

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            length = self.get_seq_length()
            needed = length + key_states.shape[-2]
            if self.buffer_keys is None or self.buffer_keys.shape[-2] < needed:
                capacity = max(
                    needed, 2 * (0 if self.buffer_keys is None else self.buffer_keys.shape[-2]), 64
                )
                shape = (*key_states.shape[:-2], capacity, key_states.shape[-1])
                keys = key_states.new_empty(shape)
                values = value_states.new_empty((*shape[:-1], value_states.shape[-1]))
                if length and self.keys is not None and self.values is not None:
                    keys[..., :length, :] = self.keys
                    values[..., :length, :] = self.values
                self.buffer_keys, self.buffer_values = keys, values
            buffer_keys, buffer_values = self.buffer_keys, self.buffer_values
            assert buffer_keys is not None and buffer_values is not None
            buffer_keys[..., length:needed, :] = key_states
            buffer_values[..., length:needed, :] = value_states
            keys, values = buffer_keys[..., :needed, :], buffer_values[..., :needed, :]
            self.keys, self.values = keys, values
            return keys, values

    class GrowingCache(DynamicCache):
        def __init__(self) -> None:
            Cache.__init__(self, layer_class_to_replicate=GrowingLayer)

    return GrowingCache


# --- selection --------------------------------------------------------------------------------


def select_positions(
    scores: torch.Tensor, context: int, budget: int, sinks: int, recent: int
) -> torch.Tensor:
    """Sorted positions the verifier reads: the first `sinks`, the last `recent` and the
    `budget` best-scored of the rest (all positions when they fit)."""
    device = scores.device
    if sinks + recent + budget >= context:
        return torch.arange(context, device=device)
    middle_start, middle_end = min(sinks, context), max(context - recent, min(sinks, context))
    middle = scores[middle_start:middle_end]
    top = torch.topk(middle, min(budget, middle.shape[0])).indices + middle_start
    fixed = torch.cat(
        [
            torch.arange(middle_start, device=device),
            torch.arange(middle_end, context, device=device),
        ]
    )
    return torch.sort(torch.cat([fixed, top])).values


def select_per_layer(
    scores: torch.Tensor, context: int, budget: int, sinks: int, recent: int
) -> torch.Tensor:
    """`select_positions` for every row of `scores` (`[layers, context]`) at once.

    Args:
        scores: One score row per layer.
        context: Cached positions.
        budget: Top-scored positions each layer reads beyond its sinks and recent window.
        sinks: First positions always read.
        recent: Last positions always read.

    Returns:
        `[layers, reads]` sorted positions, the same count in every layer.
    """
    rows = scores.shape[0]
    device = scores.device
    if sinks + recent + budget >= context:
        return torch.arange(context, device=device).expand(rows, context)
    middle_start = min(sinks, context)
    middle_end = max(context - recent, middle_start)
    top = torch.topk(scores[:, middle_start:middle_end], budget, dim=-1).indices + middle_start
    fixed = torch.cat(
        [
            torch.arange(middle_start, device=device),
            torch.arange(middle_end, context, device=device),
        ]
    ).expand(rows, -1)
    return torch.sort(torch.cat([fixed, top], dim=-1), dim=-1).values


def stratified_tail(
    selected: torch.Tensor,
    context: int,
    count: int,
    generator: torch.Generator,
    proposal: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A stratified sample of each row's unselected positions, and the logit bias that makes
    it an estimate of their attention.

    Each row's `rest` unselected positions (in order) get a sampling density p: uniform, or
    with `proposal` half uniform and half proportional to the proposal's scores. The unit
    interval of p's cumulative sum is cut into `count` equal strata and one position is drawn
    in each; a sample i with logit bias −log(count · p_i) stands for the mass p_i covers, so
    the softmax over the selected keys and the weighted samples is the ratio estimate of the
    full softmax (numerator and denominator; stratified importance sampling, as in
    sampling-based sparse attention: MagicPIG, vAttention). Uniform strata are runs of
    `rest / count` positions (each sample stands for its run); drawing inside strata, not at a
    fixed stride, keeps a periodic context (repeated filler) from aliasing with the sample.

    Args:
        selected: `[rows, reads]` positions each row reads exactly (disjoint within a row).
        context: Cached positions.
        count: Samples per row (at most the unselected count).
        generator: The draws' generator (CPU; seeded per generation, so runs repeat).
        proposal: `[rows, context]` non-negative scores, or None (uniform).

    Returns:
        `[rows, count']` sampled positions (count' = min(count, rest)) and `[rows, count']`
        biases (float32).
    """
    rows = selected.shape[0]
    device = selected.device
    rest = context - selected.shape[1]
    count = min(count, rest)
    if count <= 0:
        return selected.new_zeros(rows, 0), torch.zeros(rows, 0, device=device)
    taken = torch.zeros(rows, context, dtype=torch.int8, device=device)
    taken.scatter_(1, selected, 1)
    unselected = torch.argsort(taken, dim=1, stable=True)[:, :rest]
    density = torch.full((rows, rest), 1.0 / rest, device=device)
    if proposal is not None:
        scores = torch.gather(proposal.float().clamp_min(0.0), 1, unselected)
        totals = scores.sum(dim=1, keepdim=True)
        density = torch.where(
            totals > 0, 0.5 * density + 0.5 * scores / totals.clamp_min(1e-30), density
        )
    cumulative = torch.cumsum(density, dim=1)
    cumulative = cumulative / cumulative[:, -1:]
    jitter = torch.rand(rows, count, generator=generator).to(device)
    points = (torch.arange(count, device=device)[None, :] + jitter) / count
    index = torch.searchsorted(cumulative, points).clamp(max=rest - 1)
    bias = -torch.log(count * torch.gather(density, 1, index))
    return torch.gather(unselected, 1, index), bias


def layer_scores(
    lookahead: torch.Tensor,
    history: torch.Tensor,
    mix: float,
    draft_rows: int,
    share: float = 0.0,
    groups: int = 1,
) -> torch.Tensor:
    """Each target layer's selection score: `mix` · its normalised lookahead + (1 − `mix`) · its
    normalised history, blended with the mean over layers by `share`.

    Args:
        lookahead: `[draft layers, context]` draft attention (rows beyond `draft_rows` unused).
        history: `[layers, context]` historical attention; all-zero rows (layers without
            estimation heads) take the mean of the others.
        mix: Weight of the lookahead.
        draft_rows: Leading rows of `lookahead` that are the target's own layers (the
            self-draft); 0 for a separate draft, whose mean row then serves every layer.
        share: Weight of the layers' mean score in each layer's (0: each layer its own, 1:
            one score for all).
        groups: Rows per layer (key-value groups; 1: one row per layer). A row without
            history first takes the mean of its own layer's rows that have one.

    Returns:
        `[layers, context]` scores (`[layers · groups, context]` with groups).
    """
    layers = history.shape[0]
    ahead = _row_normalised(lookahead)
    mean_ahead = ahead.mean(dim=0, keepdim=True).expand(layers, -1).clone()
    rows = min(draft_rows, layers, ahead.shape[0])
    mean_ahead[:rows] = ahead[:rows]
    past = fill_from_layer(_row_normalised(history), groups)
    known = past.sum(dim=-1) > 0
    if bool(known.any()) and not bool(known.all()):
        past[~known] = past[known].mean(dim=0)
    own = mix * mean_ahead + (1 - mix) * past
    return (1 - share) * own + share * own.mean(dim=0, keepdim=True)


def fill_from_layer(rows: torch.Tensor, groups: int) -> torch.Tensor:
    """Rows that are all zero take the mean of their own layer's non-zero rows.

    Args:
        rows: `[layers · groups, positions]` (row `layer · groups + group`).
        groups: Rows per layer (1: returned unchanged).

    Returns:
        A copy with each empty row of a layer that has a non-empty one filled.
    """
    if groups <= 1 or rows.shape[0] % groups:
        return rows
    filled = rows.clone()
    by_layer = filled.view(rows.shape[0] // groups, groups, -1)
    have = by_layer.sum(dim=-1) > 0
    counts = have.sum(dim=1, keepdim=True)
    means = by_layer.sum(dim=1) / counts.clamp_min(1)
    fill = (~have) & (counts > 0)
    by_layer[fill] = means[:, None, :].expand(-1, groups, -1)[fill]
    return filled


def with_successors(scores: torch.Tensor, count: int) -> torch.Tensor:
    """Each position's score raised to the best of the `count` positions before it.

    A head that copies reads, at the next step, the position after the one it read (the next
    digit of a key), which the history and the draft have not scored yet.

    Args:
        scores: `[layers, context]` selection scores.
        count: How many following positions inherit a position's score (0: unchanged).

    Returns:
        The raised scores, the same shape.
    """
    raised = scores
    for shift in range(1, min(count, scores.shape[-1] - 1) + 1):
        before = torch.nn.functional.pad(scores[..., :-shift], (shift, 0))
        raised = torch.maximum(raised, before)
    return raised


def decayed_history(
    history: torch.Tensor, now: torch.Tensor, length: int, decay: float, groups: int
) -> torch.Tensor:
    """The history after a dense check: an EMA of the checks' attention mass.

    Args:
        history: `[rows, positions]` the history so far (positions beyond it count as 0).
        now: `[rows, positions]` the check's attention mass per cached position.
        length: Positions kept (the dense-verified cache).
        decay: Weight of the old history.
        groups: Rows per layer (an empty group row of `now` takes its layer's mean).

    Returns:
        `[rows, length]`: `decay` · history + (1 − `decay`) · `now` normalised per row.
    """
    known = history[:, :length]
    if known.shape[1] < length:
        known = torch.nn.functional.pad(known, (0, length - known.shape[1]))
    fresh = fill_from_layer(_row_normalised(now[:, :length]), groups)
    return decay * known + (1 - decay) * fresh


def _row_normalised(values: torch.Tensor) -> torch.Tensor:
    totals = values.sum(dim=-1, keepdim=True)
    return torch.where(totals > 0, values / totals.clamp_min(1e-30), values)


def _estimate_keys(state: Round, prior: int, queries: int) -> int:
    """Keys per key group an estimate of `queries` queries after `prior` cached entries reads:
    every one, or the candidates' (`candidate_keys_read`)."""
    if not state.candidates:
        return prior + queries
    return candidate_keys_read(prior, queries, state.block, state.candidates, state.sinks)


def estimation_heads(layers: int, heads: int, count: int) -> dict[int, list[int]]:
    """`count` (layer, head) pairs spread evenly over the layers (round-robin over heads)."""
    if count <= 0:
        return {}
    chosen: dict[int, list[int]] = {}
    total = min(count, layers * heads)
    for i in range(total):
        layer = (i * layers) // total
        head = (i * 7) % heads
        while head in chosen.get(layer, []):
            head = (head + 1) % heads
        chosen.setdefault(layer, []).append(head)
    return chosen


def normalised(values: torch.Tensor) -> torch.Tensor:
    total = float(values.sum())
    return values / total if total > 0 else values


# --- the decoding loop ------------------------------------------------------------------------


@dataclass
class DustinTrace:
    """Counters of one generation (attention reads in KV entries summed over layers).

    `kv_read_sparse` counts everything the verifier reads: the sparse rounds' selected entries,
    the dense checks' whole cache and the estimation heads' second read of their keys;
    `kv_read_dense` what dense verification would read in the sparse rounds.
    """

    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    emitted: int = 0
    target_forwards: int = 0
    draft_forwards: int = 0
    dense_checks: int = 0
    failed_checks: int = 0
    escalations: int = 0
    branches: int = 0
    branch_hits: int = 0
    branch_rounds: int = 0
    checked: int = 0
    check_accepted: int = 0
    kv_read_dense: int = 0
    kv_read_sparse: int = 0
    key_read_estimation: int = 0
    flops_dense: float = 0.0
    flops_sparse: float = 0.0
    bytes_dense: float = 0.0
    bytes_sparse: float = 0.0
    context_at_end: int = 0

    def as_metadata(self) -> dict[str, Any]:
        """Logged per call: acceptance, tokens per target forward, attention work saved."""
        return {
            "rounds": self.rounds,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "acceptance_rate": round(self.accepted / self.drafted, 4) if self.drafted else None,
            "tokens_per_forward": round(self.emitted / self.rounds, 4) if self.rounds else None,
            "target_forwards": self.target_forwards,
            "draft_forwards": self.draft_forwards,
            "nfe": self.target_forwards,
            "dense_checks": self.dense_checks,
            "failed_checks": self.failed_checks,
            "escalations": self.escalations,
            "branches": self.branches,
            "branch_hits": self.branch_hits,
            "branch_rounds": self.branch_rounds,
            "check_acceptance": (
                round(self.check_accepted / self.checked, 4) if self.checked else None
            ),
            "attention_flops_saved": (
                round(1 - self.flops_sparse / self.flops_dense, 4) if self.flops_dense else 0.0
            ),
            "attention_bytes_saved": (
                round(1 - self.bytes_sparse / self.bytes_dense, 4) if self.bytes_dense else 0.0
            ),
            "kv_entries_read": self.kv_read_sparse,
            "kv_entries_dense": self.kv_read_dense,
            "context_tokens": self.context_at_end,
        }


@dataclass
class _Progress:
    """Where one generation stands: `dense_length` cache entries hold the dense pass's keys
    and values; `tentative` tokens (after the dense-verified ones) passed only a sparse
    check, with their sparse distributions (sampling), their sparse (top-1 − top-2 logit,
    runner-up) when branches are on (greedy), the sparse rounds since a check, the budget of
    the sparse rounds and whether a check of this generation has failed."""

    dense_length: int
    tentative: list[int] = field(default_factory=list)
    tentative_probs: list[torch.Tensor] = field(default_factory=list)
    alternatives: list[list[tuple[float, int]]] = field(default_factory=list)
    since_check: int = 0
    budget: int = 0
    failed: bool = False


@dataclass
class Geometry:
    """The attention shape of a model's text decoder (what the cost counters need)."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    bytes_per: int


def geometry_of(model: Any) -> Geometry:
    """The attention shape of `model`'s text decoder.

    Args:
        model: A transformers causal LM (or a VLM, whose text decoder is read).

    Returns:
        Its layers, query and key-value heads, head size and bytes per element.
    """
    config = model.config.get_text_config(decoder=True)
    heads = int(config.num_attention_heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    dtype = getattr(model, "dtype", torch.float32)
    return Geometry(
        int(config.num_hidden_layers), heads, kv_heads, head_dim, torch.finfo(dtype).bits // 8
    )


class DustinDecoder:
    """Speculative decoding of `target` with `draft`, dense or sparse-then-dense verification."""

    def __init__(self, target: Any, draft: Any, settings: DustinSettings) -> None:
        register_attention()
        self.target = target
        self.draft = draft
        #: Every knob, the experimental ones at their off defaults for a plain `DustinSettings`.
        self.settings = s = ExperimentalDustinSettings.of(settings)
        for model in {id(target): target, id(draft): draft}.values():
            if model.config._attn_implementation != ATTENTION:
                model.set_attn_implementation(ATTENTION)
        self.geometry = geometry_of(target)
        self.cache_name, _ = forward_style(target)
        self.draft_cache_name, _ = forward_style(draft)
        self.est_heads = estimation_heads(self.geometry.layers, self.geometry.heads, s.est_heads)
        #: The heads whose last-prompt attention starts each generation's history.
        self.prefill_heads = (
            {layer: list(range(self.geometry.heads)) for layer in range(self.geometry.layers)}
            if s.prefill_heads == "all"
            else self.est_heads
        )
        self.draft_layers = int(draft.config.get_text_config(decoder=True).num_hidden_layers)
        #: Leading draft layers that are the target's own modules (the self-draft).
        self.shared_layers = _shared_layers(target, draft)
        #: Selection rows per layer: 1, or the key-value heads (`select_by=group`).
        self.groups = self.geometry.kv_heads if s.select_by == "group" else 1
        #: Lookahead rows per draft layer: the target's groups for the self-draft's own
        #: layers; one (their mean serves every row) for a separate draft.
        self.lookahead_groups = self.groups if self.shared_layers else 1
        #: Per selection row, an EMA of the target's attention mass per cached position.
        self.history = torch.zeros(self.geometry.layers * self.groups, 0)
        #: Per layer, the key and value sums of the dense blocks (`summary_block`).
        self.block_store: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        #: Draws the tail samples; reseeded per generation, so a run repeats exactly.
        self.sampler = torch.Generator().manual_seed(0)

    def _forward(
        self,
        model: Any,
        ids: list[int],
        cache: Any,
        name: str,
        state: Round | None,
        positions: list[int] | None = None,
    ) -> Any:
        with in_round(state):
            tensor = torch.tensor([ids], device=model.device)
            extra = {name: cache}
            if positions is not None:  # a token tree: each node at its depth
                extra["position_ids"] = torch.tensor([positions], device=model.device)
            return model(input_ids=tensor, use_cache=True, **extra)

    def _count(self, trace: DustinTrace, reads: int, dense: int, q: int) -> None:
        """Add one round's attention reads: `reads` cached entries per layer (plus the `q` new
        ones), against `dense` per layer for dense verification (0: not a dense-equivalent)."""
        g = self.geometry
        per_entry_bytes = 2 * g.kv_heads * g.head_dim * g.bytes_per
        per_entry_flops = 4 * q * g.heads * g.head_dim
        if dense:
            trace.kv_read_dense += g.layers * (dense + q)
            trace.flops_dense += g.layers * (dense + q) * per_entry_flops
            trace.bytes_dense += g.layers * (dense + q) * per_entry_bytes
        trace.kv_read_sparse += g.layers * (reads + q)
        trace.flops_sparse += g.layers * (reads + q) * per_entry_flops
        trace.bytes_sparse += g.layers * (reads + q) * per_entry_bytes

    def _count_estimation(
        self, trace: DustinTrace, keys: int, q: int, chosen: dict[int, list[int]]
    ) -> None:
        """The second read of the key groups of the `chosen` heads ({layer: heads}) over `keys`
        positions by `q` queries (a key is half a KV entry)."""
        g = self.geometry
        per_group = max(g.heads // g.kv_heads, 1)
        groups = sum(len({h // per_group for h in heads}) for heads in chosen.values())
        trace.key_read_estimation += groups * keys
        trace.kv_read_sparse += (groups * keys) // (2 * g.kv_heads)
        trace.flops_sparse += 2.0 * q * g.head_dim * keys * sum(map(len, chosen.values()))
        trace.bytes_sparse += groups * keys * g.head_dim * g.bytes_per

    def generate(
        self,
        prompt: list[int],
        params: DecodeParams,
        eos: set[int],
        decode_text: Callable[[list[int]], str],
        rng: torch.Generator | None = None,
    ) -> tuple[Generation, DustinTrace]:
        """One completion (EOS, stop sequences and max tokens as `decode_loop`)."""
        sparse = self.settings.verify == "sparse"
        trace = DustinTrace()
        target_cache, draft_cache = growing_cache(), growing_cache()
        width = max(len(prompt) - 1, 0)
        rows = self.geometry.layers * self.groups
        self.history = torch.zeros(rows, width, device=self.target.device)
        self.block_store = {}
        self.sampler.manual_seed(0)
        out: list[int] = []
        steps: list[TokenStep] = []
        text = ""
        started = time.perf_counter()
        with torch.inference_mode():
            if len(prompt) > 1:  # prefill both models on all but the last prompt token
                state = Round(
                    "prefill",
                    est_heads=self.prefill_heads,
                    history_now=self.history,
                    groups=self.groups,
                    candidates=self.settings.prefill_candidates,
                    block=self.settings.candidate_block,
                    sinks=self.settings.sinks,
                )
                self._forward(
                    self.target,
                    prompt[:-1],
                    target_cache,
                    self.cache_name,
                    state if sparse else None,
                )
                self._forward(self.draft, prompt[:-1], draft_cache, self.draft_cache_name, None)
                trace.target_forwards += 1
                trace.draft_forwards += 1
                if sparse and self.prefill_heads:
                    tail = min(state.tail, width)
                    keys = _estimate_keys(state, width - tail, tail)
                    self._count_estimation(trace, keys, tail, self.prefill_heads)
                self.history = _row_normalised(self.history)
            progress = _Progress(dense_length=width, budget=self.settings.budget)
            sequence = list(prompt)
            while True:
                if params.interrupted():
                    raise GenerationInterrupted(f"stopped after {len(out)} tokens")
                if self._needs_check(progress, params, trace, eos):
                    caches = (target_cache, draft_cache)
                    branches = self._grow_branches(sequence, progress, caches, params, trace, eos)
                    new, logits = self._dense_round(
                        sequence, progress, caches, params, trace, eos, rng, branches
                    )
                else:
                    self._sparse_round(
                        sequence, progress, target_cache, draft_cache, params, trace, rng
                    )
                    continue
                for index, token in enumerate(new):
                    out.append(token)
                    trace.emitted += 1
                    trace.context_at_end = len(prompt) + len(out)
                    if token in eos:
                        return self._done(out, text, "stop", steps, trace, started)
                    if params.logprobs:
                        steps.append(token_step(logits[index], token, params.top_logprobs))
                    text = decode_text(out)
                    cut = _first_stop(text, params.stop_seqs)
                    if cut is not None:
                        return self._done(out, text[:cut], "stop", steps, trace, started)
                    if len(out) >= params.max_new_tokens:
                        return self._done(out, text, "max_tokens", steps, trace, started)

    def _needs_check(
        self, progress: _Progress, params: DecodeParams, trace: DustinTrace, eos: set[int]
    ) -> bool:
        """A dense round now: always with `verify=dense`; else after `refresh` sparse rounds,
        when the tentative tokens reach the token limit, or hold an EOS."""
        if self.settings.verify != "sparse":
            return True
        pending = len(progress.tentative)
        return (
            progress.since_check >= self.settings.refresh
            or pending + 1 >= params.max_new_tokens - trace.emitted
            or any(token in eos for token in progress.tentative)
        )

    def _sparse_round(
        self,
        sequence: list[int],
        progress: _Progress,
        target_cache: Any,
        draft_cache: Any,
        params: DecodeParams,
        trace: DustinTrace,
        rng: torch.Generator | None,
        dense_equivalent: bool = True,
    ) -> None:
        """Draft γ tokens and verify them on each layer's selected entries: the accepted ones
        and the sparse pass's next token become tentative (appended to `sequence`); a branch's
        rounds (`dense_equivalent` False) have no counterpart in dense verification."""
        s = self.settings
        temperature = params.temperature or 0.0
        room = params.max_new_tokens - trace.emitted - len(progress.tentative) - 2
        gamma = max(0, min(s.draft_tokens, room))
        context = target_cache.get_seq_length()
        lookahead = torch.zeros(
            self.draft_layers * self.lookahead_groups, context, device=self.target.device
        )
        drafts, draft_probs = self._draft(
            sequence, draft_cache, gamma, lookahead, context, temperature, params, rng
        )
        trace.draft_forwards += len(drafts)
        pending = sequence[context:]
        trace.rounds += 1
        trace.branch_rounds += not dense_equivalent
        trace.drafted += len(drafts)
        budget = progress.budget
        sample = s.tail_from == "start" or progress.failed
        while True:
            state, reads = self._select(context, lookahead, budget, progress.dense_length, sample)
            result = self._forward(
                self.target, pending + drafts, target_cache, self.cache_name, state
            )
            trace.target_forwards += 1
            # dense verification's reads are counted once per round, a re-run only on ours
            first = budget == progress.budget and dense_equivalent
            self._count(trace, reads, context if first else 0, len(pending) + len(drafts))
            logits = result.logits[0, len(pending) - 1 :].float()
            accepted, bonus = self._verify(drafts, draft_probs, logits, temperature, params, rng)
            if (
                budget >= s.escalate_budget
                or reads >= context
                or not _uncertain(logits[: accepted + 1], s.escalate)
            ):
                break
            # a new token the sparse pass is unsure of: re-run the round on a larger selection
            # (its reads are counted) so that the dense check is less likely to reject it
            trace.escalations += 1
            budget = s.escalate_budget
            crop_to(target_cache, context)
        trace.accepted += accepted
        new = drafts[:accepted] + [bonus]
        if temperature > 0:
            progress.tentative_probs += [
                torch.softmax(filter_logits(row, temperature, params.top_p, params.top_k), -1)
                for row in logits[: accepted + 1]
            ]
        if s.branches and temperature <= 0:
            top = torch.topk(logits[: accepted + 1], s.branch_rank, dim=-1)
            margins = (top.values[:, :1] - top.values[:, 1:]).tolist()
            progress.alternatives += [
                list(zip(row, tokens, strict=True))
                for row, tokens in zip(margins, top.indices[:, 1:].tolist(), strict=True)
            ]
        progress.tentative += new
        progress.since_check += 1
        sequence += new
        kept = context + len(pending) + accepted
        crop_to(target_cache, kept)
        crop_to(draft_cache, kept)

    def _dense_round(
        self,
        sequence: list[int],
        progress: _Progress,
        caches: tuple[Any, Any],
        params: DecodeParams,
        trace: DustinTrace,
        eos: set[int],
        rng: torch.Generator | None,
        branches: list[list[int]] | None = None,
    ) -> tuple[list[int], torch.Tensor]:
        """Draft γ more tokens and verify the tentative tokens and the drafts with one dense
        pass from the last dense-verified position; returns the newly verified tokens and the
        target's logits for them (`sequence` is cut back to the verified ones).

        With `branches` (greedy; each a whole tentative path through a runner-up), the pass
        runs over the token tree of the tentative path with its drafts and the branches, and
        the verified path may leave the tentative one wherever a branch holds the target's
        token; the cache keeps the verified path's entries only."""
        s = self.settings
        temperature = params.temperature or 0.0
        target_cache, draft_cache = caches
        tentative = progress.tentative
        room = params.max_new_tokens - trace.emitted - len(tentative) - 1
        ended = any(token in eos for token in tentative)
        gamma = 0 if ended else max(0, min(s.draft_tokens, room))
        drafts, draft_probs = self._draft(
            sequence, draft_cache, gamma, None, 0, temperature, params, rng
        )
        trace.draft_forwards += len(drafts)
        start = progress.dense_length
        assert len(sequence) - start == len(tentative) + 1
        tree = None
        if branches and temperature <= 0:
            paths = [(tentative + drafts, len(tentative)), *((b, len(b)) for b in branches)]
            tree = TokenTree.of_paths(sequence[start], paths)
        inputs = tree.tokens if tree is not None else sequence[start:] + drafts
        sparse = s.verify == "sparse"
        rows = self.geometry.layers * self.groups
        now = torch.zeros(rows, start + len(inputs), device=self.target.device)
        state = None
        if sparse:
            state = Round(
                "dense",
                est_heads=self.est_heads,
                history_now=now,
                defer=True,
                groups=self.groups,
                candidates=s.refresh_candidates,
                block=s.candidate_block,
                sinks=s.sinks,
            )
            if tree is not None:
                state.tree = tree.visibility(self.target.device)
        positions = None if tree is None else [start + depth for depth in tree.depths]
        result = self._dense_forward(inputs, target_cache, start, state, positions)
        trace.target_forwards += 1
        trace.rounds += 1
        trace.drafted += len(drafts)
        if sparse:
            trace.dense_checks += 1
            self._count(trace, start, 0, len(inputs))
        else:
            self._count(trace, start, start, len(inputs))
        logits = result.logits[0].float()
        proposal = tentative + drafts
        if tree is None:
            accepted, bonus = self._verify(
                proposal, progress.tentative_probs + draft_probs, logits, temperature, params, rng
            )
            path = list(range(accepted + 1))
            new = proposal[:accepted] + [bonus]
            from_tentative = min(accepted, len(tentative))
            failed = accepted < len(tentative)
        else:
            path, bonus = tree.greedy_path(torch.argmax(logits, dim=-1).tolist())
            accepted = len(path) - 1
            new = [tree.tokens[node] for node in path[1:]] + [bonus]
            from_tentative = sum(tree.tentative[node] for node in path[1:])
            failed = tree.has_tentative_child(path[-1])
            trace.branch_hits += common_prefix(new, proposal) < min(accepted, len(tentative))
        final = any(token in eos for token in new) or (
            trace.emitted + len(new) >= params.max_new_tokens
        )
        if state is not None and state.deferred and not final:
            # the history is needed only if the generation goes on: read the estimation
            # heads' keys now (they are still the dense pass's, before the crop)
            estimate_deferred(state)
            keys = _estimate_keys(state, start, len(inputs))
            self._count_estimation(trace, keys, len(inputs), self.est_heads)
        trace.checked += len(tentative)
        trace.check_accepted += min(from_tentative, len(tentative))
        if failed:
            trace.failed_checks += 1
            progress.budget = max(progress.budget, s.fail_budget)
            progress.failed = True
        trace.accepted += max(0, accepted - from_tentative)
        kept = start + 1 + accepted
        if tree is not None:  # the verified path's entries, moved next to each other
            compact_cache(target_cache, start, path)
            now = torch.cat([now[:, :start], now[:, [start + node for node in path]]], dim=1)
        crop_to(target_cache, kept)
        # the draft's cache followed the tentative path (and its drafts)
        crop_to(draft_cache, min(kept, start + 1 + common_prefix(new, proposal)))
        if sparse and not final:
            self.history = decayed_history(self.history, now, kept, s.decay, self.groups)
        del sequence[start + 1 :]
        sequence += new
        progress.dense_length = kept
        progress.tentative, progress.tentative_probs, progress.since_check = [], [], 0
        progress.alternatives = []
        return new, logits[path]

    def _grow_branches(
        self,
        sequence: list[int],
        progress: _Progress,
        caches: tuple[Any, Any],
        params: DecodeParams,
        trace: DustinTrace,
        eos: set[int],
    ) -> list[list[int]]:
        """Greedy near-tie branches for the coming dense check (`branches` of them at most).

        The tentative token with the smallest sparse margin below `branch_margin` (over the
        tentative path and the branches grown so far) gets a branch: its prefix, the sparse
        alternative (ranks 2 to `branch_rank`, margin top-1 minus its logit), then either
        sparse rounds at the base `budget` (not `fail_budget`: a branch is a side bet) until
        a check would be due, as on the main path, or, with `branch_grow=copy`, the parent
        path's own later tokens (no reads before the check: only the tree grows). The
        caches end on the tentative path's prefix (its missing entries are re-run as pending
        tokens, as after any crop).

        Args:
            sequence: The prompt, the verified tokens and the tentative path.
            progress: The tentative path with its sparse alternatives.
            caches: The target's and the draft's caches.
            params: Decoding parameters (greedy only).
            trace: Counters (branch rounds are counted as reads, not as dense equivalents).
            eos: End-of-sequence ids.

        Returns:
            Each branch's whole tentative path (after the last verified token).
        """
        s = self.settings
        if not s.branches or (params.temperature or 0.0) > 0 or s.verify != "sparse":
            return []
        start = progress.dense_length
        head = sequence[: start + 1]
        paths = [(list(progress.tentative), list(progress.alternatives))]
        tried: set[tuple[int, ...]] = set()
        held = list(sequence)
        grown: list[list[int]] = []
        while len(grown) < s.branches:
            best: tuple[float, int, int, int] | None = None
            for number, (tokens, alternatives) in enumerate(paths):
                for index, options in enumerate(alternatives):
                    for margin, runner in options:
                        if margin >= s.branch_margin or (*tokens[:index], runner) in tried:
                            continue
                        if best is None or margin < best[0]:
                            best = (margin, number, index, runner)
            if best is None:
                break
            _, number, index, runner = best
            tokens, alternatives = paths[number]
            tried.add((*tokens[:index], runner))
            if s.branch_grow == "copy":  # the parent's later tokens as a free guess
                copied = [*tokens[:index], runner, *tokens[index + 1 :]]
                paths.append((copied, [*alternatives[:index], [], *alternatives[index + 1 :]]))
                grown.append(copied)
                trace.branches += 1
                continue
            branch = _Progress(
                dense_length=start,
                tentative=[*tokens[:index], runner],
                alternatives=[*alternatives[:index], []],
                budget=s.budget,
                failed=progress.failed,
            )
            branch_sequence = head + branch.tentative
            keep = min(common_prefix(held, branch_sequence), len(branch_sequence) - 1)
            for cache in caches:
                crop_to(cache, keep)
            while not self._needs_check(branch, params, trace, eos):
                self._sparse_round(
                    branch_sequence, branch, *caches, params, trace, None, dense_equivalent=False
                )
            held = branch_sequence
            paths.append((branch.tentative, branch.alternatives))
            grown.append(branch.tentative)
            trace.branches += 1
        keep = min(common_prefix(held, sequence), len(sequence) - 1)
        for cache in caches:
            crop_to(cache, keep)
        return grown

    def _dense_forward(
        self,
        inputs: list[int],
        target_cache: Any,
        start: int,
        state: Round | None,
        positions: list[int] | None = None,
    ) -> Any:
        """The dense check: drop the cache entries from `start` on (the sparse pass's keys and
        values of the tentative tokens) and run `inputs` (at `positions`, a token tree's) over
        the rest, so the dense pass's entries replace them."""
        crop_to(target_cache, start)
        return self._forward(self.target, inputs, target_cache, self.cache_name, state, positions)

    def _select(
        self,
        context: int,
        lookahead: torch.Tensor,
        budget: int,
        dense_length: int = 0,
        sample: bool = True,
    ) -> tuple[Round, int]:
        """The sparse round's state (each layer's selected positions, `budget` top-scored ones
        beyond the sinks and the recent window, and with `summary_block` one summary per
        complete block of the first `dense_length` positions) and the cached entries each
        layer reads (a summary counts as one)."""
        s = self.settings
        history = self.history[:, :context]
        if history.shape[1] < context:
            history = torch.nn.functional.pad(history, (0, context - history.shape[1]))
        score = layer_scores(
            lookahead,
            history,
            s.mix,
            self.shared_layers * self.lookahead_groups,
            s.layer_share,
            groups=self.groups,
        )
        score = with_successors(score, s.successors)
        selected = select_per_layer(score, context, budget, s.sinks, s.recent)
        state = Round("sparse", context=context, selected=selected, groups=self.groups)
        reads = int(selected.shape[1])
        if s.tail_samples and sample and reads < context:
            proposal = score if s.tail_proposal == "score" else None
            sampled, bias = stratified_tail(
                selected, context, s.tail_samples, self.sampler, proposal
            )
            state.selected = torch.cat([selected, sampled], dim=1)
            state.sampled_from, state.sample_bias = reads, bias
            reads += int(sampled.shape[1])
        if s.summary_block and reads < context:
            state.summary_block, state.dense_length = s.summary_block, dense_length
            state.block_sums = self.block_store
            reads += min(dense_length, context) // s.summary_block
        return state, reads

    def _done(
        self,
        out: list[int],
        text: str,
        reason: Literal["stop", "max_tokens"],
        steps: list[TokenStep],
        trace: DustinTrace,
        started: float,
    ) -> tuple[Generation, DustinTrace]:
        metadata = {"method": "dustin", "verify": self.settings.verify, **trace.as_metadata()}
        metadata["latency_s"] = round(time.perf_counter() - started, 6)
        return Generation(list(out), text, reason, steps, metadata=metadata), trace

    def _draft(
        self,
        sequence: list[int],
        cache: Any,
        gamma: int,
        lookahead: torch.Tensor | None,
        context: int,
        temperature: float,
        params: DecodeParams,
        rng: torch.Generator | None,
    ) -> tuple[list[int], list[torch.Tensor]]:
        """γ draft tokens (greedy, or sampled at temperature > 0) and their draft distributions;
        the draft's attention over the first `context` positions is summed per layer into
        `lookahead` (None: not recorded)."""
        drafts: list[int] = []
        probs: list[torch.Tensor] = []
        record = lookahead is not None
        pending = sequence[cache.get_seq_length() :]
        for _ in range(gamma):
            state = (
                Round("draft", context=context, lookahead=lookahead, groups=self.lookahead_groups)
                if record
                else None
            )
            result = self._forward(self.draft, pending, cache, self.draft_cache_name, state)
            logits = result.logits[0, -1].float()
            if temperature > 0:
                p = torch.softmax(
                    filter_logits(logits, temperature, params.top_p, params.top_k), -1
                )
                token = int(torch.multinomial(p, 1, generator=rng))
                probs.append(p)
            else:
                token = int(torch.argmax(logits))
            drafts.append(token)
            pending = [token]
        return drafts, probs

    def _verify(
        self,
        drafts: list[int],
        draft_probs: list[torch.Tensor],
        logits: torch.Tensor,
        temperature: float,
        params: DecodeParams,
        rng: torch.Generator | None,
    ) -> tuple[int, int]:
        """(accepted draft tokens, the target's next token) from the target's logits at the
        γ + 1 positions after the context."""
        if temperature <= 0:
            predicted = torch.argmax(logits, dim=-1).tolist()
            accepted = 0
            while accepted < len(drafts) and drafts[accepted] == predicted[accepted]:
                accepted += 1
            return accepted, int(predicted[accepted])
        for index, token in enumerate(drafts):
            p = torch.softmax(
                filter_logits(logits[index], temperature, params.top_p, params.top_k), -1
            )
            q = draft_probs[index]
            ratio = float(p[token]) / max(float(q[token]), 1e-30)
            if float(torch.rand(1, generator=rng)) < min(1.0, ratio):
                continue
            residual = (p - q).clamp_min(0)
            residual = residual / residual.sum() if float(residual.sum()) > 0 else p
            return index, int(torch.multinomial(residual, 1, generator=rng))
        p = torch.softmax(
            filter_logits(logits[len(drafts)], temperature, params.top_p, params.top_k), -1
        )
        return len(drafts), int(torch.multinomial(p, 1, generator=rng))


def _uncertain(logits: torch.Tensor, threshold: float) -> bool:
    """Whether any row's top-1 logit leads its top-2 by less than `threshold` (0: never).

    Args:
        logits: `[tokens, vocabulary]` logits of the tokens a sparse round makes tentative.
        threshold: The margin (a log-probability difference) below which a row is uncertain.

    Returns:
        True if some row's margin is below `threshold`.
    """
    if threshold <= 0 or logits.shape[0] == 0 or logits.shape[-1] < 2:
        return False
    top = torch.topk(logits, 2, dim=-1).values
    return bool((top[:, 0] - top[:, 1] < threshold).any())


def _shared_layers(target: Any, draft: Any) -> int:
    """How many leading decoder layers the draft shares with the target (module identity)."""
    target_layers = getattr(getattr(target, "model", None), "layers", None)
    draft_layers = getattr(getattr(draft, "model", None), "layers", None)
    if target_layers is None or draft_layers is None or draft is target:
        return 0
    shared = 0
    for ours, theirs in zip(target_layers, draft_layers, strict=False):
        if ours is not theirs:
            break
        shared += 1
    return shared


def crop_to(cache: Any, length: int) -> None:
    """Drop a cache's entries beyond `length` (transformers' `crop` takes minus the count)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _first_stop(text: str, stop_seqs: tuple[str, ...]) -> int | None:
    found = [i for i in (text.find(s) for s in stop_seqs if s) if i >= 0]
    return min(found) if found else None
