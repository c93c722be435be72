"""Streaming: the full pipeline fed in random parts emits exactly `encode`'s ids, never
retracting one; the byte-level encoder's prefix tokenizations and lifecycle."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.methods.tokenization.corpus import stdlib_text
from docket.methods.tokenization.tokenizer import Tokenizer

CHAT = "<|im_start|>user\nWhat's 2+2?  Say it\n\n  twice.<|im_end|>\n<|im_start|>assistant\n"


def streamed(tok: Tokenizer, text: str, rng: random.Random, **kwargs: Any) -> tuple[list[int], int]:
    """(ids emitted part by part then flushed, how many came before the end)."""
    stream = tok.stream(**kwargs)
    out: list[int] = []
    final = tok.encode(text, **kwargs)
    i = 0
    while i < len(text):
        j = i + rng.randint(1, 40)
        stream.feed(text[i:j])
        out += stream.emit()
        assert final[: len(out)] == out  # never retracted
        i = j
    before = len(out)
    return out + stream.flush(), before


@pytest.mark.parametrize("fixture", ["trained", "cl100k"])
def test_stream_in_random_parts_equals_encode(fixture: str, request: pytest.FixtureRequest) -> None:
    _, tok = request.getfixturevalue(fixture)
    rng = random.Random(3)
    text = stdlib_text(20_000, skip=600) + "  \n\n" + CHAT + "a" * 500 + "'s 'LL"
    ids, before = streamed(tok, text, rng)
    assert ids == tok.encode(text)
    assert before > 0.9 * len(ids)  # tokens flow out while the text still arrives


@settings(max_examples=80)
@given(text=st.text(alphabet="ab '\n\t0123<|>im_start!ß日", max_size=80), seed=st.integers(0, 99))
def test_stream_matches_encode_on_random_text(
    trained: tuple[Any, Tokenizer], text: str, seed: int
) -> None:
    _, tok = trained
    ids, _ = streamed(tok, text + "<|endoftext|>" + text, random.Random(seed))
    assert ids == tok.encode(text + "<|endoftext|>" + text)


def test_special_tokens_split_across_parts(smol: tuple[Any, Tokenizer]) -> None:
    hf, tok = smol
    stream = tok.stream()
    for ch in CHAT:  # one character at a time: "<|im_start|>" must not leak out as text
        stream.feed(ch)
    ids = stream.emit() + stream.flush()
    assert ids == list(hf.encode(CHAT, add_special_tokens=False).ids)
    assert ids[0] == tok.encode("<|im_start|>")[0] == 1


def test_tiktoken_specials_only_when_allowed(cl100k: tuple[Any, Tokenizer]) -> None:
    peer, tok = cl100k
    text = "a<|endoftext|>b"
    rng = random.Random(0)
    assert streamed(tok, text, rng)[0] == peer.encode_ordinary(text)
    ids, _ = streamed(tok, text, rng, allowed_special="all")
    assert ids == peer.encode(text, allowed_special="all")


def test_incremental_encoder_lifecycle(trained_whole: tuple[Any, Tokenizer]) -> None:
    _, tok = trained_whole
    encoder = tok.incremental()
    encoder.feed("aaaa")
    encoder.feed(b" bbb")
    assert len(encoder) == 8
    assert encoder.tokens_of_prefix() == tok.encode_bytes(b"aaaa bbb")
    assert encoder.tokens_of_prefix(3) == tok.encode_bytes(b"aaa")
    assert encoder.tokens_of_prefix(0) == []
    with pytest.raises(IndexError, match="outside 0..8"):
        encoder.tokens_of_prefix(9)
    ids = encoder.emit() + encoder.flush()
    assert ids == tok.encode_bytes(b"aaaa bbb")
    with pytest.raises(RuntimeError, match="flushed; reset"):
        encoder.feed(b"x")
    encoder.reset()
    encoder.feed(b"")
    assert encoder.flush() == [] and len(encoder) == 0


def test_plain_incremental_mode_flushes_everything(trained_whole: tuple[Any, Tokenizer]) -> None:
    _, tok = trained_whole
    encoder = tok.incremental(eager=False)
    encoder.feed(b"hello  world")
    assert encoder.emit() == []
    assert encoder.flush() == tok.encode_bytes(b"hello  world")


def test_streamed_ids_share_one_int_object_per_id(trained: tuple[Any, Tokenizer]) -> None:
    """The native stream hands out each id as the vocabulary's one int object for it (no fresh
    int per token between native steps): equal ids are the same object, in every part and in
    the flush, and they equal `encode`'s."""
    _, tok = trained
    text = "the cat and the hat and the bat " * 40 + "zq" * 300
    data = text.encode("utf-8")
    stream = tok.stream()
    out: list[int] = []
    for i in range(0, len(data), 256):
        stream.feed(data[i : i + 256])
        out += stream.emit()
    out += stream.flush()
    assert out == tok.encode(text)
    first: dict[int, int] = {}
    for value in out:
        assert type(value) is int
        assert first.setdefault(value, id(value)) == id(value)
    assert sum(1 for value in set(out) if value > 256) > 3  # ids past the small-int cache
