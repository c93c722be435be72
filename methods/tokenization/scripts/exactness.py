"""Exactness at scale (the run the README describes): identical ids to HF tokenizers and tiktoken
on a 10 MB corpus and on >= 10^5 random and adversarial strings drawn by hypothesis, plus every
prefix and the eager output of the byte-level encoder.

    python methods/tokenization/scripts/exactness.py [--examples 100000] [--corpus-mb 10]

Vocabularies: the 50k byte-level BPE trained here (benchmarks' vocabulary; HF, and tiktoken on
its ranks), SmolLM2-135M-Instruct's tokenizer from its GGUF (HF), cl100k_base and o200k_base
from quicktok-v1's ranks (tiktoken). Exits 1 on the first mismatch, naming it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from docket.methods.tokenization.corpus import adversarial_strings, stdlib_text
from docket.methods.tokenization.tokenizer import Tokenizer

Check = Callable[[str], tuple[list[int], list[int]]]


@dataclass
class Report:
    """Checks passed and seconds taken, by name."""

    checks: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def count(self, name: str, n: int = 1) -> None:
        """Add `n` passed checks to `name`."""
        self.checks[name] = self.checks.get(name, 0) + n


class Mismatch(AssertionError):
    """Our ids differ from the peer's (the message names the check and the input)."""


def pairs(folder: Path) -> dict[str, Check]:
    """name -> text -> (our ids, the peer's ids)."""
    import tiktoken
    from tokenizers import Tokenizer as HFTokenizer

    from docket.methods.tokenization import bench
    from docket.methods.tokenization.corpus import smollm2_tokenizer_json
    from docket.methods.tokenization.sources import QUICKTOK_PATTERNS, read_quicktok_ranks

    s = bench.setup(1000)
    smol_json = smollm2_tokenizer_json(folder / "smollm2")
    smol_hf, smol = HFTokenizer.from_file(str(smol_json)), Tokenizer.from_tokenizer_json(smol_json)
    checks: dict[str, Check] = {
        "trained-50k vs HF": lambda t: (
            s.ours.encode(t),
            s.hf.encode(t, add_special_tokens=False).ids,
        ),
        "trained-50k vs tiktoken": lambda t: (
            s.ours.encode_ordinary(t),
            s.tiktoken.encode_ordinary(t),
        ),
        "SmolLM2 vs HF": lambda t: (
            smol.encode(t),
            smol_hf.encode(t, add_special_tokens=False).ids,
        ),
    }
    for name in ("cl100k_base", "o200k_base"):
        ranks, specials = read_quicktok_ranks(name)
        peer = tiktoken.Encoding(
            name, pat_str=QUICKTOK_PATTERNS[name], mergeable_ranks=ranks, special_tokens=specials
        )
        checks[f"{name} vs tiktoken"] = partial(_pair, Tokenizer.from_quicktok(name), peer)
    whole = s.ours_whole

    def prefixes(t: str) -> tuple[list[int], list[int]]:
        """Every prefix of the byte-level stream and the eager output, against encode_bytes."""
        data = t.encode("utf-8")
        encoder = whole.incremental()
        emitted: list[int] = []
        for b in data:
            encoder.feed(bytes([b]))
            emitted += encoder.emit()
        for i in range(len(data) + 1):
            got, want = encoder.tokens_of_prefix(i), whole.encode_bytes(data[:i])
            if got != want:
                return got, want
        return emitted + encoder.flush(), whole.encode_bytes(data)

    checks["BPE-only: every prefix + eager"] = prefixes
    checks["BPE-only vs HF"] = lambda t: (whole.encode(t), s.hf_whole.encode(t).ids)
    return checks


def _pair(ours: Tokenizer, peer: Any, text: str) -> tuple[list[int], list[int]]:
    return ours.encode(text), list(peer.encode_ordinary(text))


def run_corpus(checks: dict[str, Check], text: str, report: Report) -> None:
    """Every check but the quadratic prefix one on the whole corpus, timed.

    Args:
        checks: The checks of `pairs`.
        text: The corpus.
        report: Where the token counts and seconds go.

    Raises:
        Mismatch: At the first token where a check's two sides differ.
    """
    for name, check in checks.items():
        if name.startswith("BPE-only: every"):
            continue  # quadratic in the text by design; the strings cover it
        started = time.perf_counter()
        ours, peer = check(text)
        report.seconds[f"corpus {name}"] = time.perf_counter() - started
        if ours != peer:
            first = next(i for i, (a, b) in enumerate(zip(ours, peer, strict=False)) if a != b)
            raise Mismatch(f"{name}: corpus differs at token {first}")
        report.count(f"corpus tokens, {name}", len(ours))


def run_strings(checks: dict[str, Check], examples: int, report: Report) -> None:
    """Every check on `examples` random and adversarial strings drawn by hypothesis.

    Args:
        checks: The checks of `pairs`.
        examples: How many strings hypothesis draws.
        report: Where the counts and seconds go.

    Raises:
        Mismatch: On the first string where a check's two sides differ.
    """
    from hypothesis import HealthCheck, given, settings

    strings = adversarial_strings(80)

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(text=strings)
    def every_tokenizer(text: str) -> None:
        for name, check in checks.items():
            if name.startswith("BPE-only: every") and len(text) > 40:
                continue
            ours, peer = check(text)
            if ours != peer:
                raise Mismatch(f"{name}: {text!r} gives {ours[:12]} vs {peer[:12]}")
            report.count(f"strings, {name}")

    started = time.perf_counter()
    every_tokenizer()
    report.seconds["strings"] = time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the corpus and string checks and print the counts and timings.

    Args:
        argv: The arguments without the program name (`None`: `sys.argv[1:]`).

    Returns:
        The exit status: 0 when every id is identical, 1 on the first mismatch.
    """
    parser = argparse.ArgumentParser(prog="python methods/tokenization/scripts/exactness.py")
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--corpus-mb", type=float, default=10.0)
    args = parser.parse_args(argv)
    report = Report()
    with tempfile.TemporaryDirectory() as folder:
        checks = pairs(Path(folder))
        text = stdlib_text(int(args.corpus_mb * 1_000_000))
        print(f"corpus: {len(text.encode('utf-8')) / 1e6:.1f} MB of standard-library sources")
        try:
            run_corpus(checks, text, report)
            run_strings(checks, args.examples, report)
        except Mismatch as error:
            print(f"MISMATCH {error}")
            return 1
    for name, n in report.checks.items():
        print(f"{n:>10}  {name}")
    for name, seconds in report.seconds.items():
        print(f"{seconds:>9.1f}s  {name}")
    print("all identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
