"""Streaming non-ASCII text through the native text layer (`TextStream`): multi-byte characters
cut between parts at every byte offset, invalid UTF-8 (replaced as `bytes.decode(errors=
"replace")` does), surrogate halves in `str` parts, added tokens cut between parts, and the
split patterns without a native scanner. Ids always equal `Tokenizer.encode`'s and are never
retracted."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.methods.tokenization.corpus import STREAM_CLASSES, stream_input
from docket.methods.tokenization.tokenizer import Tokenizer
from tests.methods.tokenization.conftest import regex_split_config

#: Two-, three- and four-byte characters, a ZWJ sequence, CJK, digits and added tokens.
MIXED = (
    "Grüße 日本語、テスト<|im_start|>😀 👨\u200d👩\u200d👧 x<|im_end|>٣12 é\u0301 <|endoftext|>中"
)

#: Byte strings that make valid, cut and invalid UTF-8 when joined in any order.
FRAGMENTS = [
    b"a",
    b" ",
    b"1",
    b"<",
    b"<|",
    b"<|im_start|>",
    b"<|endoftext|>",
    b"\xc3",
    b"\xa9",
    b"\xe6\x97",
    b"\xa5",
    b"\xf0\x9f",
    b"\x98\x80",
    b"\x80",
    b"\xbf",
    b"\xe0\x80",  # E0 needs A0..BF next
    b"\xed\xa0\x80",  # an encoded surrogate
    b"\xf4\x90\x80\x80",  # past U+10FFFF
    b"\xf5",
    b"\xc0\xaf",  # overlong
    b"\xff",
    "日本".encode(),
    "😀".encode(),
]


def feed_all(tok: Tokenizer, parts: list[str | bytes], **kwargs: Any) -> list[int]:
    """Ids of `parts` fed in order, checking after each that none is retracted."""
    final = tok.encode(expected_text(parts), **kwargs)
    stream = tok.stream(**kwargs)
    out: list[int] = []
    for part in parts:
        stream.feed(part)
        out += stream.emit()
        assert out == final[: len(out)]
    return out + stream.flush()


def expected_text(parts: list[str | bytes]) -> str:
    """The text the parts stand for: runs of byte parts decoded together (errors="replace"),
    `str` parts as they are (surrogate halves pair up across parts, as in one string)."""
    text: list[str] = []
    run: list[bytes] = []
    for part in parts:
        if isinstance(part, bytes):
            run.append(part)
            continue
        text.append(b"".join(run).decode("utf-8", "replace"))
        run = []
        text.append(part)
    text.append(b"".join(run).decode("utf-8", "replace"))
    return "".join(text)


@pytest.mark.parametrize("fixture", ["trained", "smol", "cl100k", "trained_whole"])
def test_characters_cut_at_every_byte_offset(fixture: str, request: pytest.FixtureRequest) -> None:
    _, tok = request.getfixturevalue(fixture)
    data = MIXED.encode()
    expected = tok.encode(MIXED)
    for cut in range(len(data) + 1):
        assert feed_all(tok, [data[:cut], data[cut:]]) == expected, cut
    for size in (1, 2, 3, 5):
        parts: list[str | bytes] = [data[i : i + size] for i in range(0, len(data), size)]
        assert feed_all(tok, parts) == expected, size


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(FRAGMENTS), max_size=40),
    cuts=st.lists(st.integers(1, 9), min_size=1, max_size=10),
)
def test_invalid_utf8_is_replaced_as_decode_does(
    smol: tuple[Any, Tokenizer], pieces: list[bytes], cuts: list[int]
) -> None:
    _, tok = smol
    data = b"".join(pieces)
    parts: list[str | bytes] = []
    i, k = 0, 0
    while i < len(data):
        parts.append(data[i : i + cuts[k % len(cuts)]])
        i += cuts[k % len(cuts)]
        k += 1
    assert feed_all(tok, parts) == tok.encode(data.decode("utf-8", "replace"))


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            st.text(alphabet="a 日<|>im_startend\ud83d\ude00\udbff\udc00\ud800é", max_size=8),
            st.lists(st.sampled_from(FRAGMENTS), max_size=3).map(b"".join),
        ),
        max_size=12,
    )
)
def test_surrogates_and_mixed_parts(smol: tuple[Any, Tokenizer], parts: list[str | bytes]) -> None:
    """Lone surrogates become U+FFFD, halves in separate `str` parts pair up, a cut byte
    sequence before a `str` part is U+FFFD: as `encode` of the text the parts stand for."""
    _, tok = smol
    assert feed_all(tok, parts) == tok.encode(expected_text(parts))


def test_added_tokens_not_allowed_stay_text(cl100k: tuple[Any, Tokenizer]) -> None:
    """tiktoken sources: special tokens are text unless allowed, cut anywhere."""
    peer, tok = cl100k
    text = "日本<|endoftext|>語 <|fim_prefix|>x"
    data = text.encode()
    for cut in range(len(data) + 1):
        parts: list[str | bytes] = [data[:cut], data[cut:]]
        assert feed_all(tok, parts) == peer.encode_ordinary(text)
        allowed = feed_all(tok, parts, allowed_special={"<|endoftext|>"})
        expected = peer.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special=())
        assert allowed == expected


@pytest.mark.parametrize("kind", STREAM_CLASSES)
def test_stream_input_classes(smol: tuple[Any, Tokenizer], kind: str) -> None:
    """The benchmark's input classes, 20 KB in 256-byte and odd-sized parts."""
    _, tok = smol
    data = stream_input(kind, 20_000, seed=3)
    assert len(data) <= 20_000 and len(data.decode()) > 0
    expected = tok.encode(data.decode())
    for size in (256, 97):
        parts: list[str | bytes] = [data[i : i + size] for i in range(0, len(data), size)]
        assert feed_all(tok, parts) == expected


def test_split_without_native_scanner(trained_json: Path) -> None:
    """A Split pattern run in Python's `regex`: segments close at added tokens and the end,
    with cut characters and invalid bytes handled natively first."""
    config = regex_split_config(trained_json)
    tok = Tokenizer.from_tokenizer_json(config)
    assert tok.source.split == "regex"
    data = ("ab 12 日本<|endoftext|>é😀x" * 3).encode() + b"\xff\xe6\x97"
    expected = tok.encode(data.decode("utf-8", "replace"))
    rng = random.Random(1)
    for _ in range(30):
        cuts = sorted(rng.sample(range(1, len(data)), 4))
        bounds = zip([0, *cuts], [*cuts, len(data)], strict=True)
        parts: list[str | bytes] = [data[a:b] for a, b in bounds]
        assert feed_all(tok, parts) == expected
    stream = tok.stream()
    stream.feed(data)
    assert stream.window_bytes == 0 and stream.pending_bytes > 0


def test_pending_bytes_count_held_text(smol: tuple[Any, Tokenizer]) -> None:
    """A cut sequence and a possible added token's start are pending, not emitted."""
    _, tok = smol
    stream = tok.stream()
    stream.feed(b"ab <|im_st")
    stream.feed(b"\xe6\x97")
    assert stream.pending_bytes >= len(b"<|im_st\xe6\x97")
    stream.feed("\ud83d")
    ids = stream.emit() + stream.flush()
    assert ids == tok.encode("ab <|im_st\ufffd\ufffd")
    with pytest.raises(ValueError, match="flushed"):
        stream.feed(b"x")
