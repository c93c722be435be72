"""One decoding thread per local model that steps concurrent calls together.

Inspect runs a task's samples concurrently; each sample's `generate` becomes a `Request` on
the model's `DecodeEngine`. The engine's thread prefills each new request alone (from the
kept KV cache that shares the longest prefix with its prompt: the sample's own last call, or
another sample's prompt snapshot with the same system prompt and tools, so only the new suffix
is computed), then
merges it into the running batch: caches are left-padded to one length, an attention mask
hides the padding, and each row keeps its own positions. Every decoding step is then one
forward pass for the whole batch; a finished row leaves the batch and its cache goes back to
the store for the sample's next call. Tokens are chosen and completions ended per row by the
same `TokenTracker` the single-sequence loop uses.

On a CPU, the forward passes run the model's float32 linear layers on oneDNN-prepacked copies
of their weights (`packing.py`, `DOCKET_LOCAL_PACK`): the same products, 2-3x faster at the
few rows a step feeds.

Models whose cache is not plain (`kv_reuse.plain_cache`) are decoded one request at a time
from an empty cache, as `sampling.decode_loop` does.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from docket.core.inspect_private import active_samples, sample_active

from .kv_reuse import (
    DEFAULT_MAX_TOKENS,
    PrefixStore,
    cache_length,
    compact,
    plain_cache,
    select,
    stack,
    valid_row,
)
from .lookup import MAX_NGRAM, ReplyIndex, propose
from .packing import LinearPacker, packer_for
from .sampling import (
    Chooser,
    DecodeFn,
    DecodeParams,
    Generation,
    GenerationInterrupted,
    TokenTracker,
    eos_token_ids,
    forward_style,
    greedy,
    greedy_choice,
    sample,
    sampling_choice,
)

#: Default number of sequences decoded together.
DEFAULT_MAX_BATCH = 8
#: Default bound on the prompt-lookup draft tokens a greedy row checks per step.
DEFAULT_MAX_DRAFT = 8
BATCH_ENV = "DOCKET_LOCAL_BATCH"
PREFIX_ENV = "DOCKET_LOCAL_PREFIX_TOKENS"
DRAFT_ENV = "DOCKET_LOCAL_DRAFT"
#: Weight of a row's earlier drafts against its latest in its acceptance estimate.
DRAFT_MEMORY = 0.5
#: Empty cache columns (rejected drafts every row shares) tolerated before compacting.
HOLE_SLACK = 16


def env_int(name: str, default: int) -> int:
    """A non-negative integer from the environment.

    Args:
        name: The variable.
        default: Its value when unset.

    Returns:
        The value.

    Raises:
        ValueError: It is set to anything but a non-negative integer (one line).
    """
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit():
        raise ValueError(f"{name}={raw!r}: expected a non-negative integer")
    return int(raw)


def batch_size() -> int:
    """Sequences an engine steps together (`DOCKET_LOCAL_BATCH`, default 8, at least 1).

    Returns:
        The batch size.
    """
    return max(1, env_int(BATCH_ENV, DEFAULT_MAX_BATCH))


def running_samples() -> set[Hashable] | None:
    """Ids of the Inspect samples running in this process (None outside an eval).

    Returns:
        The ids, or None when no sample is running.
    """
    samples = active_samples()
    return {s.id for s in samples} if samples else None


def sample_key() -> Hashable | None:
    """The running Inspect sample's id (this attempt's), or None outside a sample.

    Returns:
        The key under which the sample's KV cache is kept.
    """
    active = sample_active()
    return active.id if active is not None else None


def engine_request(
    decode: DecodeFn, prompt_ids: list[int], params: DecodeParams, n: int, model: Any
) -> Request | None:
    """The engine request for a built-in decoding call, or None when the call stays direct.

    Greedy decoding (any `n`: the choices are one completion) and sampling of one choice go
    through the engine; a plugin method, sampling of several choices (one seeded stream over
    all of them) and first-step inputs (a VLM's pixels) decode directly.

    Args:
        decode: The chosen decoding method.
        prompt_ids: The prompt.
        params: What to generate.
        n: The number of choices.
        model: The model (its device holds a sampler's random generator).

    Returns:
        The request, keyed by the running sample, or None.
    """
    if params.prompt_inputs:
        return None
    hot = params.temperature is not None and params.temperature > 0
    if decode is greedy or (decode is sample and not hot):
        choose: Chooser = greedy_choice
    elif decode is sample and n == 1:
        choose = sampling_choice(params, getattr(model, "device", "cpu"))
    else:
        return None
    return Request(list(prompt_ids), params, choose, key=sample_key())


@dataclass
class Request:
    """One completion to decode.

    Attributes:
        prompt_ids: The prompt's token ids.
        params: What to generate.
        choose: Picks each token from the step's logits.
        key: The sample it belongs to (its kept cache), or None.
        future: Receives the `Generation` (or the exception).
    """

    prompt_ids: list[int]
    params: DecodeParams
    choose: Chooser
    key: Hashable | None = None
    future: Future[Generation] = field(default_factory=Future)


@dataclass
class _Row:
    request: Request
    tracker: TokenTracker
    last: int  # the token chosen last, fed at the next step
    length: int  # tokens in this row's cache (without padding or rejected drafts)
    hits: float = 0.0  # draft tokens accepted (recent drafts weigh more: `DRAFT_MEMORY`)
    misses: float = 0.0  # drafts cut short by a rejected token (likewise)


class DecodeEngine:
    """The decoding thread of one loaded model, with its prefix store.

    Args:
        model: The causal LM.
        tokenizer: Its tokenizer.
        lock: Held around every forward pass (other users of the model take it too).
        store: Kept caches between calls (None: a store bounded by `DOCKET_LOCAL_PREFIX_TOKENS`,
            default `kv_reuse.DEFAULT_MAX_TOKENS`; 0 disables reuse).
        max_batch: Sequences stepped together (None: `DOCKET_LOCAL_BATCH`, default 8; 1
            decodes one request at a time).
        max_draft: Prompt-lookup draft tokens a greedy row checks per step (None:
            `DOCKET_LOCAL_DRAFT`, default 8; 0 turns drafting off).
        proposer: `(context, limit) -> draft tokens` (None: `lookup.propose`).
        replies: Where a row with no draft of its own looks for one in the other samples'
            replies (None: a `lookup.ReplyIndex` of the last 32 replies).
        packer: Runs the forward passes' linear layers on prepacked oneDNN weights (None:
            `packing.packer_for(model)`, as `DOCKET_LOCAL_PACK` says; `False`: dense layers).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        lock: threading.Lock,
        store: PrefixStore | None = None,
        max_batch: int | None = None,
        max_draft: int | None = None,
        proposer: Callable[[list[int], int], list[int]] | None = None,
        replies: ReplyIndex | None = None,
        packer: LinearPacker | None | bool = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.lock = lock
        if store is None:
            tokens = env_int(PREFIX_ENV, DEFAULT_MAX_TOKENS)
            store = PrefixStore(max_tokens=tokens, alive=running_samples)
        self.store = store
        self.max_batch = batch_size() if max_batch is None else max(1, max_batch)
        self.max_draft = env_int(DRAFT_ENV, DEFAULT_MAX_DRAFT) if max_draft is None else max_draft
        self.proposer = proposer or propose
        self.replies = ReplyIndex() if replies is None else replies
        self.packer: LinearPacker | None
        if packer is None or packer is True:
            self.packer = packer_for(model, "1" if packer is True else None)
        else:
            self.packer = packer or None
        self.eos = eos_token_ids(model, tokenizer)
        self.cache_name, self.extra = forward_style(model)
        self.device = getattr(model, "device", "cpu")
        self._queue: queue.Queue[Request] = queue.Queue()
        self._waiting: list[Request] = []
        self._rows: list[_Row] = []
        self._cache: Any = None
        self._mask: Any = None  # [rows, cache length] 0/1: the positions each row attends to
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        #: The largest batch stepped so far, and the number of batched forward passes.
        self.widest = 0
        self.steps = 0
        #: Draft tokens proposed and accepted (prompt lookup), since creation.
        self.drafted = 0
        self.accepted = 0
        self.rejections = 0
        self.cost = StepCost()

    def submit(self, request: Request) -> Future[Generation]:
        """Queue a request; its future completes when the thread has decoded it.

        Args:
            request: The completion to decode.

        Returns:
            The request's future.
        """
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True, name="docket-decode")
                self._thread.start()
        self._queue.put(request)
        return request.future

    def decode(self, request: Request) -> Generation:
        """Submit a request and wait for it (from a worker thread, never the event loop).

        Args:
            request: The completion to decode.

        Returns:
            The completion.
        """
        return self.submit(request).result()

    # --- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            if not self._rows and not self._waiting:
                self._waiting.append(self._queue.get())
            while True:
                try:
                    self._waiting.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                with self.lock:
                    while self._waiting and len(self._rows) < self.max_batch:
                        self._start(self._waiting.pop(0))
                    if self._rows:
                        self._step()
            except BaseException as error:  # never leave a caller waiting on a dead thread
                self._fail_all(error)

    def _fail_all(self, error: BaseException) -> None:
        for current in self._rows:
            if not current.request.future.done():
                current.request.future.set_exception(error)
        self._rows, self._cache, self._mask = [], None, None

    def _forward(self, **inputs: Any) -> Any:
        import torch

        started = time.perf_counter()
        with torch.inference_mode(), self._linears():
            result = self.model(use_cache=True, **self.extra, **inputs)
        self.cost.add(int(inputs["input_ids"].numel()), time.perf_counter() - started)
        return result

    def _linears(self) -> contextlib.AbstractContextManager[None]:
        """The context of a forward pass: packed linear layers, or nothing."""
        return self.packer.active() if self.packer is not None else contextlib.nullcontext()

    def _start(self, request: Request) -> None:
        """Prefill a request alone, then finish it or add it to the batch."""
        import torch

        if request.future.set_running_or_notify_cancel() is False:
            return
        try:
            params = request.params
            if params.max_new_tokens <= 0:
                request.future.set_result(Generation([], "", "max_tokens"))
                return
            if params.interrupted():
                raise GenerationInterrupted("stopped before the first token")
            ids = request.prompt_ids
            past, cached = self.store.take(request.key, ids) if self.store.enabled else (None, 0)
            result = self._forward(
                input_ids=torch.tensor([ids[cached:]], device=self.device),
                **{self.cache_name: past},
            )
            past = getattr(result, self.cache_name)
            if self.store.enabled:  # the prompt's KV, for later prompts with the same head
                self.store.share(ids, past)
            logits = result.logits[0, -1].float()
            tracker = TokenTracker(self.tokenizer, params, self.eos)
            token = request.choose(logits)
            done = tracker.add(logits, token)
        except BaseException as error:  # the request fails alone; the batch goes on
            request.future.set_exception(error)
            return
        new = _Row(request, tracker, token, len(ids))
        if done is not None:
            self._finish(new, past, done)
            return
        if not plain_cache(past):
            self._solo(new, past)
            return
        self._join(new, past)

    def _solo(self, current: _Row, past: Any) -> None:
        """Decode one row to its end without batching (a cache this module cannot merge)."""
        import torch

        request = current.request
        try:
            while True:
                if request.params.interrupted():
                    raise GenerationInterrupted(f"stopped after {len(current.tracker.out)} tokens")
                result = self._forward(
                    input_ids=torch.tensor([[current.last]], device=self.device),
                    **{self.cache_name: past},
                )
                past = getattr(result, self.cache_name)
                logits = result.logits[0, -1].float()
                current.length += 1
                current.last = request.choose(logits)
                done = current.tracker.add(logits, current.last)
                if done is not None:
                    self._finish(current, past, done)
                    return
        except BaseException as error:
            request.future.set_exception(error)

    def _join(self, new: _Row, past: Any) -> None:
        """Merge a prefilled row's cache into the batch (left padding to a common length)."""
        import torch

        if not self._rows:
            self._rows, self._cache = [new], past
            self._mask = torch.ones(1, new.length, dtype=torch.long, device=self.device)
            return
        width = cache_length(self._cache)
        target = max(width, new.length)
        self._cache = stack([self._cache, past], [target - width, target - new.length])
        rows = len(self._rows)
        mask = torch.zeros(rows + 1, target, dtype=torch.long, device=self.device)
        mask[:rows, target - width :] = self._mask
        mask[rows, target - new.length :] = 1
        self._mask = mask
        self._rows.append(new)

    def _draft(self, current: _Row) -> list[int]:
        """Prompt-lookup draft tokens for a greedy row (none for sampled rows)."""
        if current.request.choose is not greedy_choice or self.max_draft <= 0:
            return []
        left = current.request.params.max_new_tokens - len(current.tracker.out) - 1
        limit = min(self.max_draft, left)
        if limit <= 0:
            return []
        context = [*current.request.prompt_ids, *current.tracker.out]
        own = self.proposer(context, limit)[:limit]
        if own:
            return own
        others = [_reply(row) for row in self._rows if row is not current]
        return self.replies.propose(context, limit, others)[:limit]

    def _acceptance(self, current: _Row) -> float:
        """A row's estimated chance that a draft token is accepted (its own record, with the
        engine's as a prior worth two tokens)."""
        prior = (self.accepted + 1) / (self.accepted + self.rejections + 2)
        return (current.hits + 2 * prior) / (current.hits + current.misses + 2)

    def _plan(self, drafts: list[list[int]]) -> int:
        """How many draft tokens every row feeds this step (`best_draft_length`)."""
        if not any(drafts):
            return 0
        chances = [self._acceptance(current) for current in self._rows]
        return best_draft_length(chances, [len(d) for d in drafts], self.cost.ratio())

    def _step(self) -> None:
        """One forward pass for every row of the batch (each row's last token and its draft);
        finished rows leave it."""
        import torch

        going = []
        for index, current in enumerate(self._rows):
            if current.request.params.interrupted():
                current.request.future.set_exception(
                    GenerationInterrupted(f"stopped after {len(current.tracker.out)} tokens")
                )
            else:
                going.append(index)
        self._keep(going)
        if not self._rows:
            return
        count = len(self._rows)
        drafts = [self._draft(current) for current in self._rows]
        extra = self._plan(drafts)
        drafts = [d[:extra] for d in drafts]
        fed = [
            [current.last, *d, *[current.last] * (extra - len(d))]
            for current, d in zip(self._rows, drafts, strict=True)
        ]
        inputs: dict[str, Any] = {
            "input_ids": torch.tensor(fed, device=self.device),
            self.cache_name: self._cache,
        }
        step_mask = torch.ones(count, extra + 1, dtype=torch.long, device=self.device)
        for index, d in enumerate(drafts):
            step_mask[index, len(d) + 1 :] = 0  # filler after a shorter draft
        mask = torch.cat([self._mask, step_mask], dim=1)
        if count > 1 or not bool(self._mask.all()):
            inputs["attention_mask"] = mask
            inputs["position_ids"] = torch.tensor(
                [[r.length + j for j in range(extra + 1)] for r in self._rows], device=self.device
            )
        keep = dict(self.extra)
        if "logits_to_keep" in keep:
            keep["logits_to_keep"] = extra + 1
        try:
            started = time.perf_counter()
            with torch.inference_mode(), self._linears():
                result = self.model(use_cache=True, **keep, **inputs)
            self.cost.add(count * (extra + 1), time.perf_counter() - started)
        except BaseException as error:  # a broken forward fails every row in it
            for current in self._rows:
                current.request.future.set_exception(error)
            self._rows, self._cache, self._mask = [], None, None
            return
        self.steps += 1
        self.widest = max(self.widest, count)
        self._cache = getattr(result, self.cache_name)
        logits = result.logits[:, -(extra + 1) :].float()
        going = []
        finished: list[tuple[_Row, int, Generation]] = []
        for index, current in enumerate(self._rows):
            try:
                done, used = self._verify(current, drafts[index], logits[index])
            except BaseException as error:
                current.request.future.set_exception(error)
                mask[index] = 0
                continue
            mask[index, mask.shape[1] - (extra + 1) + used :] = 0  # rejected drafts, filler
            if done is None:
                going.append(index)
            else:
                finished.append((current, index, done))
        self._mask = mask
        for current, index, done in finished:
            own = valid_row(self._cache, index, mask) if self.store.enabled else None
            self._finish(current, own, done)
        self._keep(going)

    def _verify(
        self, current: _Row, draft: list[int], logits: Any
    ) -> tuple[Generation | None, int]:
        """Choose a row's tokens from its step's logits, accepting the draft while it agrees.

        Position `j` of the step fed the row's last token (`j` = 0) or draft token `j - 1`; its
        logits choose the next token exactly as a one-token step would. A draft token is kept
        only if it is the token chosen before it, so the row's tokens equal greedy decoding's.

        Returns:
            The finished completion (or None) and how many fed positions now hold real tokens.
        """
        self.drafted += len(draft)
        used = 0
        done = None
        for j in range(len(draft) + 1):
            token = current.request.choose(logits[j])
            used = j + 1
            current.length += 1
            current.last = token
            done = current.tracker.add(logits[j], token)
            if done is not None or j == len(draft) or token != draft[j]:
                break
        accepted = used - 1
        self.accepted += accepted
        missed = accepted < len(draft) and done is None
        if draft:  # copying comes in runs: the last drafts say most about the next one
            current.hits = DRAFT_MEMORY * current.hits + accepted
            current.misses = DRAFT_MEMORY * current.misses + missed
        if missed:
            self.rejections += 1
        return done, used

    def _keep(self, indices: list[int]) -> None:
        """Shrink the batch to the given rows; compact the cache when columns sit empty.

        After rows leave, or with one row left, any empty column goes (the cache is left-padded
        again); otherwise rejected drafts may leave up to `HOLE_SLACK` empty columns.
        """
        import torch

        if not indices:
            self._rows, self._cache, self._mask = [], None, None
            return
        shrunk = len(indices) < len(self._rows)
        if shrunk:
            self._cache = select(self._cache, indices, 0)
            self._mask = self._mask.index_select(0, torch.tensor(indices, device=self.device))
            self._rows = [self._rows[i] for i in indices]
        holes = cache_length(self._cache) - int(self._mask.sum(dim=1).max())
        slack = 0 if shrunk or len(self._rows) == 1 else HOLE_SLACK
        if holes > slack:
            self._cache, self._mask = compact(self._cache, self._mask)

    def _finish(self, current: _Row, past: Any, done: Generation) -> None:
        """Complete a row's future and keep its cache for the sample's next call."""
        request = current.request
        if past is not None and self.store.enabled:
            held = [*request.prompt_ids, *current.tracker.out[:-1]]
            self.store.put(request.key, held, past)
        self.replies.add(_reply(current))
        request.future.set_result(done)


def _reply(current: _Row) -> list[int]:
    """A row's reply so far, after the prompt's last tokens (the chat template's assistant
    header: so the start of a reply is found from the header that precedes every reply)."""
    return [*current.request.prompt_ids[-MAX_NGRAM:], *current.tracker.out]


def best_draft_length(chances: list[float], lengths: list[int], ratio: float) -> int:
    """The draft length every row of a step feeds (shorter drafts padded) for most tokens per cost.

    A step costs one weight pass plus `ratio` of one per fed token; a row whose draft tokens
    are accepted with chance q, one after another until the first rejection, gains
    q + q^2 + ... + q^e tokens from e of them, besides the one token every step gives it.

    Args:
        chances: Each row's chance that a draft token is accepted.
        lengths: Each row's draft length (0: none).
        ratio: The price of a fed token in weight passes (`StepCost.ratio`).

    Returns:
        The length (0: a plain one-token step).
    """
    rows = len(lengths)
    best, best_rate = 0, rows / (1 + ratio * rows)
    for extra in range(1, max(lengths, default=0) + 1):
        gained = rows + sum(
            _expected_run(q, min(extra, n)) for q, n in zip(chances, lengths, strict=True)
        )
        rate = gained / (1 + ratio * rows * (extra + 1))
        if rate > best_rate:
            best, best_rate = extra, rate
    return best


def _expected_run(chance: float, length: int) -> float:
    """Expected accepted tokens of a `length`-token draft, each accepted with `chance` until
    the first rejection."""
    return sum(chance**j for j in range(1, length + 1))


class StepCost:
    """The cost of a forward pass as a weight pass plus a price per fed token, fitted online.

    `ratio()` is the price of one token in weight passes. The default is from one profile of
    Qwen2.5-Coder-0.5B in float32 on one CPU core: about 20 ms a token beside 0.45 s for the
    weight pass of a one-token step.
    """

    #: Used until enough forward passes of different widths were timed.
    DEFAULT_RATIO = 0.05
    MIN_SAMPLES = 6

    def __init__(self) -> None:
        self.n = 0
        self.sx = 0.0
        self.sy = 0.0
        self.sxx = 0.0
        self.sxy = 0.0

    def add(self, tokens: int, seconds: float) -> None:
        """Record one forward pass.

        Args:
            tokens: Tokens it fed (all rows, padding included).
            seconds: How long it took.
        """
        self.n += 1
        self.sx += tokens
        self.sy += seconds
        self.sxx += tokens * tokens
        self.sxy += tokens * seconds

    def ratio(self) -> float:
        """The fitted price of a token over the cost of a pass with no tokens.

        Returns:
            The ratio, within [0.001, 1] (`DEFAULT_RATIO` until the fit is possible).
        """
        spread = self.n * self.sxx - self.sx * self.sx
        if self.n < self.MIN_SAMPLES or spread <= 0:
            return self.DEFAULT_RATIO
        slope = (self.n * self.sxy - self.sx * self.sy) / spread
        base = (self.sy - slope * self.sx) / self.n
        if base <= 0 or slope <= 0:
            return self.DEFAULT_RATIO
        return min(1.0, max(0.001, slope / base))


_ENGINES: dict[int, DecodeEngine] = {}
_ENGINES_LOCK = threading.Lock()


def engine_for(model: Any, tokenizer: Any, lock: threading.Lock) -> DecodeEngine:
    """The process's engine for a loaded model (created on first use).

    Args:
        model: The causal LM (the engine is keyed by this object).
        tokenizer: Its tokenizer.
        lock: The lock that serialises the model's forward passes.

    Returns:
        The engine.
    """
    with _ENGINES_LOCK:
        engine = _ENGINES.get(id(model))
        if engine is None or engine.model is not model:
            engine = DecodeEngine(model, tokenizer, lock)
            _ENGINES[id(model)] = engine
        return engine
