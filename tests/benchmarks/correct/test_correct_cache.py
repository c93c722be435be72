"""The online schema cache: add, merge (δ), evict (θ, capacity), retrieval and persistence."""

from __future__ import annotations

from pathlib import Path

import pytest
from docket.benchmarks.correct.cache import SchemaCache, signature, tokens

HALLUCINATION = (
    "Error Signatures: WebSurfer writes I already know this one, no search needed, value {n}.\n"
    "Context Analysis: follows the Orchestrator.\nDetection Heuristics: ask for the tool call."
)
SLIP = (
    "Error Signatures: Calculator computes calculate expression with a wrong result {n}.\n"
    "Context Analysis: after dispatch.\nDetection Heuristics: recompute."
)


def _cache(tmp_path: Path, name: str = "cache", **options: float) -> SchemaCache:
    return SchemaCache(tmp_path / f"{name}.sqlite", **options)  # type: ignore[arg-type]


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
    cache = _cache(tmp_path, retriever=retriever)  # type: ignore[arg-type]
    cache.add(HALLUCINATION.format(n=1), "a", key="who was born where")
    cache.add(SLIP.format(n=1), "b", key="sum the sales")
    assert [h.entry.origin for h in cache.retrieve("sales calculator result", k=5)] == ["b"]
    assert cache.retrieve("sales calculator result", k=5, exclude_origin="b") == []
    top = cache.retrieve("already know search calculator", k=1)
    assert len(top) == 1 and top[0].score > 0
    assert cache.retrieve("anything", k=0) == []


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
