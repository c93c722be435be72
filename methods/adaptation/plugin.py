"""Helpers for `docket/local` method plugins that decode with hooks installed (SHINE's adapters,
AffIn-Space's canonicalisation) and log their counters per call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any


def decode_under(
    hooks: AbstractContextManager[Any],
    model: Any,
    tokenizer: Any,
    prompt: list[int],
    params: Any,
    n: int,
) -> list[Any]:
    """Greedy decoding at temperature 0/None, else sampling, while `hooks` are installed."""
    from docket.methods.local.sampling import pick_method

    with hooks:
        return list(pick_method(None, params.temperature)(model, tokenizer, prompt, params, n))


def with_counters(generations: Sequence[Any], counters: Mapping[str, Any]) -> list[Any]:
    """Add `counters` to each generation's metadata (logged in `ModelOutput.metadata`)."""
    for generation in generations:
        generation.metadata = {**generation.metadata, **counters}
    return list(generations)


def save_module(module: Any, meta: Mapping[str, Any], out: Path, config: str, weights: str) -> Path:
    """Write `meta` as JSON to `out/config` and `module`'s state dict as safetensors to
    `out/weights` (the trained parts a plugin loads next to a checkpoint)."""
    import json

    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    (out / config).write_text(json.dumps(meta, indent=2))
    state = {k: v.detach().contiguous().cpu() for k, v in module.state_dict().items()}
    save_file(state, str(out / weights))
    return out
