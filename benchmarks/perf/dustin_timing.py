"""Timing harness of Dustin's verification step (the `dustin_verify` case and
`benchmarks/perf/scripts/gpu_compare.py dustin`): sparse and dense verification over a cache of
a chosen length, without decoding anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from docket.methods.decoding.dustin.algorithm import (
    ATTENTION,
    DustinSettings,
    Round,
    crop_to,
    estimation_heads,
    geometry_of,
    growing_cache,
    in_round,
    normalised,
    register_attention,
    select_positions,
)
from docket.methods.local.sampling import forward_style


def verification_step_pair(
    target: Any, context: int, settings: DustinSettings, seed: int = 0
) -> tuple[Callable[[], object], Callable[[], object], int]:
    """Timed callables of Dustin's verification step, sparse and dense, at one context length.

    Each callable runs `settings.refresh` verification steps of γ + 1 tokens over a
    `context`-token cache (random keys and values: the cost does not depend on them), the
    sparse one including selection and its refresh-round estimation.

    Args:
        target: The target causal LM (its attention implementation becomes Dustin's).
        context: Cached tokens the steps verify against.
        settings: Dustin's knobs (γ, budget, sinks, recent, refresh, est_heads, mix).
        seed: Seed of the random cache, tokens and scores.

    Returns:
        The sparse callable, the dense callable and the cached entries the sparse step reads.
    """
    register_attention()
    if target.config._attn_implementation != ATTENTION:
        target.set_attn_implementation(ATTENTION)
    g = geometry_of(target)
    generator = torch.Generator().manual_seed(seed)
    dtype = getattr(target, "dtype", torch.float32)
    cache = growing_cache()
    with torch.inference_mode():
        for layer in range(g.layers):
            shape = (1, g.kv_heads, context, g.head_dim)
            keys = torch.randn(shape, generator=generator).to(dtype=dtype, device=target.device)
            values = torch.randn(shape, generator=generator).to(dtype=dtype, device=target.device)
            cache.update(keys, values, layer)
    vocab = int(target.config.get_text_config(decoder=True).vocab_size)
    tokens = torch.randint(0, vocab, (settings.draft_tokens + 1,), generator=generator).tolist()
    lookahead = torch.rand(context, generator=generator).to(target.device)
    history = torch.rand(context, generator=generator).to(target.device)
    heads = estimation_heads(g.layers, g.heads, settings.est_heads)
    name, _ = forward_style(target)
    tensor = torch.tensor([tokens], device=target.device)

    def step(state: Round | None) -> None:
        with in_round(state):
            target(input_ids=tensor, use_cache=True, **{name: cache})
        crop_to(cache, context)

    def dense() -> object:
        with torch.inference_mode():
            for _ in range(settings.refresh):
                step(None)
        return None

    def sparse() -> object:
        with torch.inference_mode():
            for index in range(settings.refresh):
                score = settings.mix * normalised(lookahead) + (1 - settings.mix) * normalised(
                    history
                )
                selected = select_positions(
                    score, context, settings.budget, settings.sinks, settings.recent
                )
                now = torch.zeros(context, device=target.device)
                step(
                    Round(
                        "sparse",
                        context,
                        selected,
                        est_heads=heads,
                        history_now=now,
                        refresh=index == 0,
                    )
                )
        return None

    reads = min(context, settings.sinks + settings.recent + settings.budget)
    return sparse, dense, reads
