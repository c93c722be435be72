"""KV caches kept between calls of one sample, and the cache surgery batching needs.

An agent loop resends the whole conversation on every turn, so the prompt of a sample's next
call starts with (most of) the tokens of its last one. `PrefixStore` keeps, per key (Inspect's
active sample, or nothing), the last call's token ids and its transformers `DynamicCache`; the
next call takes it, crops it to the longest common token prefix and feeds only the rest. The
store is bounded (least recently used entries go first, by count and by cached tokens) and
drops the entries of samples that are no longer running.

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


class PrefixStore:
    """The last call's KV cache per key, bounded by entries and cached tokens (LRU).

    A key is a running sample's id; `None` stands for calls outside any sample, whose entries
    are matched by their longest common prefix with the new prompt. Taking a sample's entry
    removes it: the caller owns (and extends) the cache until it puts it back. An entry kept
    without a key is taken only by a prompt that extends it; a prompt that shares less gets a
    copy of the shared part, and the entry stays for the conversation it belongs to.

    Args:
        max_tokens: Bound on the tokens of all entries together (0 disables the store).
        max_entries: Bound on the number of entries.
        alive: Returns the keys still running (None: unknown); entries of other keys are
            dropped whenever the store is used.
    """

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        alive: Callable[[], set[Hashable] | None] | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_entries = max_entries
        self.alive = alive
        self._entries: OrderedDict[tuple[str, Hashable], _Entry] = OrderedDict()
        self._anonymous = 0
        self._lock = threading.Lock()
        #: Prompt tokens served from kept caches, and prompt tokens asked for, since creation.
        self.reused_tokens = 0
        self.prompt_tokens = 0

    @property
    def enabled(self) -> bool:
        """Whether anything is ever kept."""
        return self.max_tokens > 0 and self.max_entries > 0

    def __len__(self) -> int:
        return len(self._entries)

    def tokens(self) -> int:
        """Tokens held by all entries.

        Returns:
            Their sum.
        """
        with self._lock:
            return sum(len(e.ids) for e in self._entries.values())

    def take(self, key: Hashable | None, prompt_ids: Sequence[int]) -> tuple[Any, int]:
        """The kept cache that shares the longest prefix with `prompt_ids`, cropped to it.

        At least the prompt's last token is left to feed (its logits start the reply).

        Args:
            key: The sample's key (None: match among the entries kept without one).
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
            if slot[0] == "anonymous" and shared < len(entry.ids):
                # another conversation's cache: copy the shared part, leave it to its owner
                self._entries.move_to_end(slot)
                cache = prefix_copy(entry.cache, shared)
            else:
                del self._entries[slot]
                cache = entry.cache
                crop(cache, shared)
            self.reused_tokens += shared
        return cache, shared

    def put(self, key: Hashable | None, ids: Sequence[int], cache: Any) -> None:
        """Keep `cache`, which holds exactly `ids`, for the key's next call.

        Args:
            key: The sample's key (None: a call outside any sample).
            ids: The token ids the cache holds.
            cache: A plain batch-1 cache (anything else is not kept).
        """
        if not self.enabled or not plain_cache(cache) or cache_length(cache) != len(ids):
            return
        if len(ids) > self.max_tokens:
            return
        with self._lock:
            if key is None:
                self._anonymous += 1
                slot: tuple[str, Hashable] = ("anonymous", self._anonymous)
            else:
                slot = ("sample", key)
            self._entries.pop(slot, None)
            self._entries[slot] = _Entry(list(ids), cache)
            self._drop_ended()
            total = sum(len(e.ids) for e in self._entries.values())
            while self._entries and (
                len(self._entries) > self.max_entries or total > self.max_tokens
            ):
                _, oldest = self._entries.popitem(last=False)
                total -= len(oldest.ids)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def _find(
        self, key: Hashable | None, prompt_ids: Sequence[int]
    ) -> tuple[tuple[str, Hashable], int] | None:
        if key is not None:
            slot = ("sample", key)
            entry = self._entries.get(slot)
            return (slot, common_prefix(entry.ids, prompt_ids)) if entry else None
        best: tuple[tuple[str, Hashable], int] | None = None
        for slot, entry in self._entries.items():
            if slot[0] == "anonymous":
                shared = common_prefix(entry.ids, prompt_ids)
                if shared > 0 and (best is None or shared > best[1]):
                    best = (slot, shared)
        return best

    def _drop_ended(self) -> None:
        running = self.alive() if self.alive else None
        if running is None:
            return
        for slot in [s for s in self._entries if s[0] == "sample" and s[1] not in running]:
            del self._entries[slot]
