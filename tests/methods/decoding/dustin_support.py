"""What Dustin's tests share: the random prompt, a greedy Dustin decode, transformers' greedy."""

from __future__ import annotations

from typing import Any

import torch

from docket.methods.decoding.dustin.algorithm import DustinDecoder, make_self_draft
from docket.methods.decoding.dustin.experimental import ExperimentalDustinSettings
from docket.methods.local.sampling import DecodeParams

#: The tiny target's end-of-sequence id (its vocabulary's last).
EOS = 299


def random_prompt() -> list[int]:
    """160 seeded random ids of the tiny target's vocabulary (no EOS)."""
    return torch.randint(1, 298, (160,), generator=torch.Generator().manual_seed(1)).tolist()


def decode(target: Any, prompt: list[int], new: int = 32, **settings: Any) -> Any:
    """Greedy Dustin decoding of `new` tokens (logprobs on) with a self-draft of
    `draft_layers` (2) layers; returns the generation and its trace. The settings are those
    `-M method=dustin` would run with: `ExperimentalDustinSettings` when an experimental
    knob is given, else `DustinSettings`."""
    draft = make_self_draft(target, settings.pop("draft_layers", 2))
    chosen = ExperimentalDustinSettings(**settings).resolve_knobs(frozenset(settings))
    decoder = DustinDecoder(target, draft, chosen)
    params = DecodeParams(max_new_tokens=new, logprobs=True)
    return decoder.generate(prompt, params, {EOS}, lambda ids: str(ids))


def greedy(target: Any, prompt: list[int], new: int) -> list[int]:
    """transformers' own greedy continuation of `prompt`."""
    with torch.inference_mode():
        out = target.generate(torch.tensor([prompt]), max_new_tokens=new, do_sample=False)
    return list(out[0, len(prompt) :].tolist())
