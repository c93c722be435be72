"""The incremental BPE cases (issue 18; `docket.methods.tokenization`), all on one 50k
byte-level vocabulary trained here, with HF tokenizers and tiktoken on the same inputs:

- bpe_step: BPE per pre-split GPT-2 piece of 1 MB of text vs HF's per-word BPE (target: at
  least 3x faster);
- bpe_pipeline: split + BPE of the same text vs tiktoken's `encode_ordinary` (faster);
- bpe_cjk: the same on as many bytes of CJK text (ideographs in clauses between CJK
  punctuation, `corpus.stream_input("cjk")`), HF tokenizers' time in the note (faster);
- bpe_pathological: BPE-only CPU time (the thread's, so pre-emption on a shared machine does
  not bend the curve) on runs of 'a', of spaces, 'abab...' and random letters from 1 KB to
  1 MB; the ratio is the per-byte time at 1 MB over that at 1 KB on the input that scales
  worst, about 1000^(exponent - 1) (target: fitted exponent <= 1.1, ratio <= 1000^0.1);
- bpe_stream_latency: p99 of the per-byte latency of the eager incremental encoder fed one byte
  at a time, worst over text and the pathological inputs, against the 1 us budget;
- bpe_append: appending a 1 KB chunk to a 1 MB prefix (the streamed pipeline) vs tiktoken
  re-encoding the whole prefix (at least 10x faster).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from docket.benchmarks.perf.harness import (
    Measurement,
    PrerequisiteMissing,
    paired_medians,
    require_modules,
)

MB = 1_000_000


@lru_cache(maxsize=2)
def _setup(quick: bool) -> Any:
    from docket.methods.tokenization import bench

    return bench.setup(100_000 if quick else MB)


def _prerequisites() -> None:
    """`PrerequisiteMissing` without the peers (tiktoken, HF tokenizers) or the native core."""
    require_modules("tiktoken", "tokenizers", install="pip install 'docket[tokenization]'")
    from docket.methods.tokenization._native import NativeCoreMissing, native

    try:
        native()
    except NativeCoreMissing as error:  # built without a C++17 compiler
        raise PrerequisiteMissing("native tokenizer core", str(error).split(";")[0]) from None


def _rate(size: int, seconds: float) -> str:
    return f"{size / seconds / MB:.1f} MB/s"


def _paired(name: str, quick: bool, peer: str, target: float) -> Measurement:
    """A case whose two sides come from `bench.<name>` and alternate under paired_medians."""
    _prerequisites()
    from docket.methods.tokenization import bench

    ours, theirs, facts = getattr(bench, name)(_setup(quick))
    repeats = 3 if quick else 7
    docket_s, peer_s = paired_medians(ours, theirs, repeats)
    size = facts["bytes"]
    if name == "bpe_step":
        operation = f"BPE of {facts['pieces']} GPT-2 pieces ({size / MB:.1f} MB text), 50k vocab"
        extra = ""
    else:
        what = "CJK text" if name == "bpe_cjk" else "text"
        operation = f"encode {size / MB:.1f} MB {what} (GPT-2 split + BPE), 50k vocab"
        extra = f"; HF tokenizers {_rate(size, facts['hf_s'])}"
    return Measurement(
        name,
        operation,
        peer,
        docket_s,
        peer_s,
        target=target,
        repeats=repeats,
        note=f"{_rate(size, docket_s)} vs {_rate(size, peer_s)}{extra}; identical ids checked",
    )


def bpe_step(quick: bool) -> Measurement:
    return _paired("bpe_step", quick, "HF tokenizers (pre-split words)", 1 / 3)


def bpe_pipeline(quick: bool) -> Measurement:
    return _paired("bpe_pipeline", quick, "tiktoken encode_ordinary", 1.0)


def bpe_cjk(quick: bool) -> Measurement:
    return _paired("bpe_cjk", quick, "tiktoken encode_ordinary", 1.0)


def bpe_pathological(quick: bool) -> Measurement:
    _prerequisites()
    from docket.methods.tokenization import bench

    s = _setup(quick)
    sizes = (1_000, 10_000, 100_000) if quick else bench.SIZES
    rows = bench.bpe_pathological(s, sizes, peer_limit=100_000 if quick else MB)
    worst = max(rows, key=lambda kind: rows[kind]["ours_exponent"])
    times = rows[worst]["ours"]
    scale = sizes[-1] // sizes[0]
    exponents = ", ".join(
        f"{kind} {r['ours_exponent']:.2f} (HF {r['hf_exponent']:.2f}, "
        f"tiktoken {r['tiktoken_exponent']:.2f})"
        for kind, r in rows.items()
    )
    return Measurement(
        "bpe_pathological",
        f"BPE-only, worst input ({worst}): per-byte time at {sizes[-1] // 1000} KB over 1 KB",
        f"docket at {sizes[0] // 1000} KB x {scale}",
        times[-1],
        times[0] * scale,
        target=scale**0.1,
        repeats=5,
        note=f"fitted exponents: {exponents}",
    )


def bpe_stream_latency(quick: bool) -> Measurement:
    _prerequisites()
    from docket.methods.tokenization import bench

    s = _setup(quick)
    rows = bench.bpe_stream_latency(s, 100_000 if quick else MB)
    worst = max(rows, key=lambda kind: rows[kind]["p99"])
    facts = ", ".join(
        f"{k} p50 {r['p50'] * 1e9:.0f} / p99 {r['p99'] * 1e9:.0f} / p99.99 "
        f"{r['p99.99'] * 1e9:.0f} ns, {r['max_pending_bytes']} B pending"
        for k, r in rows.items()
    )
    return Measurement(
        "bpe_stream_latency",
        f"p99 latency per byte fed to the eager encoder (worst input: {worst})",
        "1 us per byte (issue 18's budget)",
        rows[worst]["p99"],
        1e-6,
        target=1.0,
        repeats=1,
        note=facts,
    )


def bpe_append(quick: bool) -> Measurement:
    _prerequisites()
    from docket.methods.tokenization import bench

    s = _setup(quick)
    prefix = 100_000 if quick else MB
    facts = bench.bpe_append(s, prefix, 1000, 5 if quick else 15)
    return Measurement(
        "bpe_append",
        f"append 1 KB to a {prefix // 1000} KB prefix (streamed pipeline, feed + emit)",
        "tiktoken re-encoding the prefix",
        facts["ours"],
        facts["tiktoken"],
        target=0.1,
        repeats=5 if quick else 15,
        note=(
            f"BPE-only incremental append {facts['bpe_only'] * 1e6:.0f} us; HF re-encode "
            f"{facts['hf'] * 1e3:.0f} ms"
        ),
    )


BPE_CASES = {
    "bpe_step": bpe_step,
    "bpe_pipeline": bpe_pipeline,
    "bpe_cjk": bpe_cjk,
    "bpe_pathological": bpe_pathological,
    "bpe_stream_latency": bpe_stream_latency,
    "bpe_append": bpe_append,
}
