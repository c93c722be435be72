"""Streaming inside a pre-token piece (issue 35 item 1): `stream()` hands only the new bytes of
the open piece to the eager encoder, so a text that is one huge piece ('a' x n, spaces, 'abab',
random letters) streams in linear time with its tokens out before `flush`.

Three claims, each against something independent of the streaming code:
* ids: fed in 1-, 7- and 256-byte parts (multi-byte characters cut between parts), the ids are
  `encode`'s and never retracted;
* eagerness: after every part, exactly the tokens of the closed pieces plus those the (separately
  tested) byte-stream `Stream` emits for the open piece's certain prefix are out, and at the end
  that count is within two tokens of, and never above, the tokens common to `encode` of the text
  followed by each of ~600 continuations;
* the certain prefix: on every string up to three characters over the split patterns' tricky
  characters, the split's bound on the open piece's end is exactly the least end over the empty
  continuation and every continuation up to two characters (and random longer ones), so it is
  neither too eager nor too cautious.
"""

from __future__ import annotations

import itertools
import random
import string
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.methods.tokenization._native import native
from docket.methods.tokenization.corpus import pathological, stdlib_text
from docket.methods.tokenization.sources import SPLIT_CODES
from docket.methods.tokenization.tokenizer import Tokenizer

SIZE = 1500
KINDS = ("a", "space", "ab", "letters", "text")
FIXTURES = ("trained", "cl100k", "o200k", "trained_whole")
#: A few hundred continuations: every printable character, pairs, runs as long as the longest
#: token of 'a', 'b', spaces and 'ab', digits, apostrophes, non-ASCII letters, an added token.
BASE_CONTINUATIONS = [
    *string.printable,
    *("".join(p) for p in itertools.product("ab z1'!\n", string.ascii_lowercase + " 1!'\n")),
    "",
    "é",
    "日",
    "ß",
    "<|endoftext|>",
    "'s",
    "'ll",
    "123",
    "x y",
    "\r\n",
]


def input_text(kind: str, size: int = SIZE) -> str:
    """One of the inputs the issue names; text carries non-ASCII letters and an added token."""
    if kind == "text":
        return stdlib_text(size, skip=700) + " 日本語 ß über  \n\n  x<|endoftext|>ab  cd"
    return pathological(kind, size)


def continuations(tok: Tokenizer) -> list[str]:
    longest = tok.info()["max_token_bytes"]
    runs = [c * k for c in ("a", "b", " ", "ab") for k in range(2, longest + 3)]
    return BASE_CONTINUATIONS + runs


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@cache
def whole_piece_max(tok: Tokenizer) -> int:
    """The longest non-canonical token a whole piece can be (tiktoken sources), else 0."""
    if not tok.source.whole_piece_lookup:
        return 0
    tokens = tok.source.tokens
    lengths = (len(t) for i, t in enumerate(tokens) if t and not tok.vocab.is_canonical(i))
    return max(lengths, default=0)


def certain_count(tok: Tokenizer, text: str) -> int:
    """Tokens certain once `text` is in, by the two certainties: the pieces the split has closed
    (tokens of `encode`), then in the open piece what the byte-stream `Stream` emits fed its
    certain prefix (none while a whole-piece token could still cover it)."""
    count = 0
    segments = text.split("<|endoftext|>") if tok.source.flavour == "hf" else [text]
    for segment in segments[:-1]:
        count += len(tok.encode(segment)) + 1
    last = segments[-1]
    if tok.source.flavour == "hf":  # a tail that may grow into the added token waits
        cut = [k for k in range(len(last)) if "<|endoftext|>".startswith(last[k:])]
        last = last[: cut[0]] if cut else last
    data = last.encode("utf-8")
    ends, start, floor = native().split_open(SPLIT_CODES[tok.source.split], data)
    count += len(tok.encode(data[: max(start, 0)].decode("utf-8"))) if ends else 0
    if start < 0 or floor - start <= whole_piece_max(tok):
        return count
    stream = native().Stream(tok.vocab)
    stream.feed(data[start:floor])
    return count + len(stream.emit())


def streamed(tok: Tokenizer, data: bytes, part: int, check_every: int) -> tuple[list[int], int]:
    """(ids, how many were out before flush), checking never-retract at every part and the
    eager count every `check_every` parts and after the last."""
    final = tok.encode(data.decode("utf-8"))
    stream = tok.stream()
    out: list[int] = []
    starts = range(0, len(data), part)
    for k, i in enumerate(starts):
        stream.feed(data[i : i + part])
        out += stream.emit()
        assert final[: len(out)] == out, f"retracted after byte {i + part}"
        if k % check_every == 0 or k == len(starts) - 1:
            seen = data[: i + part].decode("utf-8", "ignore")  # a cut character is not in yet
            assert len(out) == certain_count(tok, seen), f"eager count after byte {i + part}"
    return out + stream.flush(), len(out)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fixture", FIXTURES)
def test_streamed_pieces_equal_encode_and_are_eager(
    fixture: str, kind: str, request: pytest.FixtureRequest
) -> None:
    _, tok = request.getfixturevalue(fixture)
    text = input_text(kind)
    data = text.encode("utf-8")
    final = tok.encode(text)
    common = min(common_prefix(final, tok.encode(text + c)) for c in continuations(tok))
    for part, check_every in ((1, 97), (7, 13), (256, 1)):
        ids, before = streamed(tok, data, part, check_every)
        assert ids == final, f"{part}-byte parts"
        # sound (never past what some continuation changes) and within two of the oracle
        assert common - 2 <= before <= common, f"{part}-byte parts: {before} out, {common}"
    assert common >= len(final) - 3  # the inputs leave at most three tokens undecided


@pytest.mark.parametrize("fixture", ["trained", "cl100k", "o200k"])
def test_piece_boundaries_wait_for_the_next_character(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """'a' + ' ' + 'b': the space may join 'b'; digits: cl100k/o200k split runs of three;
    spaces before a word give their last one to it; "'" may start a contraction."""
    _, tok = request.getfixturevalue(fixture)
    for parts in (
        ["a", " ", "b"],
        ["x", "    ", "y"],
        ["12", "34", "5"],
        ["1", "2", "3", "4"],
        ["it", "'", "ll"],
        ["a", "\n", " ", "\n", "  ", "b"],
        ["日", "本", " ", "語"],
    ):
        stream = tok.stream()
        ids: list[int] = []
        for part in parts:
            stream.feed(part)
            ids += stream.emit()
        assert ids + stream.flush() == tok.encode("".join(parts)), parts


@pytest.mark.parametrize("fixture", ["trained", "cl100k"])
def test_native_stream_waits_for_cut_characters(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """The native stream itself, fed single bytes of multi-byte characters (and bytes that are
    not UTF-8), gives `Pipeline.encode`'s ids: a cut sequence waits for its end. (Read before
    its end, "café" would split as "caf" + "é" and "12٣4" as "12" + "٣" + "4".)"""
    _, tok = request.getfixturevalue(fixture)
    text = "café naïve Ünïcode 12٣4 日本語で über aé😀 ß"
    data = text.encode() + b"\xe2\x82 x\xf0\x9f y\xff"
    stream = native().PipelineStream(tok.pipeline)
    ids: list[int] = []
    for i in range(len(data)):
        ids += stream.feed(data[i : i + 1])
    assert ids + stream.finish() == tok.pipeline.encode(data)
    assert tok.decode(tok.pipeline.encode(text.encode())) == text
    assert stream.finish() == []  # finished: empty, ready for a new text
    assert stream.feed(b"ab") + stream.finish() == tok.pipeline.encode(b"ab")


def test_str_and_bytes_parts_mix(trained: tuple[Any, Tokenizer]) -> None:
    """A cut byte sequence followed by a str part is U+FFFD, as decoding the bytes would give;
    surrogate halves in separate str parts pair up as in `encode`."""
    _, tok = trained
    stream = tok.stream()
    stream.feed(b"ab\xe6\x97")
    stream.feed("c")
    stream.feed("\ud83d")
    stream.feed("\ude00 z")
    ids = stream.emit() + stream.flush()
    assert ids == tok.encode("ab\ufffdc\ud83d\ude00 z")
    assert tok.decode(ids) == "ab\ufffdc😀 z"
    with pytest.raises(TypeError, match="str or bytes"):
        tok.stream().feed(3)  # type: ignore[arg-type]


#: The characters the split patterns treat differently: letters of each case class, a mark,
#: digits, whitespace kinds, the contraction characters, punctuation.
ALPHABET = ["a", "A", "ª", "ǅ", "é", "\u0301", "1", " ", "\n", "\t", "'", "s", "l", "!"]


def piece_end(kind: int, data: bytes, start: int) -> int:
    """The end of the piece that starts at byte `start` in the complete text `data`."""
    return min(e for e in native().split(kind, data) if e > start)


def check_floor(kind: int, text: str, extra: list[str]) -> None:
    data = text.encode()
    ends, start, floor = native().split_open(kind, data)
    conts = ["", *extra]
    for c in conts:
        full = (text + c).encode()
        pieces = list(native().split(kind, full))
        assert [e for e in pieces if e <= (start if start >= 0 else len(data))] == list(ends)
    if start < 0:
        return
    least = min(piece_end(kind, (text + c).encode(), start) for c in conts)
    assert floor == least, (kind, text, floor, least)


@cache
def short_continuations() -> list[str]:
    return ["".join(p) for n in (1, 2) for p in itertools.product(ALPHABET, repeat=n)]


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_certain_prefix_is_exactly_the_least_end(kind: int) -> None:
    rng = random.Random(kind)
    conts = short_continuations()
    for n in (1, 2, 3):
        for chars in itertools.product(ALPHABET, repeat=n):
            longer = ["".join(rng.choices(ALPHABET, k=rng.randint(3, 6))) for _ in range(4)]
            check_floor(kind, "".join(chars), conts + longer)


@settings(max_examples=150)
@given(
    text=st.text(alphabet="".join(ALPHABET), min_size=1, max_size=14),
    extra=st.lists(st.text(alphabet="".join(ALPHABET), min_size=1, max_size=8), max_size=8),
    kind=st.sampled_from([1, 2, 3]),
)
def test_certain_prefix_on_longer_strings(text: str, extra: list[str], kind: int) -> None:
    check_floor(kind, text, [*extra, *ALPHABET])
