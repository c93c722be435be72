"""Bad input is one clear line or documented behaviour, never a crash in native code."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from docket.methods.tokenization import _native, oracle
from docket.methods.tokenization.properize import ImproperMergeList, pack
from docket.methods.tokenization.sources import Source, from_tokenizer_json
from docket.methods.tokenization.tokenizer import Tokenizer


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and text
    return text


def test_truncated_tokenizer_json_is_one_line(trained_json: Path, tmp_path: Path) -> None:
    broken = tmp_path / "tokenizer.json"
    broken.write_text(trained_json.read_text()[:5000])
    with pytest.raises(ValueError) as caught:
        Tokenizer.from_tokenizer_json(broken)
    assert "not valid JSON (truncated?)" in one_line(caught.value)
    with pytest.raises(ValueError, match="cannot read"):
        Tokenizer.from_tokenizer_json(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["model"].pop("merges"), "merges is missing"),
        (lambda c: c["model"].update(type="WordPiece"), "not a BPE model"),
        (lambda c: c.update(normalizer={"type": "NFKC"}), "normalizer 'NFKC' is not supported"),
        (lambda c: c["model"]["merges"].append(["Ġ", "zzzz"]), "not in the vocabulary"),
        (lambda c: c["model"]["merges"].append(["a b c"]), "malformed"),
        (lambda c: c.update(pre_tokenizer={"type": "Whitespace"}), "unsupported pre_tokenizer"),
        (lambda c: c["model"].update(dropout=0.1), "dropout"),
    ],
)
def test_malformed_configs_name_the_problem(trained_json: Path, edit: Any, message: str) -> None:
    config = json.loads(trained_json.read_text())
    edit(config)
    with pytest.raises(ValueError) as caught:
        from_tokenizer_json(config)
    assert message in one_line(caught.value)


def test_empty_input_and_invalid_utf8(trained_whole: tuple[Any, Tokenizer]) -> None:
    _, tok = trained_whole
    assert tok.encode("") == [] and tok.encode_bytes(b"") == []
    data = b"\xff\xfe abc \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80"  # invalid UTF-8, byte-level
    expected = oracle.bpe(data, tok.source.tokens, tok.rules)
    assert tok.encode_bytes(data) == expected and -1 not in expected
    encoder = tok.incremental()
    encoder.feed(data)
    assert encoder.emit() + encoder.flush() == expected
    assert tok.decode_bytes(expected) == data


def test_lone_surrogates_become_replacement_characters(cl100k: tuple[Any, Tokenizer]) -> None:
    peer, tok = cl100k
    text = "ok \ud800 ok"
    assert tok.encode(text) == peer.encode_ordinary(text)


def test_bytes_outside_the_vocabulary_follow_hf(tmp_path: Path) -> None:
    """A vocabulary without byte fallback: unknown bytes are dropped before merging (their
    neighbours still merge), or become the unknown token (fused when fuse_unk), exactly as HF
    tokenizers does; the bytes API keeps them as -1 boundaries."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    for unk, fuse in ((None, False), ("<unk>", False), ("<unk>", True)):
        bpe = HFTokenizer(models.BPE(unk_token=unk, fuse_unk=fuse))
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=80, special_tokens=["<unk>"], show_progress=False)
        bpe.train_from_iterator(["aab abab bba aaa bbb"] * 10, trainer)
        tok = Tokenizer.from_tokenizer_json(json.loads(bpe.to_str()))
        for text in ("abc", "xyz ab zz", "ab日本 ab", "ü", "", "axb", "a\x16b zaab"):
            assert tok.encode(text) == bpe.encode(text).ids, (unk, fuse, text)
    assert tok.encode_bytes(b"axb") == [tok.encode("a")[0], -1, tok.encode("b")[0]]


def test_improper_merge_list_is_reordered_exactly_or_refused() -> None:
    tokens = [b"a", b"b", b"ab", b"abb", b"bb", b"aa", b"aaa"]
    # abb from (ab, b) is listed before ab itself: a fixable improper order
    fixable = [(0, 1, 2), (2, 1, 3), (1, 1, 4)]
    fixable = [fixable[1], fixable[0], fixable[2]]
    tok = Tokenizer(Source(tokens=tokens, rules=fixable, name="fixable"))
    for text in (b"abb", b"abbb", b"aabbab", b"babb"):
        assert tok.encode_bytes(text) == oracle.bpe(text, tokens, fixable)
    with pytest.raises(ImproperMergeList) as caught:
        Tokenizer(Source(tokens=tokens, rules=fixable, name="fixable"), properize_improper=False)
    assert "improper merge order" in one_line(caught.value)
    # aaaa... : a rule that must beat other instances of its part's own rule cannot be moved
    powers = [b"a" * n for n in range(1, 7)]
    rules = [(0, 0, 1), (1, 1, 3), (3, 1, 5), (3, 0, 4)]  # aaaaaa before aaaa's rule fires
    rules = [rules[0], rules[2], rules[1], rules[3]]
    with pytest.raises(ImproperMergeList) as caught:
        Tokenizer(Source(tokens=powers, rules=rules, name="powers"))
    assert "its proper reordering differs from the original" in one_line(caught.value)


def test_native_rejects_bad_rules_with_one_line() -> None:
    core = _native.native()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        core.Vocabulary([b"a"], pack([(0, 0, 5)]))
    with pytest.raises(ValueError, match="not its two parts joined"):
        core.Vocabulary([b"a", b"b", b"ba"], pack([(0, 1, 2)]))
    with pytest.raises(ValueError, match="uint32"):
        core.Vocabulary([b"a"], b"\x00" * 5)
    with pytest.raises(TypeError, match="not bytes"):
        core.Vocabulary(["a"], b"")


def test_missing_native_core_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_core(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.endswith("_incbpe") or (args and args[2] and "_incbpe" in args[2]):
            raise ImportError("No module named '_incbpe'")
        return real_import(name, *args, **kwargs)

    _native.native.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_core)
    try:
        with pytest.raises(_native.NativeCoreMissing) as caught:
            _native.native()
        assert "install g++" in one_line(caught.value)
        assert oracle.bpe(b"ab", [b"a", b"b", b"ab"], [(0, 1, 2)]) == [2]  # oracle still works
    finally:
        monkeypatch.undo()
        _native.native.cache_clear()
    assert _native.native().Vocabulary


def test_properize_check_probes_every_moved_rule() -> None:
    """552 fixable moved rules (xyy listed before xy, for every ordered pair of 24 letters), then
    the unfixable a-powers case last: the check reaches the 553rd moved rule and refuses (it
    used to probe only the first 200 and accepted a list that encodes `aaaaaaaa` differently)."""
    letters = b"bcdefghijklmnopqrstuvwxy"
    tokens = [bytes([c]) for c in letters] + [b"a"]
    rules: list[tuple[int, int, int]] = []
    for x, y in itertools.permutations(range(len(letters)), 2):
        tokens += [tokens[x] + tokens[y], tokens[x] + tokens[y] * 2]
        rules += [(len(tokens) - 2, y, len(tokens) - 1), (x, y, len(tokens) - 2)]
    assert len(rules) == 2 * 552
    Tokenizer(Source(tokens=list(tokens), rules=list(rules), name="many"))  # all fixable
    power = {1: tokens.index(b"a")} | {n: len(tokens) + n - 2 for n in range(2, 7)}
    tokens += [b"a" * n for n in range(2, 7)]
    unfixable = [(power[1], power[1], power[2]), (power[4], power[2], power[6])]
    unfixable += [(power[2], power[2], power[4]), (power[4], power[1], power[5])]
    with pytest.raises(ImproperMergeList) as caught:
        Tokenizer(Source(tokens=tokens, rules=rules + unfixable, name="many"))
    assert "its proper reordering differs from the original list on the probe" in one_line(
        caught.value
    )
