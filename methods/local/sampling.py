"""Decoding methods for local causal LMs: a token loop with a KV cache, and a registry.

A decoding method is a `DecodeFn(model, tokenizer, prompt_ids, params, n) -> list[Generation]`
registered in `DECODING_METHODS` under the name users pass as `-M method=<name>`; later
methods (speculative decoding, diffusion LMs) plug in the same way. torch is imported lazily.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

StopReason = Literal["stop", "max_tokens"]


def _never() -> bool:
    return False


class GenerationInterrupted(Exception):
    """The caller stopped waiting (a time limit or cancellation): the token loop ended early."""


@dataclass(frozen=True)
class DecodeParams:
    """What to generate; built from Inspect's GenerateConfig."""

    max_new_tokens: int = 256
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop_seqs: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    #: Further inputs of the first forward pass besides the prompt ids: a vision-language
    #: model's `pixel_values` (and e.g. `image_sizes`), as its processor returned them.
    prompt_inputs: Mapping[str, Any] = field(default_factory=dict)
    #: Polled before every forward pass; True ends decoding with `GenerationInterrupted`, so a
    #: cancelled Inspect sample (time limit) frees the model instead of finishing the generation.
    interrupted: Callable[[], bool] = _never


@dataclass
class TokenStep:
    """One generated token with its log probability and the top alternatives (best first)."""

    token_id: int
    logprob: float
    top: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Generation:
    """One completion: generated ids (incl. a final EOS), text (cut at a stop sequence)."""

    token_ids: list[int]
    text: str
    stop_reason: StopReason
    steps: list[TokenStep] = field(default_factory=list)
    #: Method counters for this completion (NFE, acceptance rate, ...), logged per model call.
    metadata: dict[str, Any] = field(default_factory=dict)


DecodeFn = Callable[[Any, Any, list[int], DecodeParams, int], list[Generation]]
Chooser = Callable[[Any], int]


def eos_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """End-of-sequence ids from the tokenizer and the model's generation config."""
    ids: set[int] = set()
    candidates: list[Any] = [getattr(tokenizer, "eos_token_id", None)]
    gen_config = getattr(model, "generation_config", None)
    candidates.append(getattr(gen_config, "eos_token_id", None))
    for value in candidates:
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list | tuple):
            ids.update(v for v in value if isinstance(v, int))
    return ids


def _first_stop(text: str, stop_seqs: tuple[str, ...]) -> int | None:
    found = [i for i in (text.find(s) for s in stop_seqs if s) if i >= 0]
    return min(found) if found else None


def forward_style(model: Any) -> tuple[str, dict[str, Any]]:
    """The KV-cache argument name (`cache` in newer transformers) and extra forward kwargs.

    Args:
        model: A transformers model (or its forward function).

    Returns:
        The cache argument's name and the extra keyword arguments of a decoding forward.
    """
    forward = getattr(model, "forward", model)
    try:
        names = set(inspect.signature(forward).parameters)
    except (TypeError, ValueError):
        names = set()
    cache_name = "cache" if "cache" in names else "past_key_values"
    # ask only for the last position's logits when the model supports it
    return cache_name, ({"logits_to_keep": 1} if "logits_to_keep" in names else {})


class TokenTracker:
    """One completion's bookkeeping as tokens arrive: EOS, stop sequences, logprobs, max tokens.

    Shared by `decode_loop` and the batched scheduler (`batching.py`), so both end a
    completion on exactly the same token.

    Args:
        tokenizer: Decodes the tokens so far (stop sequences are searched in the text).
        params: What to generate.
        eos: The end-of-sequence ids.
    """

    def __init__(self, tokenizer: Any, params: DecodeParams, eos: set[int]) -> None:
        self.tokenizer = tokenizer
        self.params = params
        self.eos = eos
        self.out: list[int] = []
        self.steps: list[TokenStep] = []
        self.text = ""

    def add(self, logits: Any, token: int) -> Generation | None:
        """Record the token chosen from `logits`.

        Args:
            logits: The step's logits over the vocabulary (for logprobs).
            token: The token chosen.

        Returns:
            The finished completion, or None when decoding goes on.
        """
        self.out.append(token)
        if token in self.eos:
            return Generation(self.out, self.text, "stop", self.steps)
        if self.params.logprobs:
            self.steps.append(token_step(logits, token, self.params.top_logprobs))
        self.text = self.tokenizer.decode(self.out, skip_special_tokens=True)
        cut = _first_stop(self.text, self.params.stop_seqs)
        if cut is not None:
            return Generation(self.out, self.text[:cut], "stop", self.steps)
        if len(self.out) >= self.params.max_new_tokens:
            return Generation(self.out, self.text, "max_tokens", self.steps)
        return None


def decode_loop(
    model: Any, tokenizer: Any, prompt_ids: list[int], params: DecodeParams, choose: Chooser
) -> Generation:
    """Generate one completion token by token; `choose(logits) -> token id` picks each token."""
    return decode_from(model, tokenizer, prompt_ids, params, choose)[0]


def decode_from(
    model: Any,
    tokenizer: Any,
    prompt_ids: list[int],
    params: DecodeParams,
    choose: Chooser,
    past: Any = None,
    cached: int = 0,
) -> tuple[Generation, Any]:
    """`decode_loop` starting from a KV cache that already holds the prompt's first tokens.

    Args:
        model: The causal LM.
        tokenizer: Its tokenizer.
        prompt_ids: The whole prompt.
        params: What to generate.
        choose: Picks each token from the step's logits.
        past: A KV cache holding exactly `prompt_ids[:cached]` (None: start empty).
        cached: How many prompt tokens `past` holds (less than `len(prompt_ids)`).

    Returns:
        The completion, and the KV cache after it: it holds `prompt_ids` plus every generated
        token but the last (None when no token was generated).
    """
    import torch

    if params.max_new_tokens <= 0:
        return Generation([], "", "max_tokens"), past
    device = getattr(model, "device", "cpu")
    eos = eos_token_ids(model, tokenizer)
    cache_name, extra = forward_style(model)
    ids = torch.tensor([prompt_ids[cached:]], device=device)
    first = _on_device(params.prompt_inputs, device, getattr(model, "dtype", None))
    tracker = TokenTracker(tokenizer, params, eos)
    with torch.inference_mode():
        while True:
            if params.interrupted():
                raise GenerationInterrupted(f"stopped after {len(tracker.out)} tokens")
            result = model(input_ids=ids, use_cache=True, **{cache_name: past}, **extra, **first)
            first = {}
            past = getattr(result, cache_name)
            logits = result.logits[0, -1].float()
            token = choose(logits)
            done = tracker.add(logits, token)
            if done is not None:
                return done, past
            ids = torch.tensor([[token]], device=device)


def greedy_choice(logits: Any) -> int:
    """The argmax token (greedy decoding's chooser).

    Args:
        logits: The step's logits.

    Returns:
        The token id.
    """
    import torch

    return int(torch.argmax(logits))


def sampling_choice(params: DecodeParams, device: Any = "cpu") -> Chooser:
    """A chooser drawing from the filtered distribution (temperature, top-p, top-k, seed).

    Args:
        params: The decoding parameters; a set `seed` makes the draws reproducible.
        device: Where the random generator lives (the model's device).

    Returns:
        The chooser (greedy at temperature 0); one chooser draws one reproducible stream.
    """
    import torch

    temperature = 1.0 if params.temperature is None else params.temperature
    if temperature <= 0:
        return greedy_choice
    generator = torch.Generator(device=device)
    if params.seed is None:
        generator.seed()
    else:
        generator.manual_seed(params.seed)

    def choose(logits: Any) -> int:
        probs = torch.softmax(filter_logits(logits, temperature, params.top_p, params.top_k), -1)
        return int(torch.multinomial(probs, 1, generator=generator))

    return choose


def _on_device(inputs: Mapping[str, Any], device: Any, dtype: Any) -> dict[str, Any]:
    """Tensors moved to the model's device; floating ones (pixels) cast to its dtype."""
    moved: dict[str, Any] = {}
    for name, value in inputs.items():
        if hasattr(value, "to"):
            value = value.to(device)
            if dtype is not None and value.is_floating_point():
                value = value.to(dtype)
        moved[name] = value
    return moved


def token_step(logits: Any, token: int, top: int) -> TokenStep:
    """The chosen token's logprob and the top alternatives at one decoding step.

    Args:
        logits: The step's logits over the vocabulary.
        token: The token chosen.
        top: How many top alternatives to keep (0: none).

    Returns:
        The step's `TokenStep`.
    """
    import torch

    logprobs = torch.log_softmax(logits, dim=-1)
    step = TokenStep(token, float(logprobs[token]))
    if top > 0:
        values, indices = torch.topk(logprobs, min(top, logprobs.shape[-1]))
        step.top = [
            (int(i), float(v)) for i, v in zip(indices.tolist(), values.tolist(), strict=True)
        ]
    return step


def greedy(
    model: Any, tokenizer: Any, prompt_ids: list[int], params: DecodeParams, n: int = 1
) -> list[Generation]:
    """Argmax decoding; all `n` choices are the same completion."""
    generation = decode_loop(model, tokenizer, prompt_ids, params, greedy_choice)
    return [generation] * n


def filter_logits(logits: Any, temperature: float, top_p: float | None, top_k: int | None) -> Any:
    """Scale by temperature, then mask everything outside top-k and the top-p nucleus."""
    import torch

    scaled = logits / temperature
    if top_k is not None and 0 < top_k < scaled.shape[-1]:
        kth = torch.topk(scaled, top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p is not None and 0 < top_p < 1:
        ordered, order = torch.sort(scaled, descending=True)
        cumulative = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
        drop = cumulative - torch.softmax(ordered, dim=-1) >= top_p
        scaled = scaled.masked_fill(torch.zeros_like(drop).scatter(0, order, drop), float("-inf"))
    return scaled


def sample(
    model: Any, tokenizer: Any, prompt_ids: list[int], params: DecodeParams, n: int = 1
) -> list[Generation]:
    """Temperature / top-p / top-k sampling; a set `seed` makes the `n` choices reproducible."""
    temperature = 1.0 if params.temperature is None else params.temperature
    if temperature <= 0:
        return greedy(model, tokenizer, prompt_ids, params, n)
    choose = sampling_choice(params, getattr(model, "device", "cpu"))
    return [decode_loop(model, tokenizer, prompt_ids, params, choose) for _ in range(n)]


DECODING_METHODS: dict[str, DecodeFn] = {"greedy": greedy, "sample": sample}
"""Decoding methods by `-M method=` name."""


def pick_method(name: str | None, temperature: float | None) -> DecodeFn:
    """The method called `name`; by default greedy at temperature 0/None, else sampling."""
    if name is None:
        name = "sample" if temperature else "greedy"
    if name not in DECODING_METHODS:
        accepted = ", ".join(sorted(DECODING_METHODS))
        raise ValueError(f"unknown decoding method {name!r} (accepted: {accepted})")
    return DECODING_METHODS[name]
