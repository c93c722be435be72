"""Ids identical to HF tokenizers and tiktoken: a locally trained byte-level BPE, SmolLM2's
tokenizer (from its GGUF) and cl100k/o200k (quicktok-v1's ranks), on standard-library text and
on random and adversarial strings. The 10^5-string and 10 MB runs are
`python methods/tokenization/scripts/exactness.py` (README); these keep CI-sized counts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings

from docket.methods.tokenization._native import native
from docket.methods.tokenization.corpus import adversarial_strings, pathological, stdlib_text
from docket.methods.tokenization.sources import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN
from docket.methods.tokenization.tokenizer import Tokenizer
from tests.methods.tokenization.conftest import regex_split_config

adversarial = adversarial_strings()
TEXT = stdlib_text(120_000, skip=400)  # files the trained vocabulary did not see


def hf_ids(hf: Any, text: str) -> list[int]:
    return list(hf.encode(text, add_special_tokens=False).ids)


def test_trained_vocabulary_matches_hf_on_stdlib_text(trained: tuple[Any, Tokenizer]) -> None:
    hf, tok = trained
    assert tok.info()["canonical"] == 3999  # every token but <|endoftext|> is reachable
    assert tok.encode(TEXT) == hf_ids(hf, TEXT)
    for kind in ("a", "space", "ab", "letters"):
        text = pathological(kind, 20_000)
        assert tok.encode(text) == hf_ids(hf, text), kind


@settings(max_examples=150)
@given(text=adversarial)
@example(text="<|endoftext|>x<|endoftext|>")
def test_trained_vocabulary_matches_hf_on_random_strings(
    trained: tuple[Any, Tokenizer], text: str
) -> None:
    hf, tok = trained
    assert tok.encode(text) == hf_ids(hf, text)


@settings(max_examples=150)
@given(text=adversarial)
def test_bpe_only_matches_hf_and_every_prefix(
    trained_whole: tuple[Any, Tokenizer], text: str
) -> None:
    hf, tok = trained_whole
    data = text.encode("utf-8")
    assert tok.encode(text) == hf_ids(hf, text)
    encoder = tok.incremental()
    encoder.feed(data)
    for i in range(0, len(data) + 1, max(1, len(data) // 8)):
        assert encoder.tokens_of_prefix(i) == tok.encode_bytes(data[:i])
    assert encoder.emit() + encoder.flush() == tok.encode_bytes(data)


def test_cl100k_matches_tiktoken(cl100k: tuple[Any, Tokenizer]) -> None:
    peer, tok = cl100k
    assert tok.encode(TEXT) == peer.encode_ordinary(TEXT)
    special = "hi<|endoftext|>there<|fim_prefix|>"
    assert tok.encode(special, allowed_special="all") == peer.encode(special, allowed_special="all")
    assert tok.encode(special) == peer.encode_ordinary(special)
    for kind in ("a", "ab", "letters"):
        text = pathological(kind, 20_000)
        assert tok.encode(text) == peer.encode_ordinary(text), kind


@settings(max_examples=150)
@given(text=adversarial)
@example(text="x'ſ 'S's\u212a")
def test_cl100k_matches_tiktoken_on_random_strings(
    cl100k: tuple[Any, Tokenizer], text: str
) -> None:
    peer, tok = cl100k
    assert tok.encode(text) == peer.encode_ordinary(text)


@pytest.mark.slow
def test_o200k_matches_tiktoken(o200k: tuple[Any, Tokenizer]) -> None:
    peer, tok = o200k
    assert tok.encode(TEXT[:40_000]) == peer.encode_ordinary(TEXT[:40_000])
    for text in ("HELLOWorld don'T I'LL", "x\u0301\u0301Ab\u0301c'S", "ǅungla ʰa", " \n\n  x\n "):
        assert tok.encode(text) == peer.encode_ordinary(text), text


def test_smollm2_tokenizer_matches_hf(smol: tuple[Any, Tokenizer]) -> None:
    hf, tok = smol
    chat = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat's 2+2?<|im_end|>\n"
    for text in (TEXT[:30_000], chat, "  leading and   inner  spaces \n\n\t"):
        assert tok.encode(text) == hf_ids(hf, text)


@settings(max_examples=150)
@given(text=adversarial)
def test_gpt2_splitter_matches_hf_regex(text: str) -> None:
    """The hand-written GPT-2 scanner splits exactly like HF's ByteLevel regex (Oniguruma)."""
    from tokenizers import Regex, pre_tokenizers

    pieces = pre_tokenizers.Split(Regex(GPT2_PATTERN), "isolated").pre_tokenize_str(text)
    assert native_pieces(1, text) == [p for p, _ in pieces]


def native_pieces(kind: int, text: str) -> list[str]:
    data = text.encode("utf-8")
    ends = list(native().split(kind, data))
    starts = [0, *ends][:-1]
    return [data[a:b].decode() for a, b in zip(starts, ends, strict=True)]


def same_classes(text: str) -> str:
    """`text` without characters on which the `regex` module's (newer) Unicode tables differ
    from the peers' (native().unicode_class holds the peers' classes)."""
    import regex

    probes = {1: r"\p{L}", 2: r"\p{N}", 4: r"\s", 8: r"\p{Lu}", 16: r"\p{Ll}", 256: r"\p{M}"}
    keep = []
    for ch in text:
        bits = native().unicode_class(ord(ch))
        if all(bool(regex.fullmatch(p, ch)) == bool(bits & b) for b, p in probes.items()):
            keep.append(ch)
    return "".join(keep)


@pytest.mark.parametrize(("kind", "pattern"), [(2, CL100K_PATTERN), (3, O200K_PATTERN)])
@settings(max_examples=120)
@given(text=adversarial)
@example(text="0000 12345 'ſ HELLOWorld\u0301s \n\n  \r\n x")
def test_tiktoken_splitters_match_the_pattern(kind: int, pattern: str, text: str) -> None:
    """cl100k/o200k scanners against the pattern in the `regex` module (tiktoken's possessive
    semantics; Oniguruma reads `{1,3}+` as a repetition, so HF is not the reference here)."""
    import regex

    text = same_classes(text)
    assert native_pieces(kind, text) == regex.findall(pattern, text)


def test_unknown_split_pattern_uses_the_regex_module(trained_json: Any) -> None:
    """A Split pattern without a native scanner still encodes like HF (Python `regex`)."""
    import json

    from tokenizers import Tokenizer as HFTokenizer

    config = regex_split_config(trained_json)
    hf = HFTokenizer.from_str(json.dumps(config))
    tok = Tokenizer.from_tokenizer_json(config)
    assert tok.source.split == "regex"
    text = TEXT[:5000] + " 2024 abc"
    assert tok.encode(text) == hf_ids(hf, text)
