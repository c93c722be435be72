"""The split window of `stream()` on long open pieces (issue 35 item 1): the middle of a piece
longer than ~4k code points leaves the window (GPT-2, cl100k and no split; o200k keeps it), and
that changes nothing observable. Against `encode` and byte counts, on pieces of every kind the
split knows (letters ASCII and not, spaces, spaces with newlines, digits, punctuation, 'abab',
random letters), each followed by more text, fed in 1-, 7- and 256-byte parts.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from docket.methods.tokenization.tokenizer import Tokenizer

LONG = 12_000
TAIL = " end. Next 12 words\n\n  x"


def long_piece(kind: str) -> str:
    rng = random.Random(7)
    return {
        "a": "a" * LONG,
        "space": " " * LONG,
        "space_newlines": (" " * 59 + "\n") * (LONG // 60),
        "ab": "ab" * (LONG // 2),
        "letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(LONG)),
        "accented": "é" * (LONG // 2),
        "digits": "7" * LONG,
        "punctuation": "!" * LONG,
        "space_word": " " + "b" * LONG,
    }[kind]


KINDS = (
    "a",
    "space",
    "space_newlines",
    "ab",
    "letters",
    "accented",
    "digits",
    "punctuation",
    "space_word",
)
#: the splits that drop a long open piece's middle from the window
COMPACTED = {"trained", "cl100k", "trained_whole"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fixture", ["trained", "cl100k", "o200k", "trained_whole"])
def test_long_open_pieces_stream_as_encode(
    fixture: str, kind: str, request: pytest.FixtureRequest
) -> None:
    _, tok = request.getfixturevalue(fixture)
    piece = long_piece(kind)
    text = "x " + piece + TAIL
    data = text.encode("utf-8")
    final = tok.encode(text)
    piece_end = len(("x " + piece).encode("utf-8"))
    for part in (1, 7, 256):
        stream = tok.stream()
        out: list[int] = []
        out_bytes = 0
        widest = 0
        for i in range(0, len(data), part):
            stream.feed(data[i : i + part])
            new = stream.emit()
            assert final[len(out) : len(out) + len(new)] == new, f"{part}-byte parts, byte {i}"
            out += new
            out_bytes += len(tok.decode_bytes(new))
            fed = min(i + part, len(data))
            # every byte fed is in an emitted token or pending (the middle that left the window
            # included)
            assert out_bytes + stream.pending_bytes == fed, (part, fed)
            if fed <= piece_end:
                widest = max(widest, stream.window_bytes)
        assert out + stream.flush() == final, f"{part}-byte parts"
        if fixture == "cl100k" and kind == "space_newlines":  # a gap never holds a newline
            assert widest >= LONG - 300, (part, widest)
        elif fixture in COMPACTED:  # ~4k code points of window, not the 12k of the piece
            assert widest <= 2 * (4096 + 8 + 64) + 256, (part, widest)
        elif kind in ("a", "letters", "accented"):  # o200k keeps a letter run whole
            assert widest >= LONG - 300, (part, widest)


def test_window_stays_small_on_a_megabyte_piece(trained: tuple[Any, Tokenizer]) -> None:
    """1 MB of 'a' in 256-byte parts: the window never holds more than ~4.6 KB (it held the
    whole piece, 11 bytes of arrays per byte, before); ids are encode's."""
    _, tok = trained
    data = b"a" * 1_000_000
    stream = tok.stream()
    out: list[int] = []
    widest = 0
    for i in range(0, len(data), 256):
        stream.feed(data[i : i + 256])
        out += stream.emit()
        widest = max(widest, stream.window_bytes)
    assert out + stream.flush() == tok.encode(data.decode())
    assert widest <= 4096 + 8 + 64 + 2 * 256


@pytest.mark.parametrize("fixture", ["trained", "cl100k"])
def test_piece_ending_right_after_a_compaction(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """The first compaction comes once the piece's middle spans 4096 code points (about 4170
    in); pieces ending at each length around it, fed byte by byte, end where `encode` says:
    the memo's resume point moved with the text (left where it was, the run would skip the
    next bytes and miss an end among them)."""
    _, tok = request.getfixturevalue(fixture)
    for char in ("a", " ", "!"):
        for length in range(4150, 4200):
            text = "x " + char * length + " b."
            stream = tok.stream()
            out: list[int] = []
            for byte in text.encode():
                stream.feed(bytes([byte]))
                out += stream.emit()
            assert out + stream.flush() == tok.encode(text), (char, length)
