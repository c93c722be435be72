"""`bpe_stream_pipeline` (issue 35 item 1, issue 57 item 1): the streamed pipeline
(`Tokenizer.stream()`, GPT-2 split + BPE, fed UTF-8 bytes in 256- and 4096-byte parts, emitting
after each) against `Tokenizer.encode` of the whole text in one call, with the 50k vocabulary of
the `bpe_*` cases, on 1 MB of runs of 'a', of spaces, 'abab...', random letters (each one huge
pre-token piece), standard-library text, and the non-ASCII classes of `corpus.stream_input`
(seed `SEED`): CJK, emoji and ZWJ sequences, digit runs, random digits, random valid UTF-8 and
random code points, whose parts cut multi-byte characters.

The ratio is the worst (input, part size)'s streamed time over its encode time (target <= 1.5);
the note gives every input's ratio at both part sizes, the tokens out before `flush` (256-byte
parts), and the streamed time's exponent fitted from 1 KB to 1 MB in 256-byte parts (target <=
1.1: linear, where re-encoding the open piece on every part was quadratic). Identical ids are
checked on every input, size and part size before anything is timed; times are the thread's CPU
time (a shared machine pre-empts long calls more), medians of paired runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from docket.benchmarks.perf.bpe import MB, _prerequisites, _setup
from docket.benchmarks.perf.harness import Measurement, check

PARTS = (256, 4096)
PATHOLOGICAL = ("a", "space", "ab", "letters")
#: `corpus.stream_input` classes (its letters and spaces are the pathological ones here).
CLASSES = ("cjk", "emoji", "digit_runs", "digits", "utf8", "codepoints")
INPUTS = (*PATHOLOGICAL, "text", *CLASSES)
SEED = 57
EXPONENT_TARGET = 1.1


def _data(kind: str, size: int, setup: Any) -> bytes:
    from docket.methods.tokenization.corpus import pathological, stream_input

    if kind == "text":
        return setup.text[:size].encode("utf-8")
    if kind in PATHOLOGICAL:
        return pathological(kind, size).encode("utf-8")
    return stream_input(kind, size, SEED)


def _streamed(tok: Any, data: bytes, part: int) -> tuple[list[int], int]:
    """(ids, how many were out before flush) of `data` fed in `part`-byte parts."""
    stream = tok.stream()
    out: list[int] = []
    for i in range(0, len(data), part):
        stream.feed(data[i : i + part])
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
    rows: dict[str, dict[Any, Any]] = {}
    for kind in INPUTS:
        curve = []
        row: dict[Any, Any] = {}
        for size in sizes:
            data = _data(kind, size, setup)
            text = data.decode("utf-8")
            expected = tok.encode(text)
            for part in PARTS if size == top else PARTS[:1]:
                ids, before = _streamed(tok, data, part)
                check(
                    ids == expected,
                    f"{kind} at {size} bytes in {part}-byte parts: streamed ids differ",
                )
                reps = repeats if size == top else max(repeats, 9)
                stream_s, encode_s = _paired_cpu(
                    lambda data=data, part=part: _streamed(tok, data, part),  # type: ignore[misc]
                    lambda text=text: tok.encode(text),  # type: ignore[misc]
                    reps,
                )
                if part == PARTS[0]:
                    curve.append(stream_s)
                if size == top:
                    row[part] = (stream_s, encode_s)
                    if part == PARTS[0]:
                        row.update(before=before, tokens=len(ids))
        row["exponent"] = fitted_exponent(sizes, curve)
        rows[kind] = row
    ratios = {
        (kind, part): rows[kind][part][0] / rows[kind][part][1] for kind in INPUTS for part in PARTS
    }
    worst_kind, worst_part = max(ratios, key=lambda key: ratios[key])
    exponent = max(row["exponent"] for row in rows.values())
    per_input = "; ".join(
        f"{kind} "
        + " / ".join(
            f"{ratios[kind, part]:.2f} ({r[part][0] * 1e3:.1f} vs {r[part][1] * 1e3:.1f} ms)"
            for part in PARTS
        )
        + f", {r['before']}/{r['tokens']} tokens before flush, exponent {r['exponent']:.2f}"
        for kind, r in rows.items()
    )
    verdict = "met" if exponent <= EXPONENT_TARGET else "MISSED"
    parts = " and ".join(str(part) for part in PARTS)
    return Measurement(
        "bpe_stream_pipeline",
        f"stream {top // 1000} KB in {parts}-byte parts, GPT-2 split + BPE "
        f"(worst: {worst_kind} in {worst_part}-byte parts)",
        "docket encode of the whole text",
        rows[worst_kind][worst_part][0],
        rows[worst_kind][worst_part][1],
        target=1.5,
        repeats=repeats,
        note=(
            f"fitted exponent {sizes[0] // 1000} KB -> {top // 1000} KB ({PARTS[0]}-byte parts), "
            f"worst input: {exponent:.2f} (target <= {EXPONENT_TARGET}: {verdict}); per input, "
            f"streamed / encode in {parts}-byte parts: {per_input}"
        ),
    )


STREAM_CASES = {"bpe_stream_pipeline": bpe_stream_pipeline}
