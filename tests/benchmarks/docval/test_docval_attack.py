"""The surface attackers of `attack.py` against the shipped split (layout_text).

The tagger is trained on a freshly generated split (another seed, never the test split) and
scored on a subsample of the shipped test split; the keyword rule needs no training. Their
scores are the chance rows of the README's results table.
"""

from __future__ import annotations

from typing import Any

import pytest

from docket.benchmarks.docval.attack import (
    SurfaceTagger,
    evaluate,
    keyword_rule,
    parse_prompt,
    template,
)
from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.benchmarks.docval.generate import DIFFICULTY, make_document

TRAIN_SEED = 7_654_321
TRAIN_DOCS = 40
TEST_DOCS = 30  # the first 30 shipped documents: 150 questions, six of each (type, difficulty)


@pytest.fixture(scope="module")
def test_docs() -> list[dict[str, Any]]:
    return load_documents(SHIPPED)[:TEST_DOCS]


@pytest.fixture(scope="module")
def tagger() -> SurfaceTagger:
    levels = list(DIFFICULTY)
    train = [make_document(TRAIN_SEED, i, levels[(i // 5) % 3], 5)[0] for i in range(TRAIN_DOCS)]
    return SurfaceTagger().fit(train)


@pytest.fixture(scope="module")
def scores(tagger: SurfaceTagger, test_docs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {
        "tagger": evaluate(tagger, test_docs),
        "keyword": evaluate(keyword_rule, test_docs),
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


def test_attackers_score_what_the_readme_states(scores: dict[str, dict[str, float]]) -> None:
    assert scores["keyword"]["n"] == scores["tagger"]["n"] == 5 * TEST_DOCS
    assert scores["keyword"]["anls"] == pytest.approx(0.286, abs=0.001)
    assert scores["keyword"]["map"] == pytest.approx(0.134, abs=0.001)
    assert scores["tagger"]["anls"] == pytest.approx(0.796, abs=0.05)
    assert scores["tagger"]["map"] == pytest.approx(0.579, abs=0.05)
