"""Document consistency over the whole shipped split, and the simulated word-level OCR."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from docket.benchmarks.docval.consistency import check_document
from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.benchmarks.docval.layouts import format_date, money, parse_date, parse_money
from docket.benchmarks.docval.ocr import reading_order, simulate_ocr
from docket.benchmarks.docval.scorer import map_fraction
from docket.methods.distill.boxes import iou


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return load_documents(SHIPPED)


def test_every_shipped_document_is_consistent(docs: list[dict[str, Any]]) -> None:
    problems = [p for doc in docs for p in check_document(doc)]
    assert problems == []


def _first(docs: list[dict[str, Any]], doc_type: str) -> dict[str, Any]:
    return copy.deepcopy(next(d for d in docs if d["doc_type"] == doc_type))


def _reprint(doc: dict[str, Any], fact: str, text: str) -> None:
    """Change a fact and the segment that prints it, as a generator bug would."""
    old = doc["facts"][fact]
    for segment in doc["segments"]:
        if segment[5] == old:
            segment[5] = text
    doc["facts"][fact] = text


@pytest.mark.parametrize(
    ("doc_type", "fact", "change", "problem"),
    [
        ("invoice", "due_date", "issue_date", "days after issue"),  # due on the issue date
        ("invoice", "total", "subtotal", "!= subtotal"),
        ("receipt", "tax", "total", "% of"),
        ("form", "signed", "dob", "years old"),
        ("letter", "meeting_date", "letter_date", "is not after the letter"),
        ("letter", "recipient", "signer", "signed by its recipient"),
        ("form", "contact_name", "applicant_name", "their own emergency contact"),
    ],
)
def test_the_validator_catches_inconsistent_documents(
    docs: list[dict[str, Any]], doc_type: str, fact: str, change: str, problem: str
) -> None:
    doc = _first(docs, doc_type)
    _reprint(doc, fact, doc["facts"][change])
    found = check_document(doc)
    assert any(problem in p for p in found), found


def test_the_validator_catches_unprinted_facts_and_wrong_gold(docs: list[dict[str, Any]]) -> None:
    doc = _first(docs, "table")
    doc["facts"]["totals"][0] = "1"
    doc["questions"][0]["bbox"][0] += 1
    doc["questions"][1]["answers"][0] += "!"
    found = check_document(doc)
    assert any("fact '1' is not printed" in p for p in found)
    assert any("Q1 total 1 != column sum" in p for p in found)
    assert any("is not the union of its words' boxes" in p for p in found)
    assert any("is not the printed" in p for p in found)
    assert check_document({"doc_id": "x", "doc_type": "memo"}) == [
        "x: no facts to check for doc_type 'memo'"
    ]


def test_dates_and_money_round_trip() -> None:
    from datetime import date

    day = date(2021, 3, 4)
    printed = [format_date(day, style) for style in range(4)]
    assert printed == ["2021-03-04", "04/03/2021", "March 4, 2021", "4 Mar 2021"]
    assert {parse_date(p) for p in printed} == {day}
    assert parse_date("31/02/2021") is None
    assert money(123456, "EUR ") == "EUR 1,234.56" and money(7, "$") == "$0.07"
    assert parse_money("EUR 1,234.56", "EUR ") == 123456 and parse_money("1.2", "$") is None


# --- simulated OCR ----------------------------------------------------------------------------

WORDS: list[list[Any]] = [
    ["Total", 10, 10, 50, 22, 0],
    ["$1,234.50", 56, 10, 120, 22, 1],
    ["Invoice", 10, 40, 70, 52, 2],
    ["INV-2041", 300, 40, 370, 52, 3],
]


def test_ocr_without_merges_or_splits_is_every_word_within_its_jitter() -> None:
    tokens = simulate_ocr(WORDS, 400, 100, random.Random(0), merge_rate=0, split_rate=0)
    assert [t[0] for t in tokens] == ["Total", "$1,234.50", "Invoice", "INV-2041"]
    for token, word in zip(tokens, WORDS, strict=True):
        # 12 px high text: j = max(1, round(0.12 * 12)) = 1 px on every side
        assert all(abs(a - b) <= 1 for a, b in zip(token[1:5], word[1:5], strict=True))
    jittered = [t for t, w in zip(tokens, WORDS, strict=True) if list(t[1:5]) != w[1:5]]
    assert jittered  # boxes do move


def test_ocr_merges_close_words_on_a_line_and_splits_long_words() -> None:
    merged = simulate_ocr(WORDS, 400, 100, random.Random(0), merge_rate=1, split_rate=0)
    # the 6 px gap merges; "Invoice" and "INV-2041" are 230 px apart and stay two tokens
    assert [t[0] for t in merged] == ["Total $1,234.50", "Invoice", "INV-2041"]
    split = simulate_ocr(WORDS, 400, 100, random.Random(0), merge_rate=0, split_rate=1)
    texts = [t[0] for t in split]
    assert len(texts) == 8 and [a + b for a, b in zip(texts[::2], texts[1::2], strict=True)] == [
        w[0] for w in WORDS
    ]
    # cut after the first inner punctuation mark, else at an inner position
    assert texts[2:4] == ["$1,", "234.50"] and texts[6:] == ["INV-", "2041"]
    assert all(len(t) >= 2 for t in texts[:2] + texts[4:6])
    # "INV-" keeps 4 of 8 characters: half of the 70 px box, +/- 1 px of jitter
    inv = split[6]
    assert abs(inv[1] - 300) <= 1 and abs(inv[3] - 335) <= 1


def test_reading_order_is_lines_top_to_bottom_then_left_to_right() -> None:
    shuffled = [
        ("b", 60, 11, 90, 21),
        ("c", 5, 40, 30, 50),
        ("a", 10, 10, 40, 20),
    ]
    assert [t[0] for t in reading_order(shuffled)] == ["a", "b", "c"]


def test_one_token_is_not_an_answer_box(docs: list[dict[str, Any]]) -> None:
    """Picking the single best token cannot reach the answer box; the union of tokens can."""
    best_single: list[float] = []
    union_hits = 0
    for doc in docs:
        for q in doc["questions"]:
            overlaps = [iou(t[1:5], q["bbox"]) for t in doc["ocr"]]
            best_single.append(max(overlaps))
            inside = [t[1:5] for t, o in zip(doc["ocr"], overlaps, strict=True) if o > 0]
            union = [min(b[0] for b in inside), min(b[1] for b in inside)]
            union += [max(b[2] for b in inside), max(b[3] for b in inside)]
            union_hits += iou(union, q["bbox"]) >= 0.5
    n = len(best_single)
    # measured on the shipped split (the layout_text ceiling the README describes)
    assert round(sum(best_single) / n, 3) == 0.634
    assert round(sum(map_fraction(b) for b in best_single) / n, 3) == 0.381
    assert round(sum(b >= 0.9 for b in best_single) / n, 3) == 0.079
    # 7 answers share an OCR token with a long label (a merge such as "Purchased: 4 Mar 2021")
    assert union_hits == 1043 and n == 1050
