"""The online schema cache of CORRECT, persisted in SQLite.

Each entry is one error schema with the trajectory it was first distilled from (`origin`), the
ids of the failures merged into it (`sources`, each stored with its steps and label for replay)
and a hotness that decays by `decay` per query and grows by 1 each time the entry is retrieved
or merged into.

- `add` merges a schema into the entry whose error signature is most similar (cosine of bags of
  words, digits masked) when the similarity is at least `delta`, and the kept schema is
  rewritten from both (`merge`, by default `merge_schemata`: both signatures, the union of the
  checks with their counts, both labels); otherwise it inserts a new entry.
- `replay_hot` refines each entry whose hotness reached `theta_hot` and that changed since its
  last replay: its checks are replayed on the failures it was built from (`replay_schema`) and
  the schema is rewritten with each check's success rate, dropping the ones that rarely work.
- `evict` applies the replacement policy: decayed-hotness LFU. Entries colder than `theta` are
  deleted, then, beyond `capacity`, the coldest (ties: the oldest) until `capacity` remain.
- `retrieve` ranks entries against a trajectory with one of `retrieval.RETRIEVERS` (BM25,
  TF-IDF or sentence embeddings), leaving out entries built from the query's own trajectory.

The file records who built it (`identity`: mode, split, data hash, ...); opening it with another
identity raises `CacheMismatch` with one line, so a cache fitted for one protocol is never
silently reused by another.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.benchmarks.correct.retrieval import RETRIEVERS, make_index, tokens
from docket.benchmarks.correct.simulator.schema import Labelled, merge_schemata, replay_schema

__all__ = [
    "RETRIEVERS",
    "CacheMismatch",
    "Entry",
    "Hit",
    "SchemaCache",
    "cosine",
    "norm",
    "signature",
    "tokens",
]

Merge = Callable[[str, str], str]


class CacheMismatch(ValueError):
    """A cache file built for another mode, split or data set."""


def signature(text: str) -> str:
    """The `Error Signatures` section of a schema (the whole text when it has none)."""
    match = re.search(r"Error Signatures\W*(.*?)(?:\n\W*Context Analysis|$)", text, re.S | re.I)
    return match.group(1) if match and match.group(1).strip() else text


def norm(bag: Counter[str]) -> float:
    """Euclidean norm of a bag of words."""
    return math.sqrt(sum(c * c for c in bag.values()))


def cosine(one: Counter[str], two: Counter[str], norms: float | None = None) -> float:
    """Cosine similarity of two bags of words (0 when either is empty).

    `norms`: the product of their norms, when already known.
    """
    if len(one) > len(two):
        one, two = two, one
    dot = sum(count * two[word] for word, count in one.items() if word in two)
    norms = norm(one) * norm(two) if norms is None else norms
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
    sources TEXT NOT NULL, hotness REAL NOT NULL, touched INTEGER NOT NULL, hits INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 0, replayed INTEGER NOT NULL DEFAULT -1
);
CREATE TABLE IF NOT EXISTS sources (
    source TEXT PRIMARY KEY, question TEXT NOT NULL, steps TEXT NOT NULL, step INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS identity (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _describe(identity: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(identity.items()))


class SchemaCache:
    """SQLite-backed schema store with merge (δ), hot replay (θ_hot), eviction (θ) and top-k."""

    def __init__(
        self,
        path: str | Path,
        delta: float = 0.9,
        theta: float = 0.01,
        decay: float = 0.995,
        capacity: int = 0,
        retriever: str = "bm25",
        identity: Mapping[str, str] | None = None,
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
        self._claim(identity or {})
        self.db.commit()
        self._signatures: dict[int, tuple[Counter[str], float]] = {}
        self._ranker = ranker
        self._origin: dict[int, str] = {}
        self._owner: dict[str, int] = {}
        for row_id, text, key, origin, sources in self.db.execute(
            "SELECT id, text, key, origin, sources FROM schemata ORDER BY id"
        ):
            self._index(row_id, text, key, origin, json.loads(sources))

    def _claim(self, identity: Mapping[str, str]) -> None:
        """Record who builds this file, or check that it was built by the same protocol."""
        if not identity:
            return
        recorded = dict(self.db.execute("SELECT name, value FROM identity").fetchall())
        empty = self.db.execute("SELECT COUNT(*) FROM schemata").fetchone()[0] == 0
        if not recorded and empty:
            self.db.executemany("INSERT INTO identity VALUES (?, ?)", sorted(identity.items()))
            return
        if recorded != dict(identity):
            self.db.close()
            raise CacheMismatch(
                f"cache {self.path} was built with {_describe(recorded) or 'no recorded identity'}"
                f", not {_describe(identity)}; use another cache_path or delete the file"
            )

    @property
    def identity(self) -> dict[str, str]:
        """Who built this file (mode, split, data hash, ...)."""
        return dict(self.db.execute("SELECT name, value FROM identity").fetchall())

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
        bag = Counter(tokens(signature(text)))
        self._signatures[row_id] = (bag, norm(bag))
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

    def owner(self, source: str) -> int | None:
        """The entry that holds trajectory `source`'s schema, if any."""
        return self._owner.get(source)

    def _warm(self, row_id: int, hit: bool) -> None:
        hotness, touched = self.db.execute(
            "SELECT hotness, touched FROM schemata WHERE id=?", (row_id,)
        ).fetchone()
        self.db.execute(
            "UPDATE schemata SET hotness=?, touched=?, hits=hits+? WHERE id=?",
            (hotness * self.decay ** (self.clock - touched) + 1.0, self.clock, int(hit), row_id),
        )

    def _keep(self, source: str, labelled: Labelled | None) -> None:
        if labelled is not None:
            self.db.execute(
                "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?)",
                (source, labelled.question, json.dumps(labelled.steps), labelled.step),
            )

    def nearest(self, text: str) -> tuple[int, float] | None:
        """The entry whose signature is most similar to `text`'s, and the similarity."""
        bag = Counter(tokens(signature(text)))
        size = norm(bag)
        return max(
            (
                (row_id, cosine(bag, other, size * length))
                for row_id, (other, length) in self._signatures.items()
            ),
            key=lambda pair: (pair[1], -pair[0]),
            default=None,
        )

    def add(
        self,
        text: str,
        source: str,
        key: str = "",
        labelled: Labelled | None = None,
        merge: Merge | None = merge_schemata,
    ) -> tuple[str, int]:
        """Insert a schema, or merge it into the most similar entry (cosine >= delta).

        Returns ("added" | "merged" | "known", entry id); "known" when a schema of `source` is
        already cached. A merge records `source` on the entry, warms it by 1 and rewrites the
        kept schema with `merge(kept, new)` (None: the kept text stays as it is).
        """
        if source in self._owner:
            return "known", self._owner[source]
        best = self.nearest(text)
        if best is not None and best[1] >= self.delta:
            kept = self.get(best[0])
            merged = merge(kept.text, text) if merge is not None and kept else None
            self.merge_into(best[0], source, merged, labelled)
            return "merged", best[0]
        self._keep(source, labelled)
        cursor = self.db.execute(
            "INSERT INTO schemata (text, key, origin, sources, hotness, touched, hits) "
            "VALUES (?, ?, ?, ?, 1.0, ?, 0)",
            (text, key, source, json.dumps([source]), self.clock),
        )
        self.db.commit()
        row_id = int(cursor.lastrowid or 0)
        self._index(row_id, text, key, source, [source])
        return "added", row_id

    def merge_into(
        self, row_id: int, source: str, text: str | None, labelled: Labelled | None = None
    ) -> None:
        """Record `source` on entry `row_id`, warm it, and rewrite its text when given."""
        (sources,) = self.db.execute(
            "SELECT sources FROM schemata WHERE id=?", (row_id,)
        ).fetchone()
        self._keep(source, labelled)
        self.db.execute(
            "UPDATE schemata SET sources=?, version=version+1 WHERE id=?",
            (json.dumps([*json.loads(sources), source]), row_id),
        )
        self._warm(row_id, hit=False)
        self._owner[source] = row_id
        if text is not None:
            self.rewrite(row_id, text)
        self.db.commit()

    def rewrite(self, row_id: int, text: str) -> None:
        """Replace an entry's schema text (its signature and index follow)."""
        self.db.execute("UPDATE schemata SET text=?, version=version+1 WHERE id=?", (text, row_id))
        self.db.commit()
        bag = Counter(tokens(signature(text)))
        self._signatures[row_id] = (bag, norm(bag))
        key = self._ranker.documents[row_id][0]
        self._ranker.add(row_id, key, text)

    def labelled_sources(self, row_id: int) -> list[Labelled]:
        """The stored failures an entry was built from (for replay)."""
        (sources,) = self.db.execute(
            "SELECT sources FROM schemata WHERE id=?", (row_id,)
        ).fetchone()
        found = []
        for source in json.loads(sources):
            row = self.db.execute(
                "SELECT question, steps, step FROM sources WHERE source=?", (source,)
            ).fetchone()
            if row:
                steps = tuple((agent, content) for agent, content in json.loads(row[1]))
                found.append(Labelled(row[0], steps, int(row[2])))
        return found

    def replay_hot(self, theta_hot: float, among: list[int] | None = None) -> list[int]:
        """Replay-distil the entries (of `among`, else all) with hotness >= theta_hot.

        Only entries changed since their last replay and built from two or more stored
        failures are replayed; returns the ids rewritten.
        """
        done = []
        for entry in self.entries():
            if among is not None and entry.id not in among:
                continue
            version, replayed = self.db.execute(
                "SELECT version, replayed FROM schemata WHERE id=?", (entry.id,)
            ).fetchone()
            if entry.hotness < theta_hot or replayed >= version:
                continue
            sources = self.labelled_sources(entry.id)
            if len(sources) < 2:
                continue
            refined = replay_schema(entry.text, sources)
            if refined != entry.text:
                self.rewrite(entry.id, refined)
            self.db.execute("UPDATE schemata SET replayed=version WHERE id=?", (entry.id,))
            self.db.commit()
            done.append(entry.id)
        return done

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

        Entries built from `exclude_origin` (the query's own trajectory: as origin or merged
        in) are left out. Each returned entry is warmed by 1 and counted as a hit.
        """
        self.db.execute("UPDATE meta SET value = value + 1 WHERE name='clock'")
        if k < 1 or not self._origin:
            self.db.commit()
            return []
        own = self._owner.get(exclude_origin) if exclude_origin else None
        ids, scores = self._ranker.scores(query)
        ranked = sorted(
            (
                (float(score), row_id)
                for score, row_id in zip(scores, ids, strict=True)
                if score > 0 and self._origin[row_id] != exclude_origin and row_id != own
            ),
            key=lambda x: (-x[0], x[1]),
        )[:k]
        for _, row_id in ranked:
            self._warm(row_id, hit=True)
        self.db.commit()
        return [Hit(entry, score) for score, row_id in ranked if (entry := self.get(row_id))]

    def close(self) -> None:
        """Close the database (its WAL is checkpointed into the file)."""
        self.db.close()
