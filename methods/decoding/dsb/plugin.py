"""DSB as a `docket/local` method plugin (`-M method=dsb`): loading and caching the mask
predictor, and the `DecodeFn` that runs `algorithm.generate` per call (see `algorithm` for the
method itself)."""

from __future__ import annotations

import inspect
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from docket.methods.local.loading import CheckpointSpec, LoadedModel
from docket.methods.local.registry import method_plugin
from docket.methods.local.sampling import (
    DecodeFn,
    DecodeParams,
    Generation,
    TokenStep,
    eos_token_ids,
    token_step,
)

from .algorithm import DSBResult, DSBSettings, HFMaskedLM, MaskedLM, ToyMaskedLM, generate


def decode_fn(model: MaskedLM, settings: DSBSettings) -> DecodeFn:
    """A `DecodeFn` running DSB on `model` with `settings` (temperature/seed per call).

    Args:
        model: The mask predictor.
        settings: The knobs; `gen_length` 0 takes each call's max_tokens.

    Returns:
        The `DecodeFn`.
    """

    def decode(
        _model: Any, tokenizer: Any, prompt_ids: list[int], params: DecodeParams, n: int
    ) -> list[Generation]:
        length = settings.gen_length or params.max_new_tokens
        limit = getattr(getattr(model, "model", None), "config", None)
        max_length = getattr(limit, "max_length", None)
        if isinstance(max_length, int) and len(prompt_ids) + length > max_length:
            length = max_length - len(prompt_ids)
            if length < 1:
                raise ValueError(
                    f"prompt of {len(prompt_ids)} tokens leaves no room in the model's "
                    f"{max_length} positions"
                )
        temperature = params.temperature or 0.0
        generations = []
        for choice in range(n):
            seed = None if params.seed is None else params.seed + choice
            run = DSBSettings(
                **{
                    **settings.__dict__,
                    "gen_length": length,
                    "temperature": temperature,
                    "seed": seed,
                }
            )
            result = generate(model, prompt_ids, run, params.interrupted, params.logprobs)
            generations.append(to_generation(result, tokenizer, params, run))
            if temperature <= 0:
                generations.extend([generations[0]] * (n - 1))
                break
        return generations

    return decode


def to_generation(
    result: DSBResult, tokenizer: Any, params: DecodeParams, settings: DSBSettings
) -> Generation:
    """The answer cut at the first EOS (stop) and at a stop sequence, with DSB's counters.

    Args:
        result: What `generate` returned.
        tokenizer: The checkpoint's tokenizer.
        params: The call's decoding parameters (stop sequences, logprobs).
        settings: The settings of the run (for the counters).

    Returns:
        The `Generation` with DSB's counters as its metadata.
    """
    eos = eos_token_ids(None, tokenizer)
    tokens = result.tokens
    cut = next((i for i, t in enumerate(tokens) if t in eos), None)
    kept = tokens if cut is None else tokens[: cut + 1]
    text_ids = kept if cut is None else kept[:-1]
    text = tokenizer.decode(text_ids, skip_special_tokens=True)
    stop_reason: Literal["stop", "max_tokens"] = "max_tokens" if cut is None else "stop"
    found = [i for i in (text.find(s) for s in params.stop_seqs if s) if i >= 0]
    if found:
        text, stop_reason = text[: min(found)], "stop"
    steps: list[TokenStep] = []
    if params.logprobs:
        for index, token in enumerate(text_ids):
            steps.append(token_step(result.step_logits[index], token, params.top_logprobs))
    trace = result.trace
    return Generation(
        kept,
        text,
        stop_reason,
        steps,
        metadata={
            "method": "dsb",
            "schedule": settings.schedule,
            "cache": settings.cache,
            "threshold": settings.threshold,
            "steps": settings.steps if settings.threshold is None else None,
            "nfe": trace.nfe,
            "global_forwards": trace.global_forwards,
            "window_forwards": trace.window_forwards,
            "processed_tokens": trace.processed_tokens,
            "gen_length": settings.gen_length,
            "tokens_per_forward": round(settings.gen_length / max(trace.nfe, 1), 4),
            "latency_s": round(result.seconds, 6),
        },
    )


_LOADED: dict[tuple[CheckpointSpec, bool, int | None], LoadedModel] = {}
_LOAD_LOCK = threading.Lock()


def load_masked_lm(
    spec: CheckpointSpec, trust_remote_code: bool, mask_id: int | None
) -> LoadedModel:
    """A mask predictor checkpoint as a `LoadedModel` whose `model` is a `MaskedLM` (cached).

    Args:
        spec: Where the checkpoint is and how to place it.
        trust_remote_code: Whether to run the checkpoint's own modelling code.
        mask_id: The mask token id (None: the checkpoint's own).

    Returns:
        The loaded mask predictor and its tokenizer.
    """
    key = (spec, trust_remote_code, mask_id)
    with _LOAD_LOCK:
        if key not in _LOADED:
            _LOADED[key] = _load_masked_lm(spec, trust_remote_code, mask_id)
        return _LOADED[key]


def _load_masked_lm(
    spec: CheckpointSpec, trust_remote_code: bool, mask_id: int | None
) -> LoadedModel:
    from .toy_mdlm import checkpoint

    if spec.gguf_file:
        raise ValueError(
            "-M method=dsb needs a masked-diffusion LM checkpoint directory, not a GGUF file "
            "(train the toy one: python methods/decoding/scripts/train_toy_mdlm.py --out DIR)"
        )
    if checkpoint.is_toy_checkpoint(spec.path):
        model, tokenizer = checkpoint.load(spec.path, spec.device, spec.dtype)
        masked = ToyMaskedLM(model, mask_id if mask_id is not None else model.config.mask_token_id)
        return LoadedModel(model=masked, tokenizer=tokenizer)
    return _load_hf(spec, trust_remote_code, mask_id)


def _load_hf(spec: CheckpointSpec, trust_remote_code: bool, mask_id: int | None) -> LoadedModel:
    """LLaDA / Dream (remote code) or a transformers masked LM."""
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    config = json.loads((Path(spec.path) / "config.json").read_text())
    model_type = str(config.get("model_type", ""))
    remote = "auto_map" in config
    if remote and not trust_remote_code:
        raise ValueError(
            f"-M method=dsb: {spec.path} ({model_type}) ships its own modelling code; "
            "run it only if you trust it: -M trust_remote_code=true"
        )
    dtype: Any = spec.dtype if spec.dtype == "auto" else getattr(torch, spec.dtype)
    loader = AutoModel if remote else AutoModelForMaskedLM
    try:
        model: Any = loader.from_pretrained(
            spec.path, dtype=dtype, local_files_only=True, trust_remote_code=trust_remote_code
        )
    except (ValueError, KeyError) as error:
        first = (str(error).splitlines() or [""])[0][:160]
        raise ValueError(
            f"-M method=dsb: {spec.path} is not a masked-diffusion / masked LM checkpoint ({first})"
        ) from None
    model.to(spec.device)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(
        spec.tokenizer or spec.path, local_files_only=True, trust_remote_code=trust_remote_code
    )
    found = mask_id
    if found is None:
        found = config.get("mask_token_id", getattr(tokenizer, "mask_token_id", None))
    if not isinstance(found, int):
        raise ValueError(f"-M method=dsb: {spec.path} names no mask token; pass -M mask_id=ID")
    try:
        names = frozenset(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        names = frozenset()
    shift = model_type.lower() == "dream"
    return LoadedModel(
        model=HFMaskedLM(model, found, shift_logits=shift, forward_args=names),
        tokenizer=tokenizer,
    )


@dataclass(frozen=True)
class PendingCheckpoint:
    """What `load` returns: the checkpoint is read in `build`, which sees the knobs that
    concern loading (`trust_remote_code`, `mask_id`)."""

    spec: CheckpointSpec


def _load_pending(spec: CheckpointSpec) -> LoadedModel:
    return LoadedModel(model=PendingCheckpoint(spec), tokenizer=None)


@method_plugin(
    "dsb",
    DSBSettings,
    "Dynamic Sliding Block decoding (+ DSB Cache) for masked-diffusion LMs",
    load=_load_pending,
)
def build(loaded: LoadedModel, settings: DSBSettings) -> DecodeFn:
    """Load the mask predictor (into `loaded`) and return DSB's `DecodeFn`.

    Args:
        loaded: What `_load_pending` returned (or an already loaded mask predictor).
        settings: The run's `-M` knobs.

    Returns:
        The `DecodeFn` that runs DSB with these settings.
    """
    if isinstance(loaded.model, PendingCheckpoint):
        real = load_masked_lm(loaded.model.spec, settings.trust_remote_code, settings.mask_id)
        loaded.model, loaded.tokenizer, loaded.lock = real.model, real.tokenizer, real.lock
    model = loaded.model
    if settings.cache != "none" and not model.supports_cache:
        raise ValueError(
            "-M method=dsb: -M cache=dsb needs a forward that takes replace_position "
            "(the toy mask predictor, or LLaDA / Dream with the DSB modelling code)"
        )
    return decode_fn(model, settings)
