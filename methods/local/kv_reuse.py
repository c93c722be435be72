"""KV caches kept between calls of one sample, and the cache surgery batching needs.

An agent loop resends the whole conversation on every turn, so the prompt of a sample's next
call starts with (most of) the tokens of its last one; and the samples of one task start with
the same system prompt and tool schemas. `PrefixStore` keeps, per key (Inspect's active sample,
or nothing), the last call's token ids and its transformers `DynamicCache`, plus snapshots of
recent prompts; a call starts from the entry that shares the longest common token prefix with
its prompt (its own, cropped; anyone else's, copied) and feeds only the rest. The store is
bounded (least recently used entries go first, by count and by cached tokens) and drops the
entries of samples that are no longer running.

Only caches whose every layer is a plain `DynamicLayer` (full attention, tensors of shape
`[batch, kv_heads, length, head_dim]`) are kept or merged; anything else (sliding windows,
linear attention, quantised caches) makes the caller decode without reuse or batching.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

#: Default bound on the tokens all kept caches hold together (SmolLM2-135M: ~46 KB a token,
#: Qwen2.5-0.5B: ~25 KB a token in float32).
DEFAULT_MAX_TOKENS = 16384
#: Default bound on the number of kept caches (one per running sample).
DEFAULT_MAX_ENTRIES = 16


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token id sequences.

    Args:
        a: One sequence.
        b: The other.

    Returns:
        How many leading ids they share.
    """
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def plain_cache(cache: Any) -> bool:
    """Whether every layer of `cache` is a full-attention `DynamicLayer` with tensors.

    Args:
        cache: A transformers cache (or anything).

    Returns:
        True when the cache can be cropped, stacked and split by this module.
    """
    layers = getattr(cache, "layers", None)
    if not layers:
        return False
    for layer in layers:
        if type(layer).__name__ != "DynamicLayer" or not getattr(layer, "is_initialized", False):
            return False
    return True


def cache_length(cache: Any) -> int:
    """Tokens held by a plain cache (its first layer's length).

    Args:
        cache: A plain cache (`plain_cache`).

    Returns:
        The length.
    """
    return int(cache.layers[0].keys.shape[-2])


def build_cache(tensors: Sequence[tuple[Any, Any]]) -> Any:
    """A `DynamicCache` holding the given keys and values, one pair per layer.

    Args:
        tensors: (keys, values) per layer, each `[batch, kv_heads, length, head_dim]`.

    Returns:
        The cache.
    """
    from transformers import DynamicCache

    cache = DynamicCache()
    for index, (keys, values) in enumerate(tensors):
        cache.update(keys, values, index)
    return cache


def crop(cache: Any, length: int) -> None:
    """Keep only the first `length` tokens of a plain cache (in place).

    Args:
        cache: A plain cache.
        length: The tokens to keep (at most its length).
    """
    drop = cache_length(cache) - length
    if drop > 0:
        cache.crop(-drop)


def prefix_copy(cache: Any, length: int) -> Any:
    """A copy of the first `length` tokens of a plain cache (the original is untouched).

    Args:
        cache: A plain cache.
        length: The tokens to copy.

    Returns:
        A cache that owns its tensors.
    """
    return build_cache(
        [
            (layer.keys[..., :length, :].clone(), layer.values[..., :length, :].clone())
            for layer in cache.layers
        ]
    )


def left_pad(cache: Any, pad: int) -> list[tuple[Any, Any]]:
    """The layers of a plain cache with `pad` zero positions prepended.

    Args:
        cache: A plain cache.
        pad: Positions to prepend (0: the tensors as they are).

    Returns:
        (keys, values) per layer.
    """
    import torch

    if pad == 0:
        return [(layer.keys, layer.values) for layer in cache.layers]
    padded = []
    for layer in cache.layers:
        shape = list(layer.keys.shape)
        shape[-2] = pad
        zeros = torch.zeros(shape, dtype=layer.keys.dtype, device=layer.keys.device)
        padded.append(
            (torch.cat([zeros, layer.keys], dim=-2), torch.cat([zeros, layer.values], dim=-2))
        )
    return padded


def stack(caches: Sequence[Any], pads: Sequence[int]) -> Any:
    """One batched cache from plain caches, each left-padded by its `pads` entry.

    Args:
        caches: Plain caches, batch size 1 or more each, whose lengths plus pads agree.
        pads: Positions to prepend to each.

    Returns:
        The cache with their rows in order.
    """
    import torch

    per_cache = [left_pad(cache, pad) for cache, pad in zip(caches, pads, strict=True)]
    layers = len(per_cache[0])
    return build_cache(
        [
            (
                torch.cat([c[i][0] for c in per_cache], dim=0),
                torch.cat([c[i][1] for c in per_cache], dim=0),
            )
            for i in range(layers)
        ]
    )


def row(cache: Any, index: int, start: int) -> Any:
    """A copy of one row of a batched plain cache, without its first `start` positions.

    Args:
        cache: A batched plain cache.
        index: The row.
        start: The row's left padding.

    Returns:
        A batch-1 cache that owns its tensors.
    """
    return build_cache(
        [
            (
                layer.keys[index : index + 1, :, start:, :].clone(),
                layer.values[index : index + 1, :, start:, :].clone(),
            )
            for layer in cache.layers
        ]
    )


def select(cache: Any, rows: Sequence[int], start: int) -> Any:
    """The given rows of a batched plain cache, without the first `start` positions.

    Args:
        cache: A batched plain cache.
        rows: The rows to keep, in order.
        start: Leading positions to drop (padding every kept row has).

    Returns:
        The smaller cache.
    """
    import torch

    index = torch.tensor(list(rows), device=cache.layers[0].keys.device)
    return build_cache(
        [
            (
                layer.keys.index_select(0, index)[:, :, start:, :],
                layer.values.index_select(0, index)[:, :, start:, :],
            )
            for layer in cache.layers
        ]
    )


@dataclass
class _Entry:
    ids: list[int]
    cache: Any


#: Default bound on the prompt snapshots shared across samples (`PrefixStore.share`).
DEFAULT_MAX_PREFIXES = 4

_Slot = tuple[str, Hashable]


class PrefixStore:
    """Kept KV caches, matched by longest common token prefix over all of them (LRU-bounded).

    Three kinds of entry, in one least-recently-used order:

    - a running sample's last call (key: the sample's id), which that sample's next call
      *takes*: it owns (and extends) the cache until it puts it back;
    - a call outside any sample (key None), taken only by a prompt that extends it;
    - prompt snapshots (`share`): the prompt's KV right after its prefill, a copy that no call
      ever takes. The samples of one task send the same system prompt and tool schemas, so
      the second sample's first prompt starts from the first sample's snapshot instead of
      recomputing the shared head (automatic prefix caching, as vLLM and SGLang do).

    A call is served from whichever entry shares the longest prefix with its prompt. Its own
    entry is taken and cropped; any other entry (another sample's, a snapshot, an anonymous
    one it does not extend) gives a copy of the shared part and stays for its owner. All
    methods hold one lock, so threads may share a store.

    Args:
        max_tokens: Bound on the tokens of all entries together (0 disables the store).
        max_entries: Bound on the number of call entries (samples and anonymous).
        alive: Returns the keys still running (None: unknown); entries of other keys are
            dropped whenever the store is used.
        max_prefixes: Bound on the prompt snapshots (0: no cross-call sharing of prompts;
            a call still finds other samples' kept caches).
    """

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        alive: Callable[[], set[Hashable] | None] | None = None,
        max_prefixes: int = DEFAULT_MAX_PREFIXES,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_entries = max_entries
        self.max_prefixes = max_prefixes
        self.alive = alive
        self._entries: OrderedDict[_Slot, _Entry] = OrderedDict()
        self._counter = 0
        self._lock = threading.Lock()
        #: Prompt tokens served from kept caches, and prompt tokens asked for, since creation.
        self.reused_tokens = 0
        self.prompt_tokens = 0
        #: Of `reused_tokens`, those copied from another call's cache or a snapshot.
        self.shared_tokens = 0

    @property
    def enabled(self) -> bool:
        """Whether anything is ever kept."""
        return self.max_tokens > 0 and self.max_entries > 0

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for slot in self._entries if slot[0] != "prefix")

    def prefixes(self) -> int:
        """Prompt snapshots held.

        Returns:
            Their number.
        """
        with self._lock:
            return sum(1 for slot in self._entries if slot[0] == "prefix")

    def tokens(self) -> int:
        """Tokens held by all entries (snapshots included).

        Returns:
            Their sum.
        """
        with self._lock:
            return sum(len(e.ids) for e in self._entries.values())

    def take(self, key: Hashable | None, prompt_ids: Sequence[int]) -> tuple[Any, int]:
        """The kept cache that shares the longest prefix with `prompt_ids`, cropped to it.

        At least the prompt's last token is left to feed (its logits start the reply).

        Args:
            key: The sample's key (None: a call outside any sample).
            prompt_ids: The new prompt.

        Returns:
            The cache and how many prompt tokens it holds, or (None, 0).
        """
        with self._lock:
            self.prompt_tokens += len(prompt_ids)
            self._drop_ended()
            found = self._find(key, prompt_ids)
            if found is None:
                return None, 0
            slot, shared = found
            shared = min(shared, len(prompt_ids) - 1)
            if shared <= 0:
                return None, 0
            entry = self._entries[slot]
            if self._owned(slot, key, shared, entry):
                del self._entries[slot]
                cache = entry.cache
                crop(cache, shared)
            else:  # someone else's cache or a snapshot: copy the shared part, leave it there
                self._entries.move_to_end(slot)
                own = ("sample", key)
                if key is not None and own in self._entries:
                    del self._entries[own]  # superseded: this call's put replaces it
                cache = prefix_copy(entry.cache, shared)
                self.shared_tokens += shared
            self.reused_tokens += shared
        return cache, shared

    def put(self, key: Hashable | None, ids: Sequence[int], cache: Any) -> None:
        """Keep `cache`, which holds exactly `ids`, for the key's next call.

        Args:
            key: The sample's key (None: a call outside any sample).
            ids: The token ids the cache holds.
            cache: A plain batch-1 cache (anything else is not kept).
        """
        if not self._fits(ids, cache):
            return
        with self._lock:
            if key is None:
                self._counter += 1
                slot: _Slot = ("anonymous", self._counter)
            else:
                slot = ("sample", key)
            self._entries.pop(slot, None)
            self._entries[slot] = _Entry(list(ids), cache)
            self._drop_ended()
            self._evict()

    def share(self, ids: Sequence[int], cache: Any) -> None:
        """Keep a snapshot (a copy) of a just-prefilled prompt's cache for any later call.

        A snapshot that an earlier one extends is not kept (the earlier one serves every
        prompt it would); earlier snapshots the new one extends are dropped.

        Args:
            ids: The prompt's token ids, all of them in `cache`.
            cache: A plain batch-1 cache holding exactly `ids` (left untouched).
        """
        if self.max_prefixes <= 0 or not self._fits(ids, cache):
            return
        with self._lock:
            for slot, entry in list(self._entries.items()):
                if slot[0] != "prefix":
                    continue
                if common_prefix(entry.ids, ids) == len(ids):  # an earlier one covers it
                    self._entries.move_to_end(slot)
                    return
                if common_prefix(entry.ids, ids) == len(entry.ids):
                    del self._entries[slot]
            self._counter += 1
            self._entries[("prefix", self._counter)] = _Entry(
                list(ids), prefix_copy(cache, len(ids))
            )
            self._evict()

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def _fits(self, ids: Sequence[int], cache: Any) -> bool:
        return (
            self.enabled
            and plain_cache(cache)
            and cache_length(cache) == len(ids)
            and cache.layers[0].keys.shape[0] == 1
            and len(ids) <= self.max_tokens
        )

    @staticmethod
    def _owned(slot: _Slot, key: Hashable | None, shared: int, entry: _Entry) -> bool:
        if slot[0] == "sample":
            return slot[1] == key
        return slot[0] == "anonymous" and key is None and shared >= len(entry.ids)

    def _find(self, key: Hashable | None, prompt_ids: Sequence[int]) -> tuple[_Slot, int] | None:
        """The entry sharing the longest prefix (ties: the caller's own entry, then the newest)."""
        best: tuple[_Slot, int] | None = None
        own: _Slot = ("sample", key)
        for slot, entry in reversed(self._entries.items()):
            shared = common_prefix(entry.ids, prompt_ids)
            if shared <= 0:
                continue
            if best is None or shared > best[1] or (shared == best[1] and slot == own):
                best = (slot, shared)
        return best

    def _evict(self) -> None:
        """Drop least recently used entries until every bound holds."""
        total = sum(len(e.ids) for e in self._entries.values())
        calls = sum(1 for slot in self._entries if slot[0] != "prefix")
        snapshots = len(self._entries) - calls
        for slot in list(self._entries):
            if total <= self.max_tokens and calls <= self.max_entries:
                if snapshots <= self.max_prefixes:
                    return
            is_prefix = slot[0] == "prefix"
            over_kind = snapshots > self.max_prefixes if is_prefix else calls > self.max_entries
            if total > self.max_tokens or over_kind:
                total -= len(self._entries.pop(slot).ids)
                if is_prefix:
                    snapshots -= 1
                else:
                    calls -= 1

    def _drop_ended(self) -> None:
        running = self.alive() if self.alive else None
        if running is None:
            return
        for slot in [s for s in self._entries if s[0] == "sample" and s[1] not in running]:
            del self._entries[slot]


def valid_row(cache: Any, index: int, mask: Any) -> Any:
    """A copy of one row of a batched plain cache holding only its valid positions, in order.

    Args:
        cache: A batched plain cache.
        index: The row.
        mask: `[batch, length]` 0/1 tensor: 1 where the row's position holds a real token
            (0: left padding, or a draft token that was rejected).

    Returns:
        A batch-1 cache that owns its tensors.
    """
    import torch

    columns = torch.nonzero(mask[index], as_tuple=False).flatten()
    return build_cache(
        [
            (
                layer.keys[index : index + 1].index_select(2, columns),
                layer.values[index : index + 1].index_select(2, columns),
            )
            for layer in cache.layers
        ]
    )


def compact(cache: Any, mask: Any) -> tuple[Any, Any]:
    """Move each row's valid positions to the right end and drop the columns left empty.

    The result is left-padded again (no holes): row `i` holds its valid positions, in order,
    at the last `mask[i].sum()` columns.

    Args:
        cache: A batched plain cache.
        mask: `[batch, length]` 0/1 tensor of valid positions.

    Returns:
        The new cache and its mask.
    """
    import torch

    counts = mask.sum(dim=1)
    width = int(counts.max())
    batch = mask.shape[0]
    index = torch.zeros(batch, width, dtype=torch.long, device=mask.device)
    new_mask = torch.zeros(batch, width, dtype=mask.dtype, device=mask.device)
    for i in range(batch):
        columns = torch.nonzero(mask[i], as_tuple=False).flatten()
        count = int(counts[i])
        if count:
            index[i, width - count :] = columns
            new_mask[i, width - count :] = 1
    tensors = []
    for layer in cache.layers:
        heads, dim = layer.keys.shape[1], layer.keys.shape[3]
        gather = index[:, None, :, None].expand(batch, heads, width, dim)
        tensors.append((layer.keys.gather(2, gather), layer.values.gather(2, gather)))
    return build_cache(tensors), new_mask
