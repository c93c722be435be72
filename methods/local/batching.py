"""One decoding thread per local model that steps concurrent calls together.

Inspect runs a task's samples concurrently; each sample's `generate` becomes a `Request` on
the model's `DecodeEngine`. The engine's thread prefills each new request alone (from the
sample's kept KV cache when `PrefixStore` has one, so only the new suffix is computed), then
merges it into the running batch: caches are left-padded to one length, an attention mask
hides the padding, and each row keeps its own positions. Every decoding step is then one
forward pass for the whole batch; a finished row leaves the batch and its cache goes back to
the store for the sample's next call. Tokens are chosen and completions ended per row by the
same `TokenTracker` the single-sequence loop uses.

Models whose cache is not plain (`kv_reuse.plain_cache`) are decoded one request at a time
from an empty cache, as `sampling.decode_loop` does.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from docket.core.inspect_private import active_samples, sample_active

from .kv_reuse import DEFAULT_MAX_TOKENS, PrefixStore, cache_length, plain_cache, row, select, stack
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
BATCH_ENV = "DOCKET_LOCAL_BATCH"
PREFIX_ENV = "DOCKET_LOCAL_PREFIX_TOKENS"


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
    length: int  # tokens in this row's cache (without padding)


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
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        lock: threading.Lock,
        store: PrefixStore | None = None,
        max_batch: int | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.lock = lock
        if store is None:
            tokens = env_int(PREFIX_ENV, DEFAULT_MAX_TOKENS)
            store = PrefixStore(max_tokens=tokens, alive=running_samples)
        self.store = store
        self.max_batch = batch_size() if max_batch is None else max(1, max_batch)
        self.eos = eos_token_ids(model, tokenizer)
        self.cache_name, self.extra = forward_style(model)
        self.device = getattr(model, "device", "cpu")
        self._queue: queue.Queue[Request] = queue.Queue()
        self._waiting: list[Request] = []
        self._rows: list[_Row] = []
        self._cache: Any = None
        self._pads: list[int] = []
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        #: The largest batch stepped so far, and the number of batched forward passes.
        self.widest = 0
        self.steps = 0

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
        self._rows, self._cache, self._pads = [], None, []

    def _forward(self, **inputs: Any) -> Any:
        import torch

        with torch.inference_mode():
            return self.model(use_cache=True, **self.extra, **inputs)

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
        if self.max_batch == 1 or not plain_cache(past):
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
        if not self._rows:
            self._rows, self._cache, self._pads = [new], past, [0]
            return
        width = cache_length(self._cache)
        target = max(width, new.length)
        self._cache = stack([self._cache, past], [target - width, target - new.length])
        self._pads = [p + target - width for p in self._pads] + [target - new.length]
        self._rows.append(new)

    def _step(self) -> None:
        """One forward pass for every row of the batch; finished rows leave it."""
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
        width = cache_length(self._cache)
        count = len(self._rows)
        inputs: dict[str, Any] = {
            "input_ids": torch.tensor([[r.last] for r in self._rows], device=self.device),
            self.cache_name: self._cache,
        }
        if count > 1 or self._pads[0] > 0:
            mask = torch.ones(count, width + 1, dtype=torch.long, device=self.device)
            for index, pad in enumerate(self._pads):
                mask[index, :pad] = 0
            inputs["attention_mask"] = mask
            inputs["position_ids"] = torch.tensor(
                [[r.length] for r in self._rows], device=self.device
            )
        try:
            result = self._forward(**inputs)
        except BaseException as error:  # a broken forward fails every row in it
            for current in self._rows:
                current.request.future.set_exception(error)
            self._rows, self._cache, self._pads = [], None, []
            return
        self.steps += 1
        self.widest = max(self.widest, count)
        self._cache = getattr(result, self.cache_name)
        logits = result.logits[:, -1].float()
        going = []
        for index, current in enumerate(self._rows):
            current.length += 1
            try:
                current.last = current.request.choose(logits[index])
                done = current.tracker.add(logits[index], current.last)
            except BaseException as error:
                current.request.future.set_exception(error)
                continue
            if done is None:
                going.append(index)
                continue
            own = row(self._cache, index, self._pads[index]) if self.store.enabled else None
            self._finish(current, own, done)
        self._keep(going)

    def _keep(self, indices: list[int]) -> None:
        """Shrink the batch to the given rows, dropping padding no kept row needs."""
        if len(indices) == len(self._rows):
            return
        if not indices:
            self._rows, self._cache, self._pads = [], None, []
            return
        start = min(self._pads[i] for i in indices)
        self._cache = select(self._cache, indices, start)
        self._rows = [self._rows[i] for i in indices]
        self._pads = [self._pads[i] - start for i in indices]

    def _finish(self, current: _Row, past: Any, done: Generation) -> None:
        """Complete a row's future and keep its cache for the sample's next call."""
        request = current.request
        if past is not None and self.store.enabled:
            held = [*request.prompt_ids, *current.tracker.out[:-1]]
            self.store.put(request.key, held, past)
        request.future.set_result(done)


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
