"""DSB: Dynamic Sliding Block decoding and DSB Cache for masked-diffusion LMs (`-M method=dsb`).

The paper: lizhuo-luo/DSB, arXiv 2602.05992. A masked-diffusion LM starts from an answer of
`gen_length` mask tokens after the prompt; every step runs the bidirectional mask predictor and
*transfers* (unmasks) some masked positions of the active window [s, e).

- Transfer rule (`transfer`, Fast-dLLM's threshold rule): propose x̂ = argmax of the logits
  (Gumbel-max in float64 at temperature > 0), confidence c = softmax(logits)[x̂] in float64;
  unmask every eligible position with c >= threshold, and always the most confident one.
  Without a threshold (`threshold=None`, `steps` > 0) it is LLaDA's original fixed quota: the
  `quota` most confident eligible positions (`quota_plan`, LLaDA's `get_num_transfer_tokens`:
  a naive block's tokens spread over its share of `steps`, DSB's whole answer over `steps`).
  Naive blocks with that quota and `steps = gen_length` (one token per step) are the paper's
  "vanilla" row.
- Naive blocks (`naive_window`): fixed blocks of `block_length`; the next block opens only
  when the current one is fully unmasked.
- DSB (`dsb_window`): s = first still-masked position before the previous e; e = min(P + S_init
  + U, s + S_max) with U = tokens unmasked so far. The window keeps exactly S_init masked
  positions eligible and slides. `schedule=dsb` (greedy) has S_max = unbounded (-1),
  `schedule=dsb_const` has S_max = S_init.
- DSB Cache (`cache=dsb`): a full forward rebuilds the KV cache (global refresh); then only the
  window [s - pw, e + sw) is recomputed (`replace_position`), with pw = min(max(shift of s,
  prefix_window), s) and sw = min(L - e, suffix_window); a global refresh happens again after
  every `refresh` newly unmasked tokens (default S_init). With the naive schedule the same loop
  is Fast-dLLM's dual cache (the window is the block; a refresh also opens each block).

`generate` runs any of these over a `MaskedLM` adapter: the toy mask predictor
(`toy_mdlm`, the shipped CPU model) or a transformers checkpoint (`HFMaskedLM`: LLaDA / Dream
with `-M trust_remote_code=true`, or any `AutoModelForMaskedLM`). Counters: NFE (global +
window forwards), tokens processed, tokens per forward, latency.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import torch

from docket.methods.local.sampling import GenerationInterrupted
from docket.methods.local.settings import knob

Schedule = Literal["dsb", "dsb_const", "naive"]
SCHEDULES: tuple[str, ...] = ("dsb", "dsb_const", "naive")
CACHES: tuple[str, ...] = ("none", "dsb")
UNBOUNDED = -1


# --- the schedule and the transfer rule as pure functions ------------------------------------


def first_masked(masked: Sequence[bool], start: int, end: int) -> int:
    """Index of the first True of `masked[start:end]`, or `end` when there is none."""
    for index in range(start, min(end, len(masked))):
        if masked[index]:
            return index
    return end


def dsb_window(
    masked: Sequence[bool],
    prompt_length: int,
    unmasked: int,
    block_length: int,
    max_block_length: int,
    previous_end: int,
) -> tuple[int, int]:
    """DSB's active window (s, e) over the whole sequence [prompt | answer].

    s = first masked position before `previous_end` (else `previous_end`); e = min(P + S_init +
    U, s + S_max), or P + S_init + U when S_max is -1 (greedy); e never exceeds the length.
    """
    s = first_masked(masked, prompt_length, previous_end)
    e = prompt_length + block_length + unmasked
    if max_block_length != UNBOUNDED:
        e = min(e, s + max_block_length)
    return s, min(e, len(masked))


def naive_window(masked: Sequence[bool], prompt_length: int, block_length: int) -> tuple[int, int]:
    """The fixed block holding the first masked answer position: [P + kB, P + (k+1)B)."""
    total = len(masked)
    first = first_masked(masked, prompt_length, total)
    if first >= total:
        return total, total
    start = prompt_length + (first - prompt_length) // block_length * block_length
    return start, min(start + block_length, total)


def schedule_window(
    schedule: str,
    masked: Sequence[bool],
    prompt_length: int,
    unmasked: int,
    block_length: int,
    max_block_length: int,
    previous_end: int,
) -> tuple[int, int]:
    """The window of `schedule` (dsb, dsb_const or naive) for the current mask state."""
    if schedule == "naive":
        return naive_window(masked, prompt_length, block_length)
    bound = block_length if schedule == "dsb_const" else max_block_length
    return dsb_window(masked, prompt_length, unmasked, block_length, bound, previous_end)


@dataclass(frozen=True)
class Transfer:
    """What one step unmasks: proposals and confidences for every position given, and the
    positions chosen (a bool vector)."""

    proposals: torch.Tensor
    confidence: torch.Tensor
    chosen: torch.Tensor


def transfer(
    logits: torch.Tensor,
    eligible: torch.Tensor,
    threshold: float | None,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    quota: int | None = None,
) -> Transfer:
    """The transfer rule over `logits` `[n, vocab]` and a bool `eligible` `[n]`.

    With a `threshold`: every eligible position whose confidence is >= `threshold`, plus the
    most confident eligible one (so each step unmasks at least one token when any is
    eligible). Without one: the `quota` most confident eligible positions (all of them when
    fewer are eligible; none at quota 0). At temperature > 0 the proposal is Gumbel-max
    sampled in float64; the confidence is always the softmax probability (float64) of the
    proposal.
    """
    if (threshold is None) == (quota is None):
        raise ValueError("transfer takes exactly one of a threshold or a quota")
    wide = logits.to(torch.float64)
    if temperature > 0:
        uniform = torch.rand(wide.shape, generator=generator, dtype=torch.float64).to(wide.device)
        gumbel = -torch.log(-torch.log(uniform.clamp_min(1e-300)))
        proposals = torch.argmax(wide / temperature + gumbel, dim=-1)
    else:
        proposals = torch.argmax(wide, dim=-1)
    probabilities = torch.softmax(wide, dim=-1)
    confidence = probabilities.gather(-1, proposals[:, None]).squeeze(-1)
    ranked = torch.where(eligible, confidence, torch.full_like(confidence, -math.inf))
    if quota is not None:
        chosen = torch.zeros_like(eligible)
        count = min(quota, int(eligible.sum()))
        if count > 0:  # stable: equal confidences go to the leftmost position
            order = torch.sort(ranked, descending=True, stable=True).indices
            chosen[order[:count]] = True
        return Transfer(proposals, confidence, chosen)
    assert threshold is not None
    chosen = eligible & (confidence >= threshold)
    if bool(eligible.any()):
        chosen[int(torch.argmax(ranked))] = True
    return Transfer(proposals, confidence, chosen)


def quota_plan(total: int, steps: int) -> list[int]:
    """LLaDA's `get_num_transfer_tokens`: `total` tokens over `steps` steps, `total // steps`
    each and one more on each of the first `total % steps` steps."""
    if steps < 1:
        raise ValueError("a quota plan needs at least one step")
    base, extra = divmod(total, steps)
    return [base + (index < extra) for index in range(steps)]


# --- models -----------------------------------------------------------------------------------


class MaskedLM(Protocol):
    """A bidirectional mask predictor as the decoding loop sees it."""

    mask_id: int
    supports_cache: bool

    def full(self, ids: torch.Tensor, use_cache: bool) -> tuple[torch.Tensor, Any]:
        """Logits `[L, vocab]` of the whole sequence `ids` `[L]`, and a cache when asked."""
        ...

    def window(
        self, ids: torch.Tensor, replace_position: torch.Tensor, cache: Any
    ) -> tuple[torch.Tensor, Any]:
        """Logits `[W, vocab]` of the window `ids` `[W]` (positions where `replace_position`
        `[L]` is True), recomputing only the window and reading the rest from `cache`."""
        ...


@dataclass
class ToyMaskedLM:
    """The toy mask predictor (`toy_mdlm.model.ToyMaskPredictor`) as a `MaskedLM`; it also
    takes the answer's first position and its question turn's (`begin` sets them per
    generation)."""

    model: Any
    mask_id: int
    supports_cache: bool = True
    answer_start: int = 0
    turn_start: int = 0

    def begin(self, prompt: Sequence[int]) -> None:
        self.answer_start = len(prompt)
        self.turn_start = int(self.model.turn_start(prompt))

    @property
    def device(self) -> Any:
        return self.model.device

    def full(self, ids: torch.Tensor, use_cache: bool) -> tuple[torch.Tensor, Any]:
        out = self.model(
            ids[None], self.answer_start, use_cache=use_cache, turn_start=self.turn_start
        )
        return out.logits[0], out.past_key_values

    def window(
        self, ids: torch.Tensor, replace_position: torch.Tensor, cache: Any
    ) -> tuple[torch.Tensor, Any]:
        out = self.model(
            ids[None],
            self.answer_start,
            past_key_values=cache,
            replace_position=replace_position,
            turn_start=self.turn_start,
        )
        return out.logits[0], out.past_key_values


@dataclass
class HFMaskedLM:
    """A transformers mask predictor: LLaDA / Dream (remote code) or any masked LM.

    `shift_logits`: Dream predicts position i from position i - 1, so its logits are shifted
    right by one (as in Dream's own sampler). The window cache needs a forward that takes
    `replace_position` (the Fast-dLLM / DSB modelling code of LLaDA and Dream).
    """

    model: Any
    mask_id: int
    shift_logits: bool = False
    forward_args: frozenset[str] = frozenset()

    @property
    def device(self) -> Any:
        return self.model.device

    @property
    def supports_cache(self) -> bool:
        return "replace_position" in self.forward_args

    def _logits(self, out: Any) -> torch.Tensor:
        logits = out.logits[0]
        if self.shift_logits:
            logits = torch.cat([logits[:1], logits[:-1]], dim=0)
        return logits

    def full(self, ids: torch.Tensor, use_cache: bool) -> tuple[torch.Tensor, Any]:
        extra = {"use_cache": True} if use_cache and "use_cache" in self.forward_args else {}
        out = self.model(ids[None], **extra)
        return self._logits(out), getattr(out, "past_key_values", None)

    def window(
        self, ids: torch.Tensor, replace_position: torch.Tensor, cache: Any
    ) -> tuple[torch.Tensor, Any]:
        extra = {"dual_cache": True} if "dual_cache" in self.forward_args else {}
        out = self.model(
            ids[None],
            past_key_values=cache,
            use_cache=True,
            replace_position=replace_position[None],
            **extra,
        )
        return self._logits(out), out.past_key_values


# --- the decoding loop -----------------------------------------------------------------------


@dataclass(frozen=True)
class DSBSettings:
    """The knobs of `-M method=dsb` (defaults: the paper's LLaDA settings, except `gen_length`).

    `temperature` and `seed` are not knobs: the plugin sets them per call from the generate
    config. `resolve_knobs` holds the rules between knobs.
    """

    schedule: str = knob(
        "dsb",
        "dsb: greedy sliding block (S_max unbounded); dsb_const: S_max = S_init; naive: "
        "fixed blocks",
        choices=SCHEDULES,
    )
    block_length: int = knob(32, "S_init: the masked positions the window keeps", minimum=1)
    max_block_length: int | None = knob(
        None,
        "S_max, -1 unbounded (default: unbounded for dsb, block_length for dsb_const; "
        "ignored by naive)",
        minimum=UNBOUNDED,
    )
    threshold: float | None = knob(
        0.9,
        "Fast-dLLM's confidence threshold; None: LLaDA's fixed quota over steps",
        minimum=0.0,
        maximum=1.0,
    )
    steps: int = knob(
        0,
        "LLaDA's sampling steps (replaces the threshold): naive blocks share them equally, "
        "DSB spreads the whole answer over them (one token per step at gen_length)",
        minimum=0,
    )
    gen_length: int = knob(0, "answer length in tokens; 0: the call's max_tokens", minimum=0)
    cache: str = knob("none", "dsb: DSB Cache (Fast-dLLM's dual cache with naive)", choices=CACHES)
    prefix_window: int = knob(24, "cached positions before the window recomputed", minimum=0)
    suffix_window: int = knob(0, "cached positions after the window recomputed", minimum=0)
    refresh: int | None = knob(
        None,
        "global refresh after this many newly unmasked tokens (default block_length)",
        minimum=1,
    )
    mask_id: int | None = knob(None, "the mask token id (default: the checkpoint's own)", minimum=0)
    trust_remote_code: bool = knob(False, "run a checkpoint's own modelling code (LLaDA, Dream)")
    temperature: float = 0.0
    seed: int | None = None

    def bound(self) -> int:
        """S_max as the schedule functions take it."""
        if self.max_block_length is not None:
            return self.max_block_length
        return self.block_length if self.schedule == "dsb_const" else UNBOUNDED

    def resolve_knobs(self, given: frozenset[str]) -> DSBSettings:
        """`-M steps=N` (N > 0) replaces the threshold rule, so it excludes `-M threshold`;
        `-M max_block_length` is -1 or at least 1.

        Args:
            given: The knobs the run gave.

        Returns:
            The settings, without a threshold when steps were given.
        """
        resolved = self
        if self.steps:
            if "threshold" in given:
                raise ValueError(
                    "-M method=dsb: -M steps (LLaDA's fixed quota) and -M threshold (Fast-dLLM's "
                    "confidence rule) exclude each other; give one"
                )
            resolved = replace(self, threshold=None)
        bound = self.max_block_length
        if bound is not None and bound not in (UNBOUNDED,) and bound < 1:
            raise ValueError("-M method=dsb: -M max_block_length must be -1 (unbounded) or >= 1")
        return resolved


@dataclass
class DSBTrace:
    """Counters of one generation. `steps` lists each forward as (kind, s, e, positions
    unmasked), kind `full` (no cache), `global` (cache refresh) or `window`."""

    nfe: int = 0
    global_forwards: int = 0
    window_forwards: int = 0
    processed_tokens: int = 0
    steps: list[tuple[str, int, int, tuple[int, ...]]] = field(default_factory=list)


@dataclass
class DSBResult:
    """The answer region (every position unmasked), per-position log-probabilities at the step
    each was unmasked (and, when kept, those logits by answer index), and the counters."""

    tokens: list[int]
    logprobs: list[float]
    trace: DSBTrace
    seconds: float
    step_logits: dict[int, torch.Tensor] = field(default_factory=dict)


def _never() -> bool:
    return False


class _State:
    """The sequence being decoded and what has been unmasked."""

    def __init__(
        self, prompt: list[int], mask_id: int, gen_length: int, device: Any, keep_logits: bool
    ) -> None:
        self.prompt_length = len(prompt)
        self.keep_logits = keep_logits
        self.ids = torch.tensor(prompt + [mask_id] * gen_length, device=device)
        self.mask_id = mask_id
        self.masked = [False] * len(prompt) + [True] * gen_length
        self.unmasked = 0
        self.logprobs: dict[int, float] = {}
        self.step_logits: dict[int, torch.Tensor] = {}

    @property
    def total(self) -> int:
        return len(self.masked)

    @property
    def done(self) -> bool:
        return self.unmasked >= self.total - self.prompt_length

    def apply(
        self,
        logits: torch.Tensor,
        offset: int,
        s: int,
        e: int,
        settings: DSBSettings,
        rng: Any,
        quota: int | None = None,
    ) -> tuple[int, ...]:
        """Transfer within [s, e) of the window whose first position is `offset` (by the
        threshold, or by `quota` when the settings have none); returns the positions
        unmasked. Only the rows of [s, e) enter the rule (softmax is per row, so the other
        rows could not change what is chosen)."""
        low, high = max(s, offset), min(e, offset + logits.shape[0])
        if high <= low:
            return ()
        rows = logits[low - offset : high - offset].clone()
        rows[:, self.mask_id] = -math.inf  # never propose the mask token itself
        eligible = torch.tensor(self.masked[low:high], device=rows.device)
        step = transfer(rows, eligible, settings.threshold, settings.temperature, rng, quota)
        chosen = step.chosen.nonzero().squeeze(-1).tolist()
        for local in chosen:
            position = low + local
            token = int(step.proposals[local])
            self.ids[position] = token
            self.masked[position] = False
            self.logprobs[position] = math.log(max(float(step.confidence[local]), 1e-300))
            if self.keep_logits:
                self.step_logits[position - self.prompt_length] = rows[local].float().cpu()
        self.unmasked += len(chosen)
        return tuple(low + local for local in chosen)


class _Quota:
    """LLaDA's per-step quota when there is no threshold: a plan per naive block (its masked
    tokens over `steps // blocks` steps) or one over the whole answer for DSB, indexed by the
    forwards spent on it. Past the plan (DSB, when windows held fewer eligible positions than
    the quota) each step takes the plan's smallest quota, at least one [ours: LLaDA's code
    would index past its plan]."""

    def __init__(self, settings: DSBSettings) -> None:
        self.settings = settings
        self.block: int | None = None
        self.plan: list[int] = []
        self.index = 0

    def next(self, state: _State, s: int, e: int) -> int | None:
        """The quota of the next forward for window [s, e) (None with a threshold)."""
        settings = self.settings
        if settings.threshold is not None:
            return None
        block = s if settings.schedule == "naive" else -1
        if block != self.block:
            self.block, self.index = block, 0
            if settings.schedule == "naive":
                blocks = -(-settings.gen_length // settings.block_length)
                remaining = sum(state.masked[s:e])
                self.plan = quota_plan(remaining, max(1, settings.steps // blocks))
            else:
                self.plan = quota_plan(settings.gen_length, settings.steps)
        self.index += 1
        if self.index <= len(self.plan):
            return self.plan[self.index - 1]
        return max(1, min(self.plan))


def generate(
    model: MaskedLM,
    prompt: list[int],
    settings: DSBSettings,
    interrupted: Callable[[], bool] = _never,
    keep_logits: bool = False,
) -> DSBResult:
    """Decode `settings.gen_length` answer tokens after `prompt` with the chosen schedule and
    cache; raises `GenerationInterrupted` when `interrupted()` turns True between forwards.
    `keep_logits` keeps each answer position's logits from the step that unmasked it."""
    if settings.cache != "none" and not model.supports_cache:
        raise ValueError(
            "-M cache=dsb needs a model whose forward takes replace_position "
            "(the toy mask predictor, or LLaDA / Dream with the DSB / Fast-dLLM modelling code)"
        )
    if settings.threshold is None and settings.steps < 1:
        raise ValueError("without a threshold, DSB needs steps >= 1 (LLaDA's fixed quota)")
    started = time.perf_counter()
    device = getattr(model, "device", "cpu")
    state = _State(prompt, model.mask_id, settings.gen_length, device, keep_logits)
    begin = getattr(model, "begin", None)
    if begin is not None:
        begin(prompt)
    trace = DSBTrace()
    rng = None
    if settings.temperature > 0:
        rng = torch.Generator()
        if settings.seed is None:
            rng.seed()
        else:
            rng.manual_seed(settings.seed)
    with torch.inference_mode():
        if settings.cache == "none":
            _decode_plain(model, state, settings, trace, interrupted, rng)
        else:
            _decode_cached(model, state, settings, trace, interrupted, rng)
    answer = state.ids[state.prompt_length :].tolist()
    logprobs = [state.logprobs[p] for p in range(state.prompt_length, state.total)]
    return DSBResult(
        answer, logprobs, trace, time.perf_counter() - started, dict(state.step_logits)
    )


def _check(interrupted: Callable[[], bool], state: _State) -> None:
    if interrupted():
        raise GenerationInterrupted(f"stopped after {state.unmasked} tokens")


def _window(state: _State, settings: DSBSettings, previous_end: int) -> tuple[int, int]:
    return schedule_window(
        settings.schedule,
        state.masked,
        state.prompt_length,
        state.unmasked,
        settings.block_length,
        settings.bound(),
        previous_end,
    )


def _decode_plain(
    model: MaskedLM,
    state: _State,
    settings: DSBSettings,
    trace: DSBTrace,
    interrupted: Callable[[], bool],
    rng: Any,
) -> None:
    """No cache: a full forward every step (LLaDA's `generate` / DSB's `generate_dsb`)."""
    e = state.prompt_length + settings.block_length
    quota = _Quota(settings)
    while not state.done:
        s, e = _window(state, settings, e)
        _check(interrupted, state)
        logits, _ = model.full(state.ids, use_cache=False)
        trace.nfe += 1
        trace.global_forwards += 1
        trace.processed_tokens += state.total
        done = state.apply(logits, 0, s, e, settings, rng, quota.next(state, s, e))
        trace.steps.append(("full", s, e, done))


def _decode_cached(
    model: MaskedLM,
    state: _State,
    settings: DSBSettings,
    trace: DSBTrace,
    interrupted: Callable[[], bool],
    rng: Any,
) -> None:
    """DSB Cache (`generate_dsb_cache`); with the naive schedule, Fast-dLLM's dual cache."""
    refresh = settings.refresh or settings.block_length
    quota = _Quota(settings)
    s, e = state.prompt_length, state.prompt_length + settings.block_length
    if settings.schedule == "naive":
        s, e = _window(state, settings, e)
    while not state.done:
        _check(interrupted, state)
        logits, cache = model.full(state.ids, use_cache=True)
        trace.nfe += 1
        trace.global_forwards += 1
        trace.processed_tokens += state.total
        done = state.apply(logits, 0, s, e, settings, rng, quota.next(state, s, e))
        trace.steps.append(("global", s, e, done))
        block_done = len(done)
        block_start = s
        while True:
            previous_s = s
            s, e = _window(state, settings, e)
            if state.done:
                break
            if block_done >= refresh or (settings.schedule == "naive" and s != block_start):
                break  # periodic refresh; naive: also when the block is complete
            shift = s - previous_s
            prefix = min(max(shift, settings.prefix_window), s)
            suffix = min(state.total - e, settings.suffix_window)
            start, end = s - prefix, e + suffix
            replace = torch.zeros(state.total, dtype=torch.bool, device=state.ids.device)
            replace[start:end] = True
            _check(interrupted, state)
            logits, cache = model.window(state.ids[start:end], replace, cache)
            trace.nfe += 1
            trace.window_forwards += 1
            trace.processed_tokens += end - start
            done = state.apply(logits, start, s, e, settings, rng, quota.next(state, s, e))
            trace.steps.append(("window", s, e, done))
            block_done += len(done)
