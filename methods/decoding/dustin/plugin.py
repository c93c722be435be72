"""Dustin as a `docket/local` method plugin (`-M method=dustin`): the draft (the target's first
layers, or a separate checkpoint) and the `DecodeFn` around `algorithm.DustinDecoder`."""

from __future__ import annotations

from typing import Any

import torch

from docket.methods.local.loading import CheckpointSpec, LoadedModel, load
from docket.methods.local.registry import method_plugin
from docket.methods.local.sampling import DecodeFn, DecodeParams, Generation, eos_token_ids

from .algorithm import DustinDecoder, make_self_draft
from .experimental import ExperimentalDustinSettings
from .settings import DustinSettings


def _load_draft(loaded: LoadedModel, path: str) -> Any:
    """A separate draft checkpoint on the target's device and dtype, same vocabulary."""
    target = loaded.model
    dtype = str(getattr(target, "dtype", torch.float32)).replace("torch.", "")
    draft = load(CheckpointSpec(path=path, device=str(target.device), dtype=dtype)).model
    if draft.config.vocab_size != target.config.vocab_size:
        raise ValueError(
            f"-M method=dustin: the draft's vocabulary ({draft.config.vocab_size}) differs "
            f"from the target's ({target.config.vocab_size})"
        )
    return draft


# every knob is accepted; without an experimental one the run gets a plain `DustinSettings`
@method_plugin(
    "dustin",
    ExperimentalDustinSettings,
    "speculative decoding with sparse (Dustin) or dense verification",
)
def build(loaded: LoadedModel, settings: DustinSettings) -> DecodeFn:
    """Dustin's `DecodeFn` for a loaded causal LM target.

    Args:
        loaded: The target checkpoint.
        settings: The run's `-M` knobs (`ExperimentalDustinSettings` when an experimental
            knob was given).

    Returns:
        The `DecodeFn` that decodes speculatively with the draft the settings name.
    """
    if loaded.reads_images:
        raise ValueError("-M method=dustin decodes text-only causal LMs")
    target = loaded.model
    if settings.draft is not None:
        draft = _load_draft(loaded, settings.draft)
    else:
        draft = make_self_draft(target, settings.draft_layers)
    decoder = DustinDecoder(target, draft, settings)

    def decode(
        _model: Any, tokenizer: Any, prompt_ids: list[int], params: DecodeParams, n: int
    ) -> list[Generation]:
        eos = eos_token_ids(target, tokenizer)

        def text_of(ids: list[int]) -> str:
            return str(tokenizer.decode(ids, skip_special_tokens=True))

        generations = []
        for choice in range(n):
            rng = None
            if params.temperature:
                rng = torch.Generator()
                if params.seed is None:
                    rng.seed()
                else:
                    rng.manual_seed(params.seed + choice)
            generation, _ = decoder.generate(prompt_ids, params, eos, text_of, rng)
            generations.append(generation)
            if not params.temperature:
                generations.extend([generation] * (n - 1))
                break
        return generations

    return decode
