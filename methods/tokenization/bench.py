"""Timings behind the `bpe_*` cases of `make bench` (benchmarks/perf/cases.py): the same
inputs and the same vocabulary for the incremental core, HF tokenizers and tiktoken, in one
process, with identical ids checked before anything is timed.

The vocabulary is a 50,000-token byte-level BPE trained here with HF's BpeTrainer on 24 MB of the
installed packages' Python sources plus runs of repeated characters (the setup of an earlier
measurement of HF tokenizers, tiktoken and mtc-inc-bpe); it is cached under
`build/bench/incbpe-vocab`. The text timed is the standard library's sources, which training did not
see. tiktoken gets the same vocabulary as mergeable ranks (HF id = rank) and the GPT-2 split
pattern.
"""

from __future__ import annotations

import math
import statistics
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ._native import native
from .corpus import PATHOLOGICAL, pathological, stdlib_text, stream_input, train_byte_level_bpe
from .sources import GPT2_PATTERN, WHOLE_PATTERN, unicode_to_byte
from .tokenizer import Tokenizer

VOCAB_DIR = Path("build/bench/incbpe-vocab")
VOCAB_SIZE = 50_000
TRAIN_CHARS = 24_000_000  # of site-packages sources; evaluation text is the standard library
EVAL_SKIP_FILES = 600
SIZES = (1_000, 10_000, 100_000, 1_000_000)
BYTE_LEVEL_ONLY = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": True,
    "use_regex": False,
}


@dataclass
class Setup:
    """The three tokenizers on one vocabulary (pipeline and BPE-only variants)."""

    ours: Tokenizer  # GPT-2 split, from tokenizer.json
    ours_whole: Tokenizer  # no split: the whole input is one piece
    hf: Any
    hf_whole: Any  # ByteLevel(use_regex=False)
    tiktoken: Any
    tiktoken_whole: Any  # pat_str (?s:.+)
    text: str = field(repr=False)


def median_seconds(run: Callable[[], object], repeats: int, cpu: bool = False) -> float:
    """Median wall-clock seconds of `run`, or with `cpu` of this thread's CPU time: on a
    shared machine a long call is pre-empted more often than a short one, which would bend
    a scaling curve that has nothing to do with the algorithm."""
    clock = time.thread_time if cpu else time.perf_counter
    times = []
    for _ in range(repeats):
        started = clock()
        run()
        times.append(clock() - started)
    return statistics.median(times)


def setup(text_chars: int = 1_000_000) -> Setup:
    import json

    import tiktoken
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import pre_tokenizers

    path = VOCAB_DIR / f"bpe{VOCAB_SIZE}" / "tokenizer.json"
    if not path.is_file():
        train_byte_level_bpe(path.parent, VOCAB_SIZE, TRAIN_CHARS, installed=True)
    config = json.loads(path.read_text())
    hf = HFTokenizer.from_file(str(path))
    hf_whole = HFTokenizer.from_file(str(path))
    hf_whole.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    table = unicode_to_byte()
    ranks = {
        bytes(table[ch] for ch in token): token_id
        for token, token_id in config["model"]["vocab"].items()
        if all(ch in table for ch in token)
    }
    enc = tiktoken.Encoding("bench", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    enc_whole = tiktoken.Encoding(
        "bench-whole", pat_str=WHOLE_PATTERN, mergeable_ranks=ranks, special_tokens={}
    )
    whole_config = {**config, "pre_tokenizer": BYTE_LEVEL_ONLY}
    return Setup(
        ours=Tokenizer.from_tokenizer_json(config),
        ours_whole=Tokenizer.from_tokenizer_json(whole_config),
        hf=hf,
        hf_whole=hf_whole,
        tiktoken=enc,
        tiktoken_whole=enc_whole,
        text=stdlib_text(text_chars, skip=EVAL_SKIP_FILES),
    )


def _same(label: str, *results: list[int]) -> None:
    first = results[0]
    for other in results[1:]:
        if list(other) != list(first):
            raise RuntimeError(f"{label}: the tokenizers disagree; nothing timed")


Pair = tuple[Callable[[], object], Callable[[], object], dict[str, Any]]


def bpe_step(s: Setup) -> Pair:
    """BPE per pre-split piece: ours (one native call over all pieces) vs HF (`encode` of the
    pre-tokenized words with a byte-level-only pre-tokenizer, its word cache included).
    Returns (ours, HF, facts) after checking both give HF's full-pipeline ids."""
    data = s.text.encode("utf-8")
    ends = list(native().split(1, data))  # the GPT-2 split, identical to HF's
    starts = [0, *ends][:-1]
    words = [data[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)]
    packed = struct.pack(f"<{len(ends)}Q", *ends)

    def ours() -> list[int]:
        return list(s.ours.pipeline.encode_pieces(data, packed))

    def theirs() -> list[int]:
        return list(s.hf_whole.encode(words, is_pretokenized=True, add_special_tokens=False).ids)

    _same("bpe_step", ours(), theirs(), s.hf.encode(s.text, add_special_tokens=False).ids)
    return ours, theirs, {"bytes": len(data), "pieces": len(words)}


def bpe_pipeline(s: Setup) -> Pair:
    """The whole encode (GPT-2 split + BPE) of the text: ours vs tiktoken; HF's full pipeline
    is timed once for the note."""

    def ours() -> list[int]:
        return s.ours.encode(s.text)

    def theirs() -> list[int]:
        return list(s.tiktoken.encode_ordinary(s.text))

    expected = s.hf.encode(s.text, add_special_tokens=False).ids
    _same("bpe_pipeline", ours(), theirs(), expected)
    hf = median_seconds(lambda: s.hf.encode(s.text, add_special_tokens=False), 1)
    return ours, theirs, {"bytes": len(s.text.encode("utf-8")), "hf_s": hf}


def bpe_cjk(s: Setup) -> Pair:
    """The whole encode of CJK text (`stream_input("cjk")`, as many bytes as the bench text):
    ours vs tiktoken; HF's full pipeline is timed once for the note."""
    text = stream_input("cjk", len(s.text.encode("utf-8"))).decode("utf-8")

    def ours() -> list[int]:
        return s.ours.encode(text)

    def theirs() -> list[int]:
        return list(s.tiktoken.encode_ordinary(text))

    _same("bpe_cjk", ours(), theirs(), s.hf.encode(text, add_special_tokens=False).ids)
    hf = median_seconds(lambda: s.hf.encode(text, add_special_tokens=False), 1)
    return ours, theirs, {"bytes": len(text.encode("utf-8")), "hf_s": hf}


def fitted_exponent(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(time) over log(size): 1.0 is linear, 2.0 quadratic."""
    xs = [math.log(n) for n in sizes]
    ys = [math.log(max(t, 1e-9)) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def bpe_pathological(s: Setup, sizes: tuple[int, ...], peer_limit: int) -> dict[str, Any]:
    """BPE-only (one piece) on runs of 'a', of spaces, 'abab...' and random letters from 1 KB
    to 1 MB: per-input CPU times and fitted exponents for ours, HF and tiktoken (the peers up
    to `peer_limit` bytes: they take about a second per MB)."""
    rows: dict[str, Any] = {}
    for kind in PATHOLOGICAL:
        row: dict[str, Any] = {"ours": [], "hf": [], "tiktoken": [], "sizes": list(sizes)}
        for size in sizes:
            text = pathological(kind, size)
            data = text.encode()
            reps = 9 if size <= 100_000 else 5
            expected = s.ours_whole.encode_bytes(data)
            # the algorithm's time: counting runs the whole encode but builds no Python list
            # (HF's encode returns its ids inside an Encoding, not as a list, either)
            count = partial(s.ours_whole.vocab.count, data)
            if count() != len(expected):
                raise RuntimeError(f"{kind}: count and encode disagree")
            row["ours"].append(median_seconds(count, reps, True))
            if size <= peer_limit:
                _same(kind, expected, s.hf_whole.encode(text).ids)
                _same(kind, expected, s.tiktoken_whole.encode_ordinary(text))
                peer_reps = 3 if size >= 100_000 else reps
                hf = partial(s.hf_whole.encode, text)
                row["hf"].append(median_seconds(hf, peer_reps, True))
                peer = partial(s.tiktoken_whole.encode_ordinary, text)
                row["tiktoken"].append(median_seconds(peer, peer_reps, True))
        for impl in ("ours", "hf", "tiktoken"):
            times = row[impl]
            row[f"{impl}_exponent"] = fitted_exponent(list(sizes[: len(times)]), times)
        rows[kind] = row
    return rows


def bpe_stream_latency(s: Setup, size: int) -> dict[str, Any]:
    """Per-byte latency of the eager incremental encoder fed one byte at a time (timed in
    native code, timer overhead of ~20-50 ns included) on text and on pathological input."""
    out: dict[str, Any] = {}
    inputs = {"text": s.text[:size], **{k: pathological(k, size) for k in PATHOLOGICAL}}
    for name, text in inputs.items():
        data = text.encode()
        stream = native().Stream(s.ours_whole.vocab)
        ns = struct.unpack(f"<{len(data)}I", stream.feed_timed(data))
        ids = stream.emit() + stream.flush()
        _same(f"stream {name}", ids, s.ours_whole.encode_bytes(data))
        ordered = sorted(ns)

        def quantile(q: float, ordered: list[int] = ordered) -> float:
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e9

        out[name] = {
            "p50": quantile(0.5),
            "p99": quantile(0.99),
            "p99.99": quantile(0.9999),
            "max": ordered[-1] / 1e9,
            "mean": sum(ns) / len(ns) / 1e9,
            "max_pending_bytes": stream.max_pending_bytes,
        }
    return out


def bpe_append(s: Setup, prefix_chars: int, chunk: int, appends: int) -> dict[str, Any]:
    """Appending `chunk` characters to a `prefix_chars` prefix: our streamed pipeline (feed +
    emit, the pending text only) vs tiktoken re-encoding the whole prefix; the BPE-only
    incremental encoder and HF's re-encode are noted."""
    text = stdlib_text(prefix_chars + chunk * appends, skip=EVAL_SKIP_FILES - 300)
    prefix, tail = text[:prefix_chars], text[prefix_chars:]
    stream = s.ours.stream()
    stream.feed(prefix)
    got = stream.emit()
    incremental = s.ours_whole.incremental()
    incremental.feed(prefix.encode())
    ours, bpe_only, peer = [], [], []
    for k in range(appends):
        part = tail[k * chunk : (k + 1) * chunk]
        started = time.perf_counter()
        stream.feed(part)
        got += stream.emit()
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        incremental.feed(part.encode())
        incremental.emit()
        bpe_only.append(time.perf_counter() - started)
        current = prefix + tail[: (k + 1) * chunk]
        started = time.perf_counter()
        expected = s.tiktoken.encode_ordinary(current)
        peer.append(time.perf_counter() - started)
    _same("bpe_append", got + stream.flush(), expected)
    started = time.perf_counter()
    s.hf.encode(text, add_special_tokens=False)
    return {
        "ours": statistics.median(ours),
        "bpe_only": statistics.median(bpe_only),
        "tiktoken": statistics.median(peer),
        "hf": time.perf_counter() - started,
        "prefix_bytes": len(prefix.encode()),
    }
