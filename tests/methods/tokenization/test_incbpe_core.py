"""The native core against the pure-Python oracle: exhaustive tiny vocabularies, random ones,
every prefix, eager output, the O(log^2 t) step bound and a bounded fuzz of bad input."""

from __future__ import annotations

import itertools
import math
import random
import time
from typing import Any

from docket.methods.tokenization import oracle
from docket.methods.tokenization._native import native
from docket.methods.tokenization.properize import ImproperMergeList, is_proper, pack, properize
from docket.methods.tokenization.sources import Source
from docket.methods.tokenization.tokenizer import Tokenizer

Rule = tuple[int, int, int]
#: a, aa, ..., a^5 and every rule a^i + a^j -> a^(i+j) within them.
POWERS = [b"a" * n for n in range(1, 6)]
POWER_RULES = [(i - 1, j - 1, i + j - 1) for i in range(1, 5) for j in range(1, 5) if i + j <= 5]


def check_stream(vocab: Any, tokens: list[bytes], rules: list[Rule], text: bytes) -> None:
    """Every prefix, the eager output and byte-by-byte feeding against the oracle."""
    core = native()
    expected = oracle.bpe(text, tokens, rules)
    assert list(vocab.encode(text)) == expected
    whole = core.Stream(vocab)
    whole.feed(text)
    for i in range(len(text) + 1):
        assert whole.tokens_of_prefix(i) == oracle.bpe(text[:i], tokens, rules), (text, i)
    one = core.Stream(vocab)
    emitted: list[int] = []
    for i in range(len(text)):
        one.feed(text[i : i + 1])
        emitted += one.emit()
        # never retracted: what was emitted starts every later tokenization
        assert oracle.bpe(text[: i + 1], tokens, rules)[: len(emitted)] == emitted
    assert emitted + one.flush() == expected
    assert whole.emit() + whole.flush() == expected


def test_exhaustive_rule_subsets_over_powers_of_a() -> None:
    """All 1024 subsets of the rules over {a, ..., a^5}, in two orders each, on a^0..a^13 and
    with an unknown byte: proper lists match the oracle everywhere; improper ones are either
    reordered exactly or refused with one line."""
    core = native()
    proper = improper = refused = 0
    texts = [b"a" * 13, b"aaaabaaaaaaa"]
    for size in range(len(POWER_RULES) + 1):
        for subset in itertools.combinations(POWER_RULES, size):
            for order in (list(subset), sorted(subset, key=lambda r: -r[2])):
                try:
                    vocab = core.Vocabulary(POWERS, pack(order))
                except core.ImproperDictionary:
                    improper += 1
                    source = Source(tokens=POWERS, rules=order, name="powers")
                    try:
                        tok = Tokenizer(source)
                    except ImproperMergeList as error:
                        assert "\n" not in str(error) and "improper" in str(error)
                        refused += 1
                        continue
                    for text in texts:
                        assert tok.encode_bytes(text) == oracle.bpe(text, POWERS, order)
                    continue
                proper += 1
                for text in texts:
                    check_stream(vocab, POWERS, order, text)
    assert proper > 1000 and improper > 50
    print(f"proper {proper}, improper {improper} (refused {refused})")


def random_vocabulary(
    rng: random.Random, alphabet: bytes, merges: int
) -> tuple[list[bytes], list[Rule]]:
    tokens = [bytes([c]) for c in alphabet]
    index = {t: i for i, t in enumerate(tokens)}
    rules: list[Rule] = []
    seen = set()
    for _ in range(merges * 4):
        if len(rules) >= merges:
            break
        left, right = rng.choice(tokens), rng.choice(tokens)
        if len(left + right) > 10 or (index[left], index[right]) in seen:
            continue
        if left + right not in index:
            index[left + right] = len(tokens)
            tokens.append(left + right)
        seen.add((index[left], index[right]))
        rules.append((index[left], index[right], index[left + right]))
    return tokens, rules


def test_random_vocabularies_match_the_oracle_on_every_prefix() -> None:
    core = native()
    rng = random.Random(7)
    checked = 0
    for _ in range(300):
        alphabet = b"abc"[: rng.randint(1, 3)]
        tokens, rules = random_vocabulary(rng, alphabet, rng.randint(1, 14))
        if not is_proper(tokens, rules):
            rules = properize(tokens, rules)  # the reordered list is checked as it stands
        vocab = core.Vocabulary(tokens, pack(rules))
        for _ in range(4):
            text = bytes(rng.choice(alphabet + b"x") for _ in range(rng.randint(0, 18)))
            check_stream(vocab, tokens, rules, text)
            checked += 1
    assert checked == 1200


def test_chunked_feeding_equals_byte_by_byte(trained_whole: tuple[object, Tokenizer]) -> None:
    _, tok = trained_whole
    text = ("aaaa bbb  ==== ---- " * 40 + "def f(x):\n    return x\n" * 20).encode()
    rng = random.Random(1)
    one, chunked = tok.incremental(), tok.incremental()
    out_one: list[int] = []
    out_chunked: list[int] = []
    for b in text:
        one.feed(bytes([b]))
        out_one += one.emit()
    i = 0
    while i < len(text):
        j = i + rng.randint(1, 50)
        chunked.feed(text[i:j])
        out_chunked += chunked.emit()
        i = j
    final = tok.encode_bytes(text)
    assert out_one + one.flush() == final == out_chunked + chunked.flush()
    assert 0 < one.max_pending_bytes <= 2 * tok.info()["max_token_bytes"]


def test_centroid_search_is_logarithmic(trained_whole: tuple[object, Tokenizer]) -> None:
    """Each byte costs at most ~log2(t) + 1 centroid levels (t = longest token)."""
    _, tok = trained_whole
    bound = math.ceil(math.log2(tok.info()["max_token_bytes"] + 1)) + 1
    stream = native().Stream(tok.vocab, False)
    tok.vocab.take_centroid_steps()
    worst = 0
    text = ("a" * 300 + " " * 300 + "ab" * 150 + "=-" * 100 + "0" * 200).encode()
    for b in text:
        stream.feed(bytes([b]))
        worst = max(worst, tok.vocab.take_centroid_steps())
    assert 0 < worst <= bound


def test_pathological_inputs_match_the_reference(trained_whole: tuple[Any, Tokenizer]) -> None:
    hf, tok = trained_whole
    for text in ("a" * 5000, " " * 5000, "ab" * 2500, "aaab= " * 800):
        assert tok.encode_bytes(text.encode()) == hf.encode(text).ids


def test_long_pieces_walked_ahead_match_the_byte_stream() -> None:
    """Pieces of 16 KB and more run the automaton first as eight overlapped walks, each
    started a longest-token length before its segment: equal to the byte-at-a-time stream and
    the heap reference across every walk boundary, with unknown bytes and long tokens."""
    core = native()
    rng = random.Random(5)
    for trial in range(6):
        tokens, rules = random_vocabulary(rng, b"abc", rng.randint(5, 40))
        if trial % 2:  # a long token (up to 40 bytes) stretches the walks' warm-up
            for _ in range(3):
                tokens.append(tokens[rules[-1][2]] + tokens[rules[-1][2]])
                rules.append((rules[-1][2], rules[-1][2], len(tokens) - 1))
        if not is_proper(tokens, rules):
            rules = properize(tokens, rules)
        vocab = core.Vocabulary(tokens, pack(rules))
        reference = core.Reference(tokens, pack(rules))
        size = 16_384 + rng.randint(0, 9_000)
        text = bytes(rng.choice(b"abcab" if trial < 4 else b"aaaax") for _ in range(size))
        stream = core.Stream(vocab, False)
        stream.feed(text)
        expected = stream.tokens_of_prefix(len(text))
        assert list(vocab.encode(text)) == expected
        assert vocab.count(text) == len(expected)
        if b"x" not in text:
            assert list(reference.encode(text)) == expected


def test_fuzz_random_bytes_and_vocabularies_never_crash() -> None:
    """Bounded-time fuzz: random token strings (repeats, empties), random and invalid rule
    ids, random input bytes. Bad rules are one ValueError; the rest encodes like the oracle."""
    core = native()
    rng = random.Random(11)
    deadline = time.monotonic() + 4.0
    runs = errors = valid = 0
    while time.monotonic() < deadline:
        size = rng.randint(0, 12)
        tokens = [
            bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randint(0, 3))) for _ in range(size)
        ]
        rules = [
            (rng.randint(-1, size), rng.randint(0, size), rng.randint(0, size + 1))
            for _ in range(rng.randint(0, 10))
        ]
        for _ in range(rng.randint(0, 6)):  # and some well-formed ones
            if len(tokens) >= 2:
                a, b = rng.randrange(len(tokens)), rng.randrange(len(tokens))
                tokens.append(tokens[a] + tokens[b])
                rules.append((a, b, len(tokens) - 1))
        data = bytes(rng.choice(b"ab\x00\xff\x01") for _ in range(rng.randint(0, 40)))
        runs += 1
        try:
            packed = pack([(a % 2**32, b, c) for a, b, c in rules])
            vocab = core.Vocabulary(tokens, packed)
        except ValueError as error:
            errors += 1
            assert "\n" not in str(error)
            continue
        stream = core.Stream(vocab)
        stream.feed(data)
        ids = stream.emit() + stream.flush()
        assert ids == list(vocab.encode(data)) == oracle.bpe(data, tokens, rules)
        assert len(ids) <= len(data)
        valid += 1
    assert runs > 100 and errors > 0 and valid > 20
