"""No label in reach of the model: the only id a context_qa prompt shows is opaque (issue #29
item 3).

Version 1 showed `[context: ctx-007]`, the context's index in `generate(40, EVAL_SEED)`, so a
model with the repository could rebuild the context, and the answer, from the id. Since 2-A every
context id is 12 hex digits of a SHA-256 of the seed and the index (`dataset.context_id`). These
tests read each shown id with several decoders (digit runs, the hex value, both modulo the split
size), use every decoded number as a generator seed and as an index, and count what that rebuilds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from docket.benchmarks.context_qa.context_qa import samples
from docket.benchmarks.context_qa.dataset import (
    EVAL_CONTEXTS,
    EVAL_SEED,
    context_id,
    generate,
    generate_split,
    load,
)
from docket.benchmarks.context_qa.prompts import PROMPTS
from docket.core.splits import secret_seed

#: A token that looks like an id: letters, digits and dashes with at least one digit and dash.
_ID_LIKE = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*-)[A-Za-z0-9][\w-]*\b")


def _decoders() -> dict[str, Callable[[str], list[int]]]:
    """Ways to read numbers out of a shown id (each gives every number it can read)."""

    def runs(shown: str) -> list[int]:
        return [int(r) for r in re.findall(r"\d+", shown)]

    def hex_value(shown: str) -> list[int]:
        tail = shown.rsplit("-", 1)[-1]
        return [int(tail, 16)] if re.fullmatch(r"[0-9a-fA-F]+", tail) else []

    return {
        "digit runs (v1: ctx-INDEX)": runs,
        "hex value": hex_value,
        "digit runs mod split size": lambda s: [n % EVAL_CONTEXTS for n in runs(s)],
        "hex value mod split size": lambda s: [n % EVAL_CONTEXTS for n in hex_value(s)],
    }


def _as_index(decode: Callable[[str], list[int]], ids: list[str], seed: int) -> int:
    """Items whose id, decoded, is their index in `generate(EVAL_CONTEXTS, seed)`: a decoded
    index other than the true one draws another context, so only those guesses count."""
    return sum(index in decode(shown) for index, shown in enumerate(ids))


def _as_seed(decode: Callable[[str], list[int]], ids: list[str], texts: list[str]) -> int:
    """Items rebuilt by `generate(EVAL_CONTEXTS, n)` for a number n decoded from their id."""
    hits = 0
    for shown, text in zip(ids, texts, strict=True):
        drawn = {c.text for n in decode(shown) for c in generate(EVAL_CONTEXTS, n)[0]}
        hits += text in drawn
    return hits


def test_every_prompt_shows_only_the_opaque_context_id() -> None:
    contexts, questions = load()
    ids = list(contexts)
    assert ids == [context_id(EVAL_SEED, i) for i in range(EVAL_CONTEXTS)]
    assert all(re.fullmatch(r"ctx-[0-9a-f]{12}", i) for i in ids) and len(set(ids)) == 40
    question_ids = {q.id for q in questions}
    for mode in PROMPTS:
        for sample in samples(mode):
            prompt = str(sample.input)
            shown = _ID_LIKE.findall(prompt)
            expected = [(sample.metadata or {})["context_id"]] if mode == "reference" else []
            assert shown == expected, (mode, shown)
            digits = "".join(re.findall(r"\d", prompt))
            assert digits == "".join(re.findall(r"\d", "".join(expected)))  # no other number
            assert not any(q in prompt for q in question_ids)  # sample ids stay in the log


def test_no_decoded_id_rebuilds_a_shipped_context() -> None:
    contexts, _ = load()
    ids, texts = list(contexts), list(contexts.values())
    assert [c.text for c in generate(EVAL_CONTEXTS, EVAL_SEED)[0]] == texts  # the shipped order
    for name, decode in _decoders().items():
        assert _as_seed(decode, ids, texts) == 0, name
        hits = _as_index(decode, ids, EVAL_SEED)
        if "mod" in name:  # any id modulo 40 matches its index 1 time in 40: chance, 1 expected
            assert hits <= 2, name
        else:
            assert hits == 0, name


def test_the_decoders_rebuild_every_context_from_version_1_ids() -> None:
    """The test can fail: with v1's `ctx-NNN` ids the index decoder rebuilds all 40 contexts."""
    old = [f"ctx-{i:03d}" for i in range(EVAL_CONTEXTS)]
    assert _as_index(_decoders()["digit runs (v1: ctx-INDEX)"], old, EVAL_SEED) == 40
    seeds = [f"ctx-{EVAL_SEED}-{i:03d}" for i in range(EVAL_CONTEXTS)]  # a seed in the id
    texts = [c.text for c in generate(EVAL_CONTEXTS, EVAL_SEED)[0]]
    assert _as_seed(_decoders()["digit runs (v1: ctx-INDEX)"], seeds, texts) == 40


@pytest.mark.parametrize("secret", ["s3cret", "another private seed"])
def test_no_decoded_id_rebuilds_a_private_split(tmp_path: Path, secret: str) -> None:
    seed = secret_seed(secret)
    generate_split(seed, tmp_path)
    contexts, _ = load(tmp_path)
    ids, texts = list(contexts), list(contexts.values())
    assert ids == [context_id(seed, i) for i in range(EVAL_CONTEXTS)]
    for name, decode in _decoders().items():  # every number any id gives, and the shipped seed
        for guess in (EVAL_SEED, *{n for shown in ids for n in decode(shown)}):
            drawn = {c.text for c in generate(EVAL_CONTEXTS, guess)[0]}
            assert not drawn & set(texts), (name, guess)
