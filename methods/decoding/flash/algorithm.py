"""FLASH: frequency-localized attention shaping of visual heads during decoding (`-M method=flash`).

The paper (ICML 2026) is known by its abstract only (no paper text, code or summary found).
Stated there: training-free, contrastive-decoding-free; a *Spectral Vortex Score* (SVS) finds
"visual heads"; *adaptive spectral modulation* of those heads rectifies the visual information
flow during decoding, against *Localized Fixation* (attention collapsed onto a few patches)
and *Perceptual-Semantic Dissociation* (the right region, too little mass). Everything below
is our reconstruction (the paper leaves it open), each choice a knob:

- visual map: at a decoding step, a head's post-softmax attention of the current query over
  one image's tokens, reshaped to its patch grid (a square run of image tokens; otherwise 1×n);
  m = its total mass;
- SVS (`spectral_score`): m × the fraction of the spectrum's energy |FFT2(A − mean A)|² at
  normalised radial frequency ≤ `low_radius`: high for smooth, object-shaped maps, low for
  spikes and scattered maps. Heads are scored on the prompt's last query during prefill (the
  forward that already runs) and the top `heads` of the candidate layers (`layers`, default the
  middle half) are the visual heads; `heads` may also list `layer:head` pairs;
- modulation (`shape_map`), decoding only, selected heads only: an adaptive Gaussian low-pass
  whose cut-off is the radius holding `quantile` of the map's spectral energy (spreads a
  fixation over its neighbourhood), rescaled to the original mass; then the visual mass is
  amplified by (1 + `amplify` · (1 − m)) (more where little reaches the image); the new map is
  the blend (1 − `strength`) · A + `strength` · shaped, and the whole row (text and image keys)
  is renormalised to sum 1. `strength=0` leaves the model untouched.

One forward per generated token (no contrastive second pass): the shaping runs inside the
attention call through transformers' attention interface (`docket_head_shaping`), which otherwise
defers to the model's own attention implementation (sdpa or eager), so unselected heads and
the prefill are exactly the unmodified model's.
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from docket.methods.local.sampling import DecodeParams, Generation, greedy, sample
from docket.methods.local.settings import knob

from ..attention import head_weights, register

# No "flash" in the name: transformers >= 5.25 resolves any such name as a hub kernel.
ATTENTION = "docket_head_shaping"


def _pairs(value: str) -> tuple[tuple[int, int], ...]:
    pairs = []
    for item in value.split(","):
        layer, head = item.split(":")
        pairs.append((int(layer), int(head)))
    return tuple(pairs)


def heads_knob(value: Any) -> dict[str, Any] | None:
    """`-M heads=layer:head,...`: those heads (and no count); a count is parsed as an integer.

    Args:
        value: The `-M heads` value.

    Returns:
        The `heads` and `head_list` fields for a list of pairs; None for a count.
    """
    if not (isinstance(value, str) and ":" in value):
        return None
    try:
        return {"heads": 0, "head_list": _pairs(value)}
    except ValueError:
        raise ValueError(
            f"-M method=flash: -M heads={value!r} is not valid "
            "(a count, or layer:head pairs such as 2:1,3:0)"
        ) from None


def layers_knob(value: Any) -> dict[str, Any]:
    """`-M layers=first:last`.

    Args:
        value: The `-M layers` value.

    Returns:
        The `layers` field.
    """
    try:
        first, last = (int(x) for x in str(value).split(":"))
    except ValueError:
        raise ValueError(
            f"-M method=flash: -M layers={value!r} is not valid (first:last)"
        ) from None
    return {"layers": (first, last)}


@dataclass(frozen=True)
class FlashSettings:
    """The knobs of `-M method=flash` (defaults: our reconstruction above)."""

    heads: int = knob(
        8,
        "visual heads chosen by SVS (a count), or layer:head,... pairs",
        minimum=0,
        convert=heads_knob,
    )
    #: The heads `-M heads=layer:head,...` names (then no SVS selection).
    head_list: tuple[tuple[int, int], ...] = ()
    #: Candidate layers [first, last) for SVS selection; None: the middle half.
    layers: tuple[int, int] | None = knob(
        None, "candidate layers first:last for SVS (default: the middle half)", convert=layers_knob
    )
    strength: float = knob(
        1.0, "blend of the shaped map (0: the unmodified model)", minimum=0.0, maximum=1.0
    )
    amplify: float = knob(
        0.5, "visual mass amplification where little reaches the image", minimum=0.0
    )
    quantile: float = knob(
        0.5, "spectral energy quantile of the low-pass cut-off", minimum=0.0, maximum=1.0
    )
    low_radius: float = knob(
        0.25, "radial frequency counted as low by SVS", minimum=0.0, maximum=1.0
    )


# --- spectra: pure functions on maps ----------------------------------------------------------


def _radius(shape: tuple[int, int], device: Any) -> torch.Tensor:
    """Normalised radial frequency (0 at DC, 1 at the highest) of an FFT2 grid."""
    fy = torch.fft.fftfreq(shape[0], device=device)
    fx = torch.fft.fftfreq(shape[1], device=device)
    radius = torch.sqrt(fy[:, None] ** 2 + fx[None, :] ** 2)
    top = float(radius.max())
    return radius / top if top > 0 else radius


def spectral_score(maps: torch.Tensor, low_radius: float = 0.25) -> torch.Tensor:
    """SVS (our reconstruction) of attention maps `[..., H, W]`: mass × low-frequency energy
    fraction of the mean-removed map (0 for a constant map)."""
    wide = maps.double()
    mass = wide.sum(dim=(-2, -1))
    centred = wide - wide.mean(dim=(-2, -1), keepdim=True)
    energy = torch.fft.fft2(centred).abs() ** 2
    radius = _radius((maps.shape[-2], maps.shape[-1]), maps.device)
    low = (energy * (radius <= low_radius)).sum(dim=(-2, -1))
    total = energy.sum(dim=(-2, -1))
    # a flat map's mean-removed spectrum is rounding noise: no structure, score 0
    noise = 1e-20 * (wide**2).sum(dim=(-2, -1)) * maps.shape[-2] * maps.shape[-1]
    fraction = torch.where(total > noise, low / total.clamp_min(1e-300), torch.zeros_like(total))
    return (mass * fraction).to(maps.dtype)


def shape_map(grid: torch.Tensor, strength: float, amplify: float, quantile: float) -> torch.Tensor:
    """The modulated map of one head's visual attention `grid` `[H, W]` (before the row is
    renormalised): adaptive low-pass at the `quantile` energy radius, mass kept, then
    amplified by (1 + amplify · (1 − m)), blended with the original by `strength`."""
    mass = grid.sum()
    if strength == 0 or float(mass) <= 0:
        return grid
    spectrum = torch.fft.fft2(grid)
    radius = _radius((grid.shape[0], grid.shape[1]), grid.device)
    energy = spectrum.abs() ** 2
    order = torch.argsort(radius.flatten())
    cumulative = torch.cumsum(energy.flatten()[order], dim=0)
    reach = int(
        torch.searchsorted(cumulative, quantile * cumulative[-1]).clamp(max=order.numel() - 1)
    )
    cutoff = max(float(radius.flatten()[order][reach]), 1e-3)
    gain = torch.exp(-0.5 * (radius / cutoff) ** 2)
    smooth = torch.fft.ifft2(spectrum * gain).real.clamp_min(0)
    total = smooth.sum()
    smooth = smooth * (mass / total) if float(total) > 0 else grid
    boosted = smooth * (1 + amplify * (1 - float(mass)))
    return (1 - strength) * grid + strength * boosted


def image_runs(ids: Sequence[int], image_token: int) -> list[tuple[int, int, tuple[int, int]]]:
    """(start, length, grid) of each contiguous run of image tokens; a square run is √n × √n,
    anything else 1 × n."""
    runs: list[tuple[int, int, tuple[int, int]]] = []
    index = 0
    while index < len(ids):
        if ids[index] != image_token:
            index += 1
            continue
        start = index
        while index < len(ids) and ids[index] == image_token:
            index += 1
        length = index - start
        side = math.isqrt(length)
        runs.append((start, length, (side, side) if side * side == length else (1, length)))
    return runs


def shape_rows(
    weights: torch.Tensor,
    runs: list[tuple[int, int, tuple[int, int]]],
    settings: FlashSettings,
) -> torch.Tensor:
    """Rows `[n, kv]` of post-softmax attention with each image run's map modulated and every
    row renormalised to sum 1."""
    shaped = weights.clone()
    for row in range(weights.shape[0]):
        for start, length, grid in runs:
            if start + length > weights.shape[1]:
                continue
            block = weights[row, start : start + length].reshape(grid)
            new = shape_map(block, settings.strength, settings.amplify, settings.quantile)
            shaped[row, start : start + length] = new.reshape(-1)
    return shaped / shaped.sum(dim=-1, keepdim=True)


# --- the attention function ---------------------------------------------------------------------


@dataclass
class FlashRun:
    """One generation's state: image runs, per-head SVS from the prefill, the selected heads."""

    settings: FlashSettings
    runs: list[tuple[int, int, tuple[int, int]]]
    layers: int
    original: str
    scores: dict[tuple[int, int], float] = field(default_factory=dict)
    selected: dict[int, list[int]] | None = None
    shaped_steps: int = 0
    forwards: int = 0

    def candidate_layers(self) -> range:
        if self.settings.layers is not None:
            return range(*self.settings.layers)
        quarter = self.layers // 4
        return range(quarter, self.layers - quarter)

    def select(self) -> dict[int, list[int]]:
        """The visual heads: the explicit list, else the top-k SVS of the candidate layers."""
        if self.selected is None:
            chosen: list[tuple[int, int]] = list(self.settings.head_list)
            if not chosen and self.settings.heads > 0:
                allowed = set(self.candidate_layers())
                ranked = sorted(
                    (k for k in self.scores if k[0] in allowed),
                    key=lambda k: (-self.scores[k], k),
                )
                chosen = ranked[: self.settings.heads]
            self.selected = {}
            for layer, head in chosen:
                self.selected.setdefault(layer, []).append(head)
        return self.selected


_RUN: contextvars.ContextVar[FlashRun | None] = contextvars.ContextVar("flash_run", default=None)


def _eager(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: Any,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    groups = getattr(module, "num_key_value_groups", 1)
    keys = key.repeat_interleave(groups, dim=1)
    values = value.repeat_interleave(groups, dim=1)
    scores = torch.matmul(query, keys.transpose(2, 3)) * kwargs.get("scaling", module.scaling)
    if mask is not None:
        scores = scores + mask if mask.dtype != torch.bool else scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(weights, values).transpose(1, 2).contiguous(), weights


def _original(name: str) -> Any:
    from transformers import AttentionInterface

    if name == "eager" or name not in AttentionInterface._global_mapping:
        return _eager
    return AttentionInterface._global_mapping[name]


def flash_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """transformers attention function `docket_head_shaping`: the model's own attention, then (in a
    FLASH generation) SVS scoring at prefill and shaping of the selected heads per token."""
    run = _RUN.get()
    original = _original(run.original if run is not None else "sdpa")
    output, weights = original(module, query, key, value, attention_mask, **kwargs)
    if run is None or query.shape[0] != 1 or not run.runs:
        return output, weights
    layer = int(getattr(module, "layer_idx", 0))
    if layer == 0:
        run.forwards += 1
    if query.shape[2] > 1:  # prefill: score every head on the last prompt query
        if run.selected is None and layer in run.candidate_layers():
            every = list(range(query.shape[1]))
            rows = head_weights(module, query[:, :, -1:], key, every)[:, 0]
            for head in every:
                maps = [rows[head, s : s + n].reshape(g) for s, n, g in run.runs]
                svs = sum(float(spectral_score(m, run.settings.low_radius)) for m in maps)
                run.scores[(layer, head)] = svs
        return output, weights
    heads = run.select().get(layer)
    if not heads or run.settings.strength == 0:
        return output, weights
    rows = head_weights(module, query[:, :, :1], key, heads)[:, 0]
    shaped = shape_rows(rows, run.runs, run.settings)
    groups = getattr(module, "num_key_value_groups", 1)
    output = output.clone()
    for i, head in enumerate(heads):
        head_value = value[0, head // groups].float()
        output[0, 0, head] = (shaped[i] @ head_value).to(output.dtype)
    if layer == min(run.selected or {0: []}):
        run.shaped_steps += 1
    return output, weights


def register_attention() -> None:
    """Register `docket_head_shaping` with transformers' attention interface (idempotent)."""
    register(ATTENTION, flash_attention)


def text_config(model: Any) -> Any:
    """The language model's config of a VLM (or the model's own config)."""
    return model.config.get_text_config(decoder=True)


def install(model: Any) -> str:
    """Route the language model's attention through `docket_head_shaping`.

    Returns:
        The implementation it defers to (the one the model had).
    """
    register_attention()
    config = text_config(model)
    current = str(config._attn_implementation or "sdpa")
    if current == ATTENTION:
        return str(getattr(model, "_docket_flash_original", "sdpa"))
    if config is model.config:
        model.set_attn_implementation(ATTENTION)
    else:
        model.set_attn_implementation({"text_config": ATTENTION})
    model._docket_flash_original = current
    return current


def image_token_id(model: Any) -> int | None:
    """The VLM's image placeholder token id (None for a text-only model)."""
    for name in ("image_token_index", "image_token_id"):
        value = getattr(model.config, name, None)
        if isinstance(value, int):
            return value
    return None


def generate(
    model: Any,
    tokenizer: Any,
    prompt_ids: list[int],
    params: DecodeParams,
    settings: FlashSettings,
    original: str,
    n: int = 1,
) -> tuple[list[Generation], FlashRun]:
    """Greedy or sampled decoding (`sampling`) with FLASH shaping; one forward per token."""
    image = image_token_id(model)
    runs = image_runs(prompt_ids, image) if image is not None else []
    run = FlashRun(settings, runs, int(text_config(model).num_hidden_layers), original)
    token = _RUN.set(run)
    started = time.perf_counter()
    try:
        decode = sample if params.temperature else greedy
        generations = decode(model, tokenizer, prompt_ids, params, n)
    finally:
        _RUN.reset(token)
    seconds = time.perf_counter() - started
    selected = sorted(
        (layer, head) for layer, heads in (run.selected or {}).items() for head in heads
    )
    metadata = {
        "method": "flash",
        "visual_heads": [f"{layer}:{head}" for layer, head in selected],
        "image_tokens": sum(length for _, length, _ in runs),
        "shaped_steps": run.shaped_steps,
        "nfe": run.forwards,
        "tokens_per_forward": round(
            sum(len(g.token_ids) for g in generations[:1]) / max(run.forwards, 1), 4
        ),
        "latency_s": round(seconds, 6),
        "strength": settings.strength,
    }
    for generation in generations:
        generation.metadata = dict(metadata)
    return generations, run
