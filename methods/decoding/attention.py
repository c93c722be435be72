"""Shared pieces of the methods that work inside transformers' attention interface (Dustin,
FLASH): registering an attention function and reading chosen heads' attention weights."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

_LOCK = threading.Lock()


def register(name: str, function: Callable[..., Any]) -> None:
    """Register `function` as attention implementation `name`, with sdpa's mask builder
    (idempotent; a model then selects it with `set_attn_implementation(name)`)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    with _LOCK:
        AttentionInterface.register(name, function)
        AttentionMaskInterface.register(name, sdpa_mask)


def sdpa(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, Any]:
    """transformers' own sdpa attention function."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(*args, **kwargs)


def head_weights(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    heads: Sequence[int] | None = None,
    causal_from: int | None = None,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Post-softmax attention `[heads, queries, keys]` (float32) of the chosen query heads (all
    when None) of batch row 0, grouped-query keys mapped per head. With `causal_from`, query i
    sees keys up to `causal_from + i`; with `allowed` (`[queries, keys]` booleans, e.g. a token
    tree's), only the keys it marks; with neither, every key."""
    groups = getattr(module, "num_key_value_groups", 1)
    chosen = list(heads) if heads is not None else list(range(query.shape[1]))
    index = torch.tensor(chosen, device=query.device)
    q = query[0, index].float()
    k = key[0, torch.div(index, groups, rounding_mode="floor")].float()
    scores = torch.matmul(q, k.transpose(-1, -2)) * float(module.scaling)
    if causal_from is not None:
        rows, columns = scores.shape[-2], scores.shape[-1]
        limit = causal_from + torch.arange(rows, device=scores.device)[:, None]
        beyond = torch.arange(columns, device=scores.device)[None, :] > limit
        scores = scores.masked_fill(beyond, -math.inf)
    if allowed is not None:
        scores = scores.masked_fill(~allowed.to(scores.device), -math.inf)
    return torch.softmax(scores, dim=-1)
