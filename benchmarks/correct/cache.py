"""The online schema cache of CORRECT, persisted in SQLite.

Each entry is one error schema with the trajectory it was distilled from (`origin`), the ids of
the later failures merged into it (`sources`), and a hotness that decays by `decay` per query
and grows by 1 each time the entry is retrieved. `add` merges a schema into an existing entry
when the cosine similarity of their error signatures (bags of words, digits masked) is at
least `delta`; `evict` deletes
entries whose hotness fell below `theta` (and the coldest beyond `capacity`). `retrieve` ranks
entries against a trajectory with one of `retrieval.RETRIEVERS` (BM25, TF-IDF or sentence
embeddings), leaving out schemata distilled from the query's own trajectory.
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

from docket.benchmarks.correct.retrieval import RETRIEVERS, make_index, tokens

__all__ = ["RETRIEVERS", "Entry", "Hit", "SchemaCache", "cosine", "signature", "tokens"]


def signature(text: str) -> str:
    """The `Error Signatures` section of a schema (the whole text when it has none)."""
    match = re.search(r"Error Signatures\W*(.*?)(?:\n\W*Context Analysis|$)", text, re.S | re.I)
    return match.group(1) if match and match.group(1).strip() else text


def cosine(one: Counter[str], two: Counter[str]) -> float:
    """Cosine similarity of two bags of words (0 when either is empty)."""
    if len(one) > len(two):
        one, two = two, one
    dot = sum(count * two[word] for word, count in one.items())
    norms = math.sqrt(sum(c * c for c in one.values()) * sum(c * c for c in two.values()))
    return dot / norms if norms else 0.0


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
        ranker = make_index(retriever)  # rejects an unknown retriever before the file is made
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
        self._signatures: dict[int, Counter[str]] = {}
        self._ranker = ranker
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

    def documents(self) -> list[tuple[str, str]]:
        """(key, schema text) of every entry, as the retriever indexes them."""
        return list(self._ranker.documents.values())

    def _index(self, row_id: int, text: str, key: str, origin: str, sources: list[str]) -> None:
        self._signatures[row_id] = Counter(tokens(signature(text)))
        self._ranker.add(row_id, key, text)
        self._origin[row_id] = origin
        for source in sources:
            self._owner[source] = row_id

    def _unindex(self, row_id: int) -> None:
        self._signatures.pop(row_id, None)
        self._ranker.remove(row_id)
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
        bag = Counter(tokens(signature(text)))
        best = max(
            ((row_id, cosine(bag, other)) for row_id, other in self._signatures.items()),
            key=lambda pair: (pair[1], -pair[0]),
            default=None,
        )
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
        if k < 1 or not self._origin:
            self.db.commit()
            return []
        ids, scores = self._ranker.scores(query)
        ranked = sorted(
            (
                (float(score), row_id)
                for score, row_id in zip(scores, ids, strict=True)
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
