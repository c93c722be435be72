"""nDCG@10, Recall@k and RR by trec_eval on hand-computed cases; PRF expansion units."""

from __future__ import annotations

import math

import pytest

from docket.methods.retrieval.baselines import doc2query_texts, prf_units
from docket.methods.retrieval.keys import SparseKeys
from docket.methods.retrieval.metrics import evaluate


def test_ndcg_recall_and_rr_on_a_hand_case() -> None:
    qrels = {"q": {"d1": 1, "d3": 1, "d9": 0}}
    [values] = evaluate(qrels, {"q": ["d2", "d1", "d3", "d4"]}, k=2).values()
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    ideal = 1 + 1 / math.log2(3)
    assert values["ndcg_10"] == pytest.approx(dcg / ideal, abs=1e-4)  # 0.6934
    assert values["recall_at_k"] == 0.5  # d1 in the top 2, d3 not
    assert values["rr"] == 0.5


def test_graded_relevance_and_missing_rankings() -> None:
    qrels = {"a": {"x": 2, "y": 1}, "b": {"z": 1}}
    result = evaluate(qrels, {"a": ["y", "x"], "b": []}, k=10)
    ideal = (2**2 - 1) + (2**1 - 1) / math.log2(3)  # trec_eval's ndcg uses the grade as gain
    ideal_linear = 2 + 1 / math.log2(3)
    got = result["a"]["ndcg_10"]
    linear = (1 + 2 / math.log2(3)) / ideal_linear
    exponential = (1 + 3 / math.log2(3)) / ideal
    assert got == pytest.approx(linear, abs=1e-4), (got, linear, exponential)
    assert result["b"] == {"ndcg_10": 0.0, "recall_at_k": 0.0, "rr": 0.0}


def test_prf_units_are_the_heaviest_new_terms_of_the_top_documents() -> None:
    keys = SparseKeys(["glaucoma laser surgery clinic", "glaucoma drops", "sailing boats harbour"])
    units = prf_units(keys, "glaucoma", top_docs=2, terms=3)
    assert "glaucoma" not in units and set(units) <= {"laser", "surgery", "clinic", "drops"}
    assert prf_units(keys, "unknownword") == []  # nothing matched: no feedback


def test_prf_units_break_weight_ties_by_the_term() -> None:
    """Six terms of one document weigh the same; bm25s numbers its vocabulary in set order
    (PYTHONHASHSEED), so the order must come from the terms, not from their ids."""
    keys = SparseKeys(["glaucoma zeta kappa alpha omega delta mu", "sailing boats harbour"])
    assert prf_units(keys, "glaucoma", top_docs=1, terms=4) == ["alpha", "delta", "kappa", "mu"]


def test_doc2query_appends_generated_queries() -> None:
    assert doc2query_texts(["a b"], [["q1", "q2"]]) == ["a b\nq1\nq2"]
