"""The surface attackers of `attack.py` against the shipped split (layout_text).

The tagger is trained on a freshly generated split in the `train` wording (another seed, never
the test split) and scored on a subsample of the shipped test split; the keyword rule needs no
training; the constant is the most frequent training answer with the median training box. The
README's attacker table (`results/blind_attackers.json`) gives the tagger and the keyword rule
on the whole split.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from docket.benchmarks.docval.attack import (
    SurfaceTagger,
    constant_attacker,
    evaluate,
    keyword_rule,
    parse_prompt,
    template,
)
from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.benchmarks.docval.generate import DIFFICULTY, make_document
from docket.benchmarks.docval.wording import DISTRACTORS, LABELS, QUESTIONS, question_templates

TRAIN_SEED = 7_654_321
TRAIN_DOCS = 40
TEST_DOCS = 30  # the first 30 shipped documents: 150 questions, six of each (type, difficulty)
#: The bound: the tagger's ANLS over the keyword rule's (chance).
MAX_GAP = 0.05


def _train(family: str) -> list[dict[str, Any]]:
    levels = list(DIFFICULTY)
    return [
        make_document(TRAIN_SEED, i, levels[(i // 5) % 3], 5, family)[0] for i in range(TRAIN_DOCS)
    ]


@pytest.fixture(scope="module")
def test_docs() -> list[dict[str, Any]]:
    return load_documents(SHIPPED)[:TEST_DOCS]


@pytest.fixture(scope="module")
def scores(test_docs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    train = _train("train")
    return {
        "tagger": evaluate(SurfaceTagger().fit(train), test_docs),
        "keyword": evaluate(keyword_rule, test_docs),
        "constant": evaluate(constant_attacker(train), test_docs),
    }


def test_prompt_parsing_and_templates() -> None:
    text = (
        "Word-level OCR tokens of the page\nCoordinates are pixels of the page image (800 x 600)"
        '\nToken #0: [10, 10, 50, 20] -> "Total"\nToken #1: [60, 11, 90, 21] -> "$5.00"\n'
        'Token #2: [10, 40, 50, 50] -> "Tax"\n\nQuestion: What is the Q3 value for North?'
    )
    prompt = parse_prompt(text)
    assert (prompt.width, prompt.height) == (800.0, 600.0)
    assert [(t.text, t.line, t.rank) for t in prompt.tokens] == [
        ("Total", 0, 0),
        ("$5.00", 0, 1),
        ("Tax", 1, 0),
    ]
    assert template(prompt.question) == "what is the <E> value for <E>"
    assert keyword_rule(text.replace("Q3 value for North", "total")) == (
        "$5.00",
        [60.0, 11.0, 90.0, 21.0],
    )


def test_train_and_test_wording_share_no_label_and_no_template() -> None:
    for table in (LABELS, QUESTIONS, DISTRACTORS):
        for key, (train, test) in table.items():
            assert train and test and not set(train) & set(test), key


def test_shipped_questions_use_only_the_test_wording(test_docs: list[dict[str, Any]]) -> None:
    def pattern(text: str) -> re.Pattern[str]:
        return re.compile(re.sub(r"\\\{\w+\\\}", ".+", re.escape(text)) + "$")

    train = [pattern(t) for pair in QUESTIONS.values() for t in pair[0]]
    test = [pattern(t) for key in QUESTIONS for t in question_templates(*key)]
    questions = [q["question"] for d in load_documents(SHIPPED) for q in d["questions"]]
    assert all(any(p.match(q) for p in test) for q in questions)
    assert not any(p.match(q) for p in train for q in questions)


def test_the_learned_tagger_stays_within_the_bound_of_chance(
    scores: dict[str, dict[str, float]],
) -> None:
    assert scores["keyword"]["n"] == scores["tagger"]["n"] == 5 * TEST_DOCS
    # chance on this subsample: the keyword rule (no training) and the best constant
    assert scores["keyword"]["anls"] == pytest.approx(0.088, abs=0.001)
    assert scores["keyword"]["map"] == pytest.approx(0.027, abs=0.001)
    assert scores["constant"]["anls"] == pytest.approx(0.007, abs=0.001)
    assert scores["constant"]["map"] == 0.0
    assert scores["tagger"]["anls"] <= scores["keyword"]["anls"] + MAX_GAP
    assert scores["tagger"]["map"] <= scores["keyword"]["map"] + MAX_GAP


def test_the_same_tagger_trained_on_the_test_wording_reads_the_split(
    test_docs: list[dict[str, Any]], scores: dict[str, dict[str, float]]
) -> None:
    """The attacker is not weak: with the (public) test wording it solves most questions, so
    the bound above comes from the wording split (the README's first limit)."""
    informed = evaluate(SurfaceTagger().fit(_train("test")), test_docs)
    # 3-B: 0.393 here (3-A: >= 0.5; four openers give each subject four templates to learn
    # from 40 documents), over twice the train-wording tagger and the keyword rule
    assert informed["anls"] >= 0.3 > scores["tagger"]["anls"] + MAX_GAP
