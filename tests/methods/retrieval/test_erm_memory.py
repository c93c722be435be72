"""ERM's defining properties on BM25 and dense keys: the gate, the norm bound, convergence,
the query-expansion / key-expansion equivalence, and committed keys = uncommitted scores."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.methods.retrieval.erm import ERMConfig, EvolvingMemory, Feedback, expand
from docket.methods.retrieval.keys import DenseKeys, Keys, SparseKeys, top_k
from docket.methods.retrieval.text import tokenize

DOCS = [
    "the physician treats hypertension in elderly patients",
    "a sailor repairs the hull of the vessel",
    "the cardiologist examines arrhythmia and hypertension",
    "botanists study orchids and ferns in the greenhouse",
    "the veterinarian vaccinates canine patients",
]
QUERY = "doctor for high blood pressure in old people"
UNITS = ("physician", "hypertension", "sailor", "elderly")


def hashed(texts: list[str]) -> np.ndarray:
    """A deterministic bag-of-words embedding (64 hashed dimensions, unit norm)."""
    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in tokenize(text):
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        norm = np.linalg.norm(out[i])
        out[i] /= norm if norm else 1.0
    return out


def keys_of(kind: str) -> Keys:
    return SparseKeys(DOCS) if kind == "bm25" else DenseKeys(DOCS, hashed)


def snapshot(keys: Keys) -> list[float]:
    return [keys.displacement(d) for d in range(keys.n_docs)]


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_no_update_when_the_gate_fails(kind: str) -> None:
    memory = EvolvingMemory(keys_of(kind), ERMConfig(radius=10.0, gate_depth=1))
    before = [memory.keys.doc_score(memory.keys.encode([QUERY])[0], d) for d in range(len(DOCS))]
    update = memory.update(QUERY, UNITS, correct=False, supported=[0])
    assert not update.passed and update.changes == []
    assert snapshot(memory.keys) == [0.0] * len(DOCS)
    # the retrieval gate: the gold document (the sailor's) is not in the expanded top 1
    gated = memory.feedback(Feedback(QUERY, ("physician",), frozenset({1})))
    assert not gated.passed and snapshot(memory.keys) == [0.0] * len(DOCS)
    memory.keys.commit()
    after = [memory.keys.doc_score(memory.keys.encode([QUERY])[0], d) for d in range(len(DOCS))]
    assert after == before


def test_bm25_keys_score_exactly_as_bm25s() -> None:
    import bm25s

    keys = SparseKeys(DOCS)
    peer = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    peer.index([tokenize(d) for d in DOCS], show_progress=False)
    for text in ["hypertension patients", "hull vessel orchids", "canine"]:
        [query] = keys.encode([text])
        expected = peer.get_scores(list(dict.fromkeys(tokenize(text))))
        np.testing.assert_allclose(keys.scores(query, evolved=False), expected, rtol=1e-6)
        for doc in range(len(DOCS)):
            assert keys.doc_score(query, doc, evolved=False) == pytest.approx(expected[doc], 1e-6)


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_one_full_step_moves_the_expansion_into_the_key(kind: str) -> None:
    """eta = 1: the plain query scores the updated document exactly as q ⊕ A(d) did."""
    memory = EvolvingMemory(keys_of(kind), ERMConfig(eta=1.0, radius=100.0))
    update = memory.update(QUERY, UNITS, correct=True, supported=[0])
    [change] = update.changes
    attributed = [u for u, _ in change.attributed]
    if kind == "bm25":  # the sailor's word does not occur in doc 0: no gain, not attributed
        assert attributed == ["physician", "hypertension", "elderly"]
    keys = memory.keys
    [target] = keys.encode([expand(QUERY, attributed)])
    [plain] = keys.encode([QUERY])
    assert keys.doc_score(plain, 0) == pytest.approx(keys.doc_score(target, 0, evolved=False))
    assert change.target == pytest.approx(keys.doc_score(target, 0, evolved=False))
    for other in range(1, len(DOCS)):  # nobody else moved
        assert keys.displacement(other) == 0.0
    keys.commit()  # the committed index agrees with the uncommitted scores
    for doc in range(len(DOCS)):
        assert keys.scores(plain)[doc] == pytest.approx(keys.doc_score(plain, doc), rel=1e-5)
    assert memory.retrieve(QUERY, 1)[0][0] == 0


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_repeated_identical_feedback_converges_to_the_target(kind: str) -> None:
    memory = EvolvingMemory(keys_of(kind), ERMConfig(eta=0.5, radius=100.0))
    residuals = []
    for _ in range(40):
        update = memory.update(QUERY, UNITS, correct=True, supported=[0])
        residuals.append(update.changes[0].residual if update.changes else 0.0)
    target = memory.attribute(QUERY, UNITS, 0)
    assert target
    [plain] = memory.keys.encode([QUERY])  # after the first update added the query's new words
    # the residual halves each time (dense keys are float32: 1e-6 slack)
    assert all(b <= a * 0.5 + 1e-6 for a, b in zip(residuals, residuals[1:], strict=False))
    assert residuals[-1] < 1e-6
    [full] = memory.keys.encode([expand(QUERY, [u for u, _ in target])])
    expected = memory.keys.doc_score(full, 0, evolved=False)
    assert memory.keys.doc_score(plain, 0) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_a_binding_radius_holds_the_key_on_its_sphere(kind: str) -> None:
    memory = EvolvingMemory(keys_of(kind), ERMConfig(eta=1.0, radius=0.05, relative=False))
    norms = []
    for _ in range(10):
        memory.update(QUERY, UNITS, correct=True, supported=[0])
        norms.append(memory.keys.displacement(0))
    assert norms[-1] == pytest.approx(0.05)
    assert max(norms) <= 0.05 + 1e-12
    assert abs(norms[-1] - norms[-2]) < 1e-12  # converged on the boundary


FEEDBACK = st.lists(
    st.tuples(
        st.sampled_from([QUERY, "sea captain fixes ship", "heart doctor", "flower scientist"]),
        st.lists(
            st.sampled_from(["physician", "sailor", "hull", "orchids", "cardiologist"]), max_size=3
        ),  # fmt: skip
        st.lists(st.integers(0, len(DOCS) - 1), min_size=1, max_size=2),
        st.booleans(),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40)
@given(
    st.sampled_from(["bm25", "dense"]),
    st.floats(0.05, 1.0),
    st.floats(0.0, 2.0),
    st.booleans(),
    FEEDBACK,
)
def test_the_norm_bound_always_holds(
    kind: str, eta: float, radius: float, relative: bool, stream: list
) -> None:
    memory = EvolvingMemory(keys_of(kind), ERMConfig(eta=eta, radius=radius, relative=relative))
    for query, units, supported, correct in stream:
        before = snapshot(memory.keys)
        update = memory.update(query, tuple(units), correct=correct, supported=supported)
        if not correct:
            assert snapshot(memory.keys) == before and not update.changes
        for doc in range(len(DOCS)):
            assert memory.keys.displacement(doc) <= memory.radius_of(doc) * (1 + 1e-9) + 1e-12


def test_unknown_query_words_get_new_columns_that_only_updates_write() -> None:
    keys = SparseKeys(DOCS)
    assert keys.encode(["zyzzyva"]) == [()]
    memory = EvolvingMemory(keys, ERMConfig(radius=100.0))
    memory.update("zyzzyva hypertension", ("physician",), correct=True, supported=[0])
    memory.keys.commit()
    ranked = memory.retrieve("zyzzyva", 2)
    assert ranked[0][0] == 0 and ranked[0][1] > 0 and ranked[1][1] == 0


def test_bm25_rank_is_the_top_of_the_scores() -> None:
    keys = SparseKeys(DOCS)
    for text in ["hypertension patients", "the patients", "canine", "zyzzyva", "hull vessel"]:
        [query] = keys.encode([text])
        values = keys.scores(query)
        for k in (1, 2, 3, 5):
            ranked = keys.rank(query, k)
            assert ranked == top_k(values, k)
            assert [v for _, v in ranked] == sorted(values.tolist(), reverse=True)[:k]
    # "canine" reaches one document: the rest of the top 3 are the lowest-index zero scores
    assert [d for d, _ in keys.rank(keys.encode(["canine"])[0], 3)] == [4, 0, 1]


@pytest.mark.parametrize("size", [7, 300, 2560, 3001, 9000])
def test_top_k_equals_a_full_sort_with_ties_to_the_lower_index(size: int) -> None:
    """Above 4·k blocks of 64 scores `top_k` prunes by block maxima; ties (many zeros, repeated
    values, ties at the k-th place) must still resolve to the lower index."""
    rng = np.random.default_rng(size)
    for trial in range(20):
        high = (4, 50, 10**6)[trial % 3]  # many ties, some, almost none
        values = rng.integers(0, high, size).astype(np.float32)
        values[rng.random(size) < 0.5] = 0.0
        among = np.flatnonzero(rng.random(size) < 0.7)
        for k in (1, 3, 10, 25):
            expected = sorted(range(size), key=lambda i: (-values[i], i))[:k]
            assert [d for d, _ in top_k(values, k)] == expected
            in_among = sorted(among.tolist(), key=lambda i: (-values[i], i))[:k]
            assert [d for d, _ in top_k(values, k, among)] == in_among


def test_config_rejects_bad_knobs() -> None:
    with pytest.raises(ValueError, match="eta"):
        ERMConfig(eta=0)
    with pytest.raises(ValueError, match="radius"):
        ERMConfig(radius=-1)
