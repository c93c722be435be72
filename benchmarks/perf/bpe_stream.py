"""`bpe_stream_pipeline` (issue 35 item 1): the streamed pipeline (`Tokenizer.stream()`, GPT-2
split + BPE, fed 256-byte parts and emitting after each) against `Tokenizer.encode` of the whole
text in one call, on 1 MB of runs of 'a', of spaces, 'abab...', random letters (each one huge
pre-token piece) and standard-library text, with the 50k vocabulary of the `bpe_*` cases.

The ratio is the worst input's streamed time over its encode time (target <= 1.5); the note
gives every input's ratio, the tokens out before `flush`, and the streamed time's exponent fitted
from 1 KB to 1 MB (target <= 1.1: linear, where re-encoding the open piece on every part was
quadratic). Identical ids are checked on every input and size before anything is timed; times
are the thread's CPU time (a shared machine pre-empts long calls more), medians of paired runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from docket.benchmarks.perf.bpe import MB, _prerequisites, _setup
from docket.benchmarks.perf.harness import Measurement, check

PART = 256
INPUTS = ("a", "space", "ab", "letters", "text")
EXPONENT_TARGET = 1.1


def _text(kind: str, size: int, setup: Any) -> str:
    from docket.methods.tokenization.corpus import pathological

    return setup.text[:size] if kind == "text" else pathological(kind, size)


def _streamed(tok: Any, data: bytes) -> tuple[list[int], int]:
    """(ids, how many were out before flush) of `data` fed in PART-byte parts."""
    stream = tok.stream()
    out: list[int] = []
    for i in range(0, len(data), PART):
        stream.feed(data[i : i + PART])
        out += stream.emit()
    before = len(out)
    return out + stream.flush(), before


def _paired_cpu(
    first: Callable[[], object], second: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """Median CPU seconds of each over `repeats` alternating runs."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for run, sink in ((first, times[0]), (second, times[1])):
            started = time.thread_time()
            run()
            sink.append(time.thread_time() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def bpe_stream_pipeline(quick: bool) -> Measurement:
    """The case: see the module docstring."""
    _prerequisites()
    from docket.methods.tokenization.bench import fitted_exponent

    setup = _setup(quick)
    tok = setup.ours
    top = 100_000 if quick else MB
    sizes = [1_000, 10_000, 100_000] + ([] if quick else [MB])
    repeats = 3 if quick else 7
    rows: dict[str, dict[str, Any]] = {}
    for kind in INPUTS:
        curve = []
        for size in sizes:
            text = _text(kind, size, setup)
            data = text.encode("utf-8")
            expected = tok.encode(text)
            ids, before = _streamed(tok, data)
            check(ids == expected, f"{kind} at {size} bytes: streamed ids differ from encode")
            reps = repeats if size == top else max(repeats, 9)
            stream_s, encode_s = _paired_cpu(
                lambda data=data: _streamed(tok, data),  # type: ignore[misc]
                lambda text=text: tok.encode(text),  # type: ignore[misc]
                reps,
            )
            curve.append(stream_s)
            if size == top:
                rows[kind] = {
                    "stream": stream_s,
                    "encode": encode_s,
                    "before": before,
                    "tokens": len(ids),
                }
        rows[kind]["exponent"] = fitted_exponent(sizes, curve)
    worst = max(rows, key=lambda kind: rows[kind]["stream"] / rows[kind]["encode"])
    exponent = max(row["exponent"] for row in rows.values())
    per_input = "; ".join(
        f"{kind} {r['stream'] / r['encode']:.2f} ({r['stream'] * 1e3:.1f} vs "
        f"{r['encode'] * 1e3:.1f} ms, {r['before']}/{r['tokens']} tokens before flush, "
        f"exponent {r['exponent']:.2f})"
        for kind, r in rows.items()
    )
    verdict = "met" if exponent <= EXPONENT_TARGET else "MISSED"
    return Measurement(
        "bpe_stream_pipeline",
        f"stream {top // 1000} KB in {PART}-byte parts, GPT-2 split + BPE (worst input: {worst})",
        "docket encode of the whole text",
        rows[worst]["stream"],
        rows[worst]["encode"],
        target=1.5,
        repeats=repeats,
        note=(
            f"fitted exponent {sizes[0] // 1000} KB -> {top // 1000} KB, worst input: "
            f"{exponent:.2f} (target <= {EXPONENT_TARGET}: {verdict}); per input: {per_input}"
        ),
    )


STREAM_CASES = {"bpe_stream_pipeline": bpe_stream_pipeline}
