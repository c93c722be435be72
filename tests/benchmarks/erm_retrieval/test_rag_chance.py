"""erm_rag's chance row is the strongest attacker that never reads a passage, measured (#53 item 3).

2-A shipped every feedback query's answer, and the learned attacker fitted on them answered 0.229
of the held-out questions (0.254 for `erm_reader` behind the static index); 2-B ships none."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.erm_retrieval.dataset import BeirData, Query, load_beir
from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag
from docket.benchmarks.erm_retrieval.rag_attacks import (
    YEARS,
    QuestionWords,
    Row,
    accuracy,
    attack_rows,
    first_year,
    reader_accuracy,
    uniform_expected,
)
from tests.benchmarks.scripts import readme_block_of_results


def _asked(text: str, year: str = "") -> Query:
    return Query(f"q-{text}", text, {"d": 1}, (year,) if year else ())


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return attack_rows()


def test_blind_attackers_on_the_shipped_questions(rows: list[Row]) -> None:
    # 2 of the 240 held-out questions are about a document founded in 1900, 1 in the fresh
    # corpora's most frequent year
    assert rows == [
        Row("constant_1900", 2 / 240),
        Row("uniform_expected", 0.005485),
        Row("fresh_majority", 1 / 240),
        Row("fresh_words", 0.0),
    ]


def test_the_readme_table_is_the_committed_results(rows: list[Row]) -> None:
    results, rendered = readme_block_of_results("benchmarks/erm_retrieval/scripts/rag_chance.py")
    assert rendered
    assert results["attackers"] == [{"name": r.name, "accuracy": r.accuracy} for r in rows]
    data = load_beir()
    assert results["readers"] == [
        {"name": name, "accuracy": reader_accuracy(data, name)}
        for name in ("oracle", "erm", "static")
    ]
    assert results["readers"][0]["accuracy"] == 1.0


def test_the_uniform_year_expectation() -> None:
    queries = [_asked("a", "1820"), _asked("b", "2015"), _asked("c", "1700")]
    queries.append(Query("q-d", "d", {"d": 1}, ("1820", "1821")))
    assert len(YEARS) == 196
    assert uniform_expected(queries) == pytest.approx((1 + 1 + 0 + 2) / 196 / 4, abs=1e-15)


def test_the_learned_attacker_recalls_a_year_through_the_thesaurus() -> None:
    """`bees` and `honey` both map to apiculture, `stars` and `telescope` to astronomy: a
    paraphrase in other lay words gets the year its fitted question was labelled with."""
    fitted = [
        _asked("When was the bees place founded?", "1901"),
        _asked("When was the stars place founded?", "1902"),
    ]
    asked = [_asked("When was the honey place founded?"), _asked("When was the telescope place?")]
    assert QuestionWords().fit(fitted).predict(asked) == ["1901", "1902"]
    assert accuracy(["1901", "1900"], [_asked("x", "1901"), _asked("y", "1901")]) == 0.5


def test_feedback_queries_carry_no_answer_and_2a_answers_gave_years_away() -> None:
    """The 2-A answers rebuilt (each feedback query's judged documents' years, read from the
    corpus as the generator wrote them): fitted on them, the learned attacker answers 55 of the
    240 held-out questions (erm_reader behind the static index: 61)."""
    data = load_beir()
    assert len(data.feedback) == 288 and not [q for q in data.feedback if q.answers]
    position = data.doc_index()
    rebuilt = [
        replace(
            q, answers=tuple(sorted({first_year(data.doc_texts[position[d]]) for d in q.relevant}))
        )
        for q in data.feedback
    ]
    predicted = QuestionWords().fit(rebuilt).predict(data.heldout)
    assert accuracy(predicted, data.heldout) == 55 / 240
    assert reader_accuracy(data, "static") == 61 / 240


def test_the_offline_reader_is_the_task_s(tmp_path: Path) -> None:
    """`reader_accuracy` equals an eval of `erm_rag` with `erm_reader` on the same questions."""
    data = load_beir()
    first = BeirData(data.root, data.doc_ids, data.doc_texts, data.feedback, data.heldout[:40])
    model = get_model("docket/scripted", policy="erm_reader", memoize=False)
    [log] = inspect_eval(erm_rag(), model=model, log_dir=str(tmp_path), display="none", limit=40)
    assert log.status == "success" and log.results is not None
    found = next(s for s in log.results.scores if s.name == "answer_scorer")
    assert found.metrics["accuracy"].value == pytest.approx(reader_accuracy(first, "erm"))


def test_a_year_is_read_as_erm_reader_reads_it() -> None:
    assert first_year("Founded in 1889, the Pennant Academy of Brisk ...") == "1889"
    assert first_year("no year here") == "unknown"
    assert re.fullmatch(r"\d{4}", first_year("It was founded in 2003."))
