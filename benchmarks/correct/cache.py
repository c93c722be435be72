"""The online schema cache of CORRECT, persisted in SQLite.

Each entry is one error schema with the trajectory it was distilled from (`origin`), the ids of
the later failures merged into it (`sources`), and a hotness that decays by `decay` per query
and grows by 1 each time the entry is retrieved. `add` merges a schema into an existing entry
when the cosine similarity of their error signatures (bags of words, digits masked) is at
least `delta`; `evict` deletes
entries whose hotness fell below `theta` (and the coldest beyond `capacity`). `retrieve` ranks
entries against a trajectory by BM25 (built in) or TF-IDF (scikit-learn) over the entry's key
(the source trajectory) plus its schema text, leaving out schemata distilled from the query's
own trajectory.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RETRIEVERS = ("bm25", "tfidf")
_TOKEN = re.compile(r"[a-z]+|\d+")


def signature(text: str) -> str:
    """The `Error Signatures` section of a schema (the whole text when it has none)."""
    match = re.search(r"Error Signatures\W*(.*?)(?:\n\W*Context Analysis|$)", text, re.S | re.I)
    return match.group(1) if match and match.group(1).strip() else text


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, every number replaced by `N`."""
    return ["N" if t.isdigit() else t for t in _TOKEN.findall(text.lower())]


@dataclass(frozen=True)
class Entry:
    """One cached schema."""

    id: int
    text: str
    origin: str
    sources: tuple[str, ...]
    hotness: float
    hits: int


@dataclass(frozen=True)
class Hit:
    """A retrieved schema and its retrieval score."""

    entry: Entry
    score: float


_SCHEMA = """
CREATE TABLE IF NOT EXISTS schemata (
    id INTEGER PRIMARY KEY, text TEXT NOT NULL, key TEXT NOT NULL, origin TEXT NOT NULL,
    sources TEXT NOT NULL, hotness REAL NOT NULL, touched INTEGER NOT NULL, hits INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class SchemaCache:
    """SQLite-backed schema store with merge (δ), hotness eviction (θ) and top-k retrieval."""

    def __init__(
        self,
        path: str | Path,
        delta: float = 0.9,
        theta: float = 0.01,
        decay: float = 0.995,
        capacity: int = 0,
        retriever: str = "bm25",
    ) -> None:
        if retriever not in RETRIEVERS:
            raise ValueError(f"retriever={retriever!r}; accepted: {', '.join(RETRIEVERS)}")
        if not 0.0 < delta <= 1.0 or theta < 0.0 or not 0.0 < decay <= 1.0 or capacity < 0:
            raise ValueError("need 0 < delta <= 1, theta >= 0, 0 < decay <= 1, capacity >= 0")
        self.path = str(path)
        self.delta, self.theta, self.decay, self.capacity = delta, theta, decay, capacity
        self.retriever = retriever
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")  # durable at checkpoints, no fsync per add
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('clock', 0)")
        self.db.commit()
        self._texts = _CountIndex()
        self._docs = _CountIndex()
        self._origin: dict[int, str] = {}
        self._owner: dict[str, int] = {}
        for row_id, text, key, origin, sources in self.db.execute(
            "SELECT id, text, key, origin, sources FROM schemata ORDER BY id"
        ):
            self._index(row_id, text, key, origin, json.loads(sources))

    @property
    def clock(self) -> int:
        """Number of queries answered so far (the hotness clock)."""
        return int(self.db.execute("SELECT value FROM meta WHERE name='clock'").fetchone()[0])

    def __len__(self) -> int:
        return len(self._origin)

    def _index(self, row_id: int, text: str, key: str, origin: str, sources: list[str]) -> None:
        self._texts.add(row_id, tokens(signature(text)))
        self._docs.add(row_id, tokens(key + "\n" + text))
        self._origin[row_id] = origin
        for source in sources:
            self._owner[source] = row_id

    def _unindex(self, row_id: int) -> None:
        self._texts.remove(row_id)
        self._docs.remove(row_id)
        self._origin.pop(row_id, None)
        for source in [s for s, owner in self._owner.items() if owner == row_id]:
            del self._owner[source]

    def _entry(self, row: tuple[Any, ...]) -> Entry:
        row_id, text, origin, sources, hotness, touched, hits = row
        now = hotness * self.decay ** (self.clock - touched)
        return Entry(row_id, text, origin, tuple(json.loads(sources)), now, hits)

    def entries(self) -> list[Entry]:
        """Every entry with its current (decayed) hotness, oldest first."""
        rows = self.db.execute(
            "SELECT id, text, origin, sources, hotness, touched, hits FROM schemata ORDER BY id"
        )
        return [self._entry(row) for row in rows.fetchall()]

    def get(self, row_id: int) -> Entry | None:
        """One entry by id."""
        row = self.db.execute(
            "SELECT id, text, origin, sources, hotness, touched, hits FROM schemata WHERE id=?",
            (row_id,),
        ).fetchone()
        return self._entry(row) if row else None

    def holds(self, source: str) -> bool:
        """Whether a schema from trajectory `source` was added or merged and is still cached."""
        return source in self._owner

    def _warm(self, row_id: int, hit: bool) -> None:
        hotness, touched = self.db.execute(
            "SELECT hotness, touched FROM schemata WHERE id=?", (row_id,)
        ).fetchone()
        self.db.execute(
            "UPDATE schemata SET hotness=?, touched=?, hits=hits+? WHERE id=?",
            (hotness * self.decay ** (self.clock - touched) + 1.0, self.clock, int(hit), row_id),
        )

    def add(self, text: str, source: str, key: str = "") -> tuple[str, int]:
        """Insert a schema, or merge it into the most similar entry (cosine >= delta).

        Returns ("added" | "merged" | "known", entry id); "known" when a schema of `source` is
        already cached. A merge records `source` on the entry and warms it by 1.
        """
        if source in self._owner:
            return "known", self._owner[source]
        similarities = _cosines(self._texts, tokens(signature(text)))
        ranked = sorted(zip(similarities, self._texts.ids, strict=True), key=lambda x: -x[0])
        best = (ranked[0][1], float(ranked[0][0])) if ranked else None
        if best is not None and best[1] >= self.delta:
            (sources,) = self.db.execute(
                "SELECT sources FROM schemata WHERE id=?", (best[0],)
            ).fetchone()
            self.db.execute(
                "UPDATE schemata SET sources=? WHERE id=?",
                (json.dumps([*json.loads(sources), source]), best[0]),
            )
            self._warm(best[0], hit=False)
            self.db.commit()
            self._owner[source] = best[0]
            return "merged", best[0]
        cursor = self.db.execute(
            "INSERT INTO schemata (text, key, origin, sources, hotness, touched, hits) "
            "VALUES (?, ?, ?, ?, 1.0, ?, 0)",
            (text, key, source, json.dumps([source]), self.clock),
        )
        self.db.commit()
        row_id = int(cursor.lastrowid or 0)
        self._index(row_id, text, key, source, [source])
        return "added", row_id

    def evict(self) -> list[int]:
        """Delete entries colder than theta, then the coldest beyond capacity; return their ids."""
        entries = self.entries()
        cold = [e.id for e in entries if e.hotness < self.theta]
        if self.capacity:
            warm = sorted((e for e in entries if e.id not in cold), key=lambda e: (e.hotness, e.id))
            cold += [e.id for e in warm[: max(0, len(warm) - self.capacity)]]
        for row_id in cold:
            self.db.execute("DELETE FROM schemata WHERE id=?", (row_id,))
            self._unindex(row_id)
        self.db.commit()
        return cold

    def retrieve(self, query: str, k: int, exclude_origin: str = "") -> list[Hit]:
        """Top-k entries with a positive score (ties: older first); advances the clock.

        Entries distilled from `exclude_origin` (the query's own trajectory) are left out.
        Each returned entry is warmed by 1 and counted as a hit.
        """
        self.db.execute("UPDATE meta SET value = value + 1 WHERE name='clock'")
        if k < 1 or not self._docs.ids:
            self.db.commit()
            return []
        scores = (_bm25 if self.retriever == "bm25" else _tfidf)(self._docs, tokens(query))
        ranked = sorted(
            (
                (float(score), row_id)
                for score, row_id in zip(scores, self._docs.ids, strict=True)
                if score > 0 and self._origin[row_id] != exclude_origin
            ),
            key=lambda x: (-x[0], x[1]),
        )[:k]
        for _, row_id in ranked:
            self._warm(row_id, hit=True)
        self.db.commit()
        return [Hit(entry, score) for score, row_id in ranked if (entry := self.get(row_id))]

    def close(self) -> None:
        """Close the database."""
        self.db.close()


class _CountIndex:
    """Term counts of documents in the first rows of a growing numpy matrix (kept compact)."""

    def __init__(self) -> None:
        import numpy as np

        self.vocab: dict[str, int] = {}
        self.ids: list[int] = []
        self.counts = np.zeros((16, 64), dtype=np.float32)

    @property
    def active(self) -> Any:
        """The count rows of the indexed documents, in the order of `ids`."""
        return self.counts[: len(self.ids)]

    def add(self, doc_id: int, words: list[str]) -> None:
        import numpy as np

        for word in words:
            self.vocab.setdefault(word, len(self.vocab))
        rows, columns = self.counts.shape
        row = len(self.ids)
        if row >= rows or len(self.vocab) > columns:
            grown = np.zeros(
                (max(rows, 2 * (row + 1)), max(columns, 2 * len(self.vocab))), dtype=np.float32
            )
            grown[:rows, :columns] = self.counts
            self.counts = grown
        self.ids.append(doc_id)
        np.add.at(self.counts[row], [self.vocab[w] for w in words], 1.0)

    def remove(self, doc_id: int) -> None:
        if doc_id not in self.ids:
            return
        row, last = self.ids.index(doc_id), len(self.ids) - 1
        self.counts[row] = self.counts[last]
        self.ids[row] = self.ids[last]
        self.counts[last] = 0.0
        self.ids.pop()

    def query(self, words: list[str]) -> tuple[Any, Any]:
        """(column ids, counts) of the query words the vocabulary knows."""
        import numpy as np

        known = Counter(w for w in words if w in self.vocab)
        return (
            np.array([self.vocab[w] for w in known], dtype=np.int64),
            np.array(list(known.values()), dtype=np.float32),
        )


def _cosines(index: _CountIndex, words: list[str]) -> Any:
    """Cosine similarity of a bag of words with each indexed document (row order)."""
    import numpy as np

    matrix = index.active
    columns, weights = index.query(words)
    vector = np.zeros(matrix.shape[1], dtype=np.float32)
    vector[columns] = weights
    query_norm = math.sqrt(sum(c * c for c in Counter(words).values()))
    norms = np.linalg.norm(matrix, axis=1) * query_norm
    return np.where(norms > 0, matrix @ vector / np.maximum(norms, 1e-12), 0.0)


def _bm25(index: _CountIndex, query: list[str], k1: float = 1.5, b: float = 0.75) -> Any:
    """Okapi BM25 of each indexed document (row order) for the query terms."""
    import numpy as np

    matrix = index.active
    columns, weights = index.query(query)
    if not len(columns):
        return np.zeros(len(index.ids))
    lengths = matrix.sum(axis=1)
    tf = matrix[:, columns]
    df = (tf > 0).sum(axis=0)
    idf = np.log(1.0 + (len(index.ids) - df + 0.5) / (df + 0.5))
    norm = k1 * (1.0 - b + b * lengths / max(float(lengths.mean()), 1e-9))
    return (weights * idf * tf * (k1 + 1.0) / (tf + norm[:, None])).sum(axis=1)


def _tfidf(index: _CountIndex, query: list[str], smooth: float = 1.0) -> Any:
    """Cosine similarity of sublinear TF-IDF vectors, idf = log((1+n)/(1+df)) + smooth."""
    import numpy as np

    matrix = index.active
    if not len(index.ids):
        return np.zeros(0)
    df = (matrix > 0).sum(axis=0)
    idf = np.log((1.0 + len(index.ids)) / (1.0 + df)) + smooth
    docs = np.log1p(matrix) * idf
    docs /= np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12)
    columns, weights = index.query(query)
    vector = np.zeros(matrix.shape[1], dtype=np.float64)
    vector[columns] = np.log1p(weights) * idf[columns]
    unknown = len(set(query)) - len(columns)  # words no document has: full idf, never matched
    top = np.log(1.0 + len(index.ids)) + smooth
    norm = math.sqrt(float(vector @ vector) + unknown * top * top)
    return docs @ vector / max(norm, 1e-12)
