"""No label in reach of the model: the ids the prompts show are opaque (issue #29 item 3).

Version 2 showed `Document docval-0-0007.`, and `make_document(0, 7, ...)` rebuilt the page
with its answers. Now every id a prompt shows is 12 letters (no digit) from a SHA-256 of the
seed and the index; this test reads each id with several decoders and checks that no guess
rebuilds more items than chance does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from docket.benchmarks.docval.dataset import SHIPPED, load_documents, to_samples
from docket.benchmarks.docval.generate import document_id, make_document
from docket.methods.distill.teacher import teacher_prompt

_ID = re.compile(r"^Document (\S+)\.", re.MULTILINE)


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return load_documents(SHIPPED)


def _prompt_texts(docs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(document id, prompt text) for every prompt a model is shown: both grounding modes and
    the teacher's prompt."""
    texts = []
    for mode in ("vision", "layout_text"):
        for sample in to_samples(docs, mode):
            content = sample.input[0].content  # type: ignore[union-attr]
            text = next(c.text for c in content if c.type == "text")  # type: ignore[union-attr]
            texts.append((str((sample.metadata or {})["doc_id"]), text))
            if mode == "layout_text":
                texts.append(
                    (str((sample.metadata or {})["doc_id"]), teacher_prompt(sample.metadata or {}))
                )
    return texts


def _decoders() -> dict[str, Callable[[str], tuple[int, int] | None]]:
    """Ways to read (seed, index) out of an id, each giving one guess (or none) per id."""

    def digits(shown: str) -> tuple[int, int] | None:
        runs = [int(r) for r in re.findall(r"\d+", shown)]
        return (runs[0], runs[1]) if len(runs) >= 2 else ((0, runs[0]) if runs else None)

    def body(shown: str) -> str:
        return shown.removeprefix("doc-").removeprefix("docval-")

    return {
        "digit runs (v2: docval-SEED-INDEX)": digits,
        "base 36 mod 210": lambda shown: (0, int(re.sub(r"\W", "", body(shown)), 36) % 210),
        "first letter's position": lambda shown: (0, ord(body(shown)[0]) - ord("a")),
        "letter positions summed": lambda shown: (0, sum(ord(c) - 97 for c in body(shown)) % 210),
    }


def _reproduced(decode: Callable[[str], tuple[int, int] | None], docs: list[dict[str, Any]]) -> int:
    """How many documents (the shipped split's, in order: seed 0, index = position) a decoder
    rebuilds. A guess other than (0, position) draws another document's random stream, so
    only those guesses are rendered and compared."""
    hits = 0
    for position, doc in enumerate(docs):
        if decode(doc["doc_id"]) == (0, position):
            rebuilt, _ = make_document(0, position, doc["difficulty"], 5)
            hits += rebuilt["words"] == doc["words"]
    return hits


def test_every_prompt_shows_only_the_opaque_document_id(docs: list[dict[str, Any]]) -> None:
    texts = _prompt_texts(docs)
    assert len(texts) == 3 * 1050
    for doc_id, text in texts:
        assert _ID.findall(text) == [doc_id]
        assert re.fullmatch(r"doc-[a-z]{12}", doc_id)
        assert "docval-" not in text


def test_no_decoded_id_drives_the_generator_to_the_item(docs: list[dict[str, Any]]) -> None:
    assert [document_id(0, i) for i in range(210)] == [d["doc_id"] for d in docs]
    assert len({d["doc_id"] for d in docs}) == 210
    # each decoder's guesses rebuild at most what chance gives (1 in 210 per guess)
    for name, decode in _decoders().items():
        assert _reproduced(decode, docs) <= 2, name


def test_the_decoders_do_rebuild_items_from_version_2_ids(docs: list[dict[str, Any]]) -> None:
    """The test can fail: with v2's `docval-0-NNNN` ids the first decoder rebuilds every item."""
    old = [dict(d, doc_id=f"docval-0-{i:04d}") for i, d in enumerate(docs[:10])]
    assert _reproduced(_decoders()["digit runs (v2: docval-SEED-INDEX)"], old) == 10
