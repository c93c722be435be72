"""DocVAL's blind attackers (`blind.py`) and the chance row generated from their results file.

The README's attacker table is `chance.render` of `results/blind_attackers.json` (written by
`benchmarks/docval/scripts/blind_attackers.py` on the whole shipped split and a fresh split).
Here every blind attacker is trained on a small train-wording split and scored on the first 30
shipped documents; it must stay within `MARGIN` of the committed chance row.
"""

from __future__ import annotations

from typing import Any

import pytest

from docket.benchmarks.docval.attack import evaluate, parse_prompt
from docket.benchmarks.docval.blind import LayoutTagger, NeighbourBox, first_word, skeleton
from docket.benchmarks.docval.chance import (
    ATTACKERS,
    TABLE,
    chance,
    field_candidates,
    field_prior,
    render,
    split,
)
from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.benchmarks.docval.prompts import question_prompt
from docket.benchmarks.docval.wording import QUESTIONS, TEST_OPENERS, question_templates

TRAIN_SEED = 7_654_321
TRAIN_DOCS = 40
TEST_DOCS = 30
#: How far above the committed chance row (whole split) an attacker may score on the
#: 150-question subsample: about two clustered standard errors of a mean near 0.1 there
#: (documents are the clusters: 30 of them, per-document sd of the mean score about 0.1).
MARGIN = 0.05


@pytest.fixture(scope="module")
def train() -> list[dict[str, Any]]:
    return split(TRAIN_SEED, TRAIN_DOCS, "train")


@pytest.fixture(scope="module")
def test_docs() -> list[dict[str, Any]]:
    return load_documents(SHIPPED)[:TEST_DOCS]


def test_the_readme_table_is_the_results_file() -> None:
    results = TABLE.load()
    assert TABLE.held() == render(results)
    name, row = chance(results)
    blind = [k for k, (_, _, is_blind) in ATTACKERS.items() if is_blind]
    shipped = results["splits"]["shipped"]
    assert row["map"] == max(shipped[k]["map"] for k in blind)
    assert f"{ATTACKERS[name][0]} (**chance row**)" in render(results)


def test_the_layout_tagger_never_reads_the_question(
    train: list[dict[str, Any]], test_docs: list[dict[str, Any]]
) -> None:
    tagger = LayoutTagger("none").fit(train[:10])
    doc = test_docs[0]
    replies = [tagger(question_prompt(doc, q, "layout_text")) for q in ("Who?", "When is it?", "")]
    assert replies[0] == replies[1] == replies[2]


def test_the_first_word_tagger_reads_only_the_first_word(train: list[dict[str, Any]]) -> None:
    tagger = LayoutTagger("first_word").fit(train[:10])
    doc = train[0]
    asked = [question_prompt(doc, q, "layout_text") for q in ("When is it", "When was that?")]
    assert tagger(asked[0]) == tagger(asked[1])
    assert first_word("When was that?") == "when" and first_word("") == ""


def test_the_skeleton_keeps_function_words_only() -> None:
    assert skeleton("What did the customer pay altogether?") == "what did the"


def test_test_questions_open_apart_from_their_field(test_docs: list[dict[str, Any]]) -> None:
    openers = {o.split()[0] for o in TEST_OPENERS}
    for doc in test_docs:
        for q in doc["questions"]:
            templates = question_templates(doc["doc_type"], q["field"])
            assert {t.split()[0] for t in templates} == openers
    assert all(len(pair[1]) == 2 for pair in QUESTIONS.values())


def test_the_field_prior_scores_the_gold_field_exactly() -> None:
    # training offers one field per document type (each type's last candidate), and every
    # scored question asks that field: the prior answers it exactly (ANLS 1, mAP 1); asked
    # another field (the first), it scores that field against the last one's answer
    candidates = field_candidates(5, 5, "test")
    train = [(doc_type, fields[-1:]) for doc_type, fields in candidates]
    docs = split(5, 5, "test")
    same = [{**d, "questions": c[-1:]} for d, (_, c) in zip(docs, candidates, strict=True)]
    assert field_prior(train, same, 5) == {"anls": 1.0, "map": 1.0, "n": 5}
    other = [{**d, "questions": c[:1]} for d, (_, c) in zip(docs, candidates, strict=True)]
    assert field_prior(train, other, 5)["map"] == 0.0


def test_the_neighbour_box_copies_a_planted_constant_box(train: list[dict[str, Any]]) -> None:
    """Control: a planted answer (each page's first token) is found from the nearest page."""
    planted = []
    for doc in train[:10]:
        first = parse_prompt(question_prompt(doc, "x", "layout_text")).tokens[0]
        box = list(first.box)
        planted.append(
            {
                **doc,
                "questions": [
                    {**q, "bbox": box, "answers": [first.text]} for q in doc["questions"]
                ],
            }
        )
    scored = evaluate(NeighbourBox(k=1).fit(planted), planted)  # its own page is nearest
    assert scored["anls"] == 1.0


def test_blind_attackers_stay_near_the_chance_row(
    train: list[dict[str, Any]], test_docs: list[dict[str, Any]]
) -> None:
    _, row = chance(TABLE.load())
    for attacker in (LayoutTagger("none"), LayoutTagger("first_word"), NeighbourBox()):
        scored = evaluate(attacker.fit(train), test_docs)
        assert scored["n"] == 5 * TEST_DOCS
        assert scored["map"] <= row["map"] + MARGIN, (attacker, scored, row)
        assert scored["anls"] <= row["anls"] + MARGIN, (attacker, scored, row)
