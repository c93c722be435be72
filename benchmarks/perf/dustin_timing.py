"""Timing harness of Dustin's verification (the `dustin_verify` case and
`benchmarks/perf/scripts/gpu_compare.py dustin`): sparse-then-dense and dense verification over
a cache of a chosen length, without decoding anything."""

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
    layer_scores,
    register_attention,
    select_per_layer,
)
from docket.methods.local.sampling import forward_style


def verification_step_pair(
    target: Any, context: int, settings: DustinSettings, seed: int = 0
) -> tuple[Callable[[], object], Callable[[], object], int]:
    """Timed callables of one Dustin check cycle and of dense verification of the same tokens.

    The sparse callable runs `settings.refresh` sparse verification steps of γ + 1 tokens over
    a `context`-token cache (random keys and values: the cost does not depend on them), each
    with its per-layer selection, then the dense check that re-runs their `refresh` tentative
    tokens with γ + 1 more (whole cache, estimation heads' attention for the history). The
    dense callable runs `refresh` + 1 dense steps of γ + 1 tokens: what dense speculative
    decoding needs for the same `refresh` + 1 tokens when every tentative token passes and no
    draft is accepted (an untrained self-draft's case).

    Args:
        target: The target causal LM (its attention implementation becomes Dustin's).
        context: Cached tokens the steps verify against.
        settings: Dustin's knobs (γ, budget, sinks, recent, refresh, est_heads, mix).
        seed: Seed of the random cache, tokens and scores.

    Returns:
        The sparse callable, the dense callable and the cached entries a sparse step reads
        per layer.
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
    step_tokens = settings.draft_tokens + 1
    check_tokens = settings.refresh + step_tokens
    tokens = torch.randint(0, vocab, (check_tokens,), generator=generator).tolist()
    draft_rows = min(settings.draft_layers, g.layers)
    lookahead = torch.rand(draft_rows, context, generator=generator).to(target.device)
    history = torch.rand(g.layers, context, generator=generator).to(target.device)
    heads = estimation_heads(g.layers, g.heads, settings.est_heads)
    name, _ = forward_style(target)

    def step(ids: list[int], state: Round | None) -> None:
        with in_round(state):
            target(
                input_ids=torch.tensor([ids], device=target.device), use_cache=True, **{name: cache}
            )
        crop_to(cache, context)

    def dense() -> object:
        with torch.inference_mode():
            for _ in range(settings.refresh + 1):
                step(tokens[:step_tokens], None)
        return None

    def sparse() -> object:
        with torch.inference_mode():
            for _ in range(settings.refresh):
                score = layer_scores(lookahead, history, settings.mix, draft_rows)
                selected = select_per_layer(
                    score, context, settings.budget, settings.sinks, settings.recent
                )
                step(tokens[:step_tokens], Round("sparse", context, selected))
            now = torch.zeros(g.layers, context + check_tokens, device=target.device)
            step(tokens, Round("dense", est_heads=heads, history_now=now))
        return None

    reads = min(context, settings.sinks + settings.recent + settings.budget)
    return sparse, dense, reads
