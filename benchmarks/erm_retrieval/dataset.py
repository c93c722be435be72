"""BEIR-format data: the shipped corpus or any folder laid out as BEIR ships its data sets.

A BEIR folder holds `corpus.jsonl` (`{"_id", "title", "text"}`), `queries.jsonl`
(`{"_id", "text"}`, optional `metadata`) and `qrels/<split>.tsv` (a header line, then
`query-id<TAB>corpus-id<TAB>score`). ERM needs two disjoint query sets: feedback queries whose
results update the keys, and held-out queries that are scored. They are the `feedback_split`
and `split` qrels files when both exist; otherwise a hash of each query id sends
`feedback_share` of the `split` queries to feedback (the same split on every machine).
For `docket/erm_rag` each scored query needs an answer: `metadata.answer` (or `answers`, a
list), as the shipped data has.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import JsonlLineError, parse_lines

SHIPPED = Path(__file__).parent / "data"


class BeirDataError(PrerequisiteError):
    """A BEIR folder that cannot be read (one line naming the file, row and field)."""


@dataclass(frozen=True)
class Query:
    """A query, its judgements and (for RAG) its accepted answers."""

    id: str
    text: str
    relevant: dict[str, int]
    answers: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BeirData:
    """A corpus and its feedback and held-out queries."""

    root: Path
    doc_ids: list[str]
    doc_texts: list[str]
    feedback: list[Query]
    heldout: list[Query]

    def doc_index(self) -> dict[str, int]:
        """Document id -> position in the corpus."""
        return {d: i for i, d in enumerate(self.doc_ids)}


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise BeirDataError(f"{path}: file not found (a BEIR folder needs it)")

    def bad(number: int, ex: JsonlLineError) -> BeirDataError:
        return BeirDataError(f"{path}:{number}: not JSON ({ex.reason})")

    rows = []
    for number, row in parse_lines(path.read_text(encoding="utf-8").splitlines(), bad):
        if not isinstance(row, dict) or not isinstance(row.get("_id"), str | int):
            raise BeirDataError(f"{path}:{number}: a row needs an '_id'")
        rows.append(row)
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id -> document id -> grade, from a BEIR qrels TSV (header line skipped)."""
    qrels: dict[str, dict[str, int]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        parts = line.split("\t")
        if number == 1 and parts[:1] == ["query-id"] or not line.strip():
            continue
        if len(parts) != 3:
            raise BeirDataError(f"{path}:{number}: expected query-id, corpus-id, score")
        try:
            grade = int(parts[2])
        except ValueError:
            raise BeirDataError(f"{path}:{number}: score {parts[2]!r} is not an integer") from None
        qrels.setdefault(parts[0], {})[parts[1]] = grade
    return qrels


def _text(row: dict[str, Any], path: Path) -> str:
    text = row.get("text")
    if not isinstance(text, str):
        raise BeirDataError(f"{path}: row {row['_id']!r} has no 'text' string")
    title = row.get("title") or ""
    return f"{title}\n{text}" if isinstance(title, str) and title else text


def _answers(meta: dict[str, Any]) -> tuple[str, ...]:
    found = meta.get("answers") or ([meta["answer"]] if "answer" in meta else [])
    return tuple(str(a) for a in found) if isinstance(found, list) else (str(found),)


def _in_feedback(query_id: str, share: float) -> bool:
    digest = hashlib.sha256(query_id.encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < share


def load_beir(
    data: str = "",
    split: str = "test",
    feedback_split: str = "feedback",
    feedback_share: float = 0.5,
) -> BeirData:
    """The shipped data (`data=''`) or a BEIR folder, split into feedback and held-out queries."""
    root = Path(data).expanduser() if data else SHIPPED
    if not root.is_dir():
        raise BeirDataError(f"-T data={data!r}: not a folder (expected a BEIR data set folder)")
    corpus = _rows(root / "corpus.jsonl")
    doc_ids = [str(r["_id"]) for r in corpus]
    if len(set(doc_ids)) != len(doc_ids):
        raise BeirDataError(f"{root / 'corpus.jsonl'}: document ids are not unique")
    texts = [_text(r, root / "corpus.jsonl") for r in corpus]
    queries = {str(r["_id"]): r for r in _rows(root / "queries.jsonl")}
    scored_path = root / "qrels" / f"{split}.tsv"
    if not scored_path.is_file():
        raise BeirDataError(f"{scored_path}: file not found (-T split names a qrels file)")
    scored = read_qrels(scored_path)
    feedback_path = root / "qrels" / f"{feedback_split}.tsv"
    if feedback_path.is_file() and feedback_split != split:
        feedback_qrels = read_qrels(feedback_path)
        scored = {q: r for q, r in scored.items() if q not in feedback_qrels}  # never both
    else:
        feedback_qrels = {q: r for q, r in scored.items() if _in_feedback(q, feedback_share)}
        scored = {q: r for q, r in scored.items() if q not in feedback_qrels}
    known = set(doc_ids)

    def build(qrels: dict[str, dict[str, int]]) -> list[Query]:
        out = []
        for qid, relevant in qrels.items():
            row = queries.get(qid)
            if row is None:
                raise BeirDataError(f"{root}: qrels name query {qid!r}, not in queries.jsonl")
            judged = {d: g for d, g in relevant.items() if d in known}
            if not any(g > 0 for g in judged.values()):
                continue  # BEIR keeps only queries with a relevant document in the corpus
            raw = row.get("metadata")
            meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
            text = _text(row, root / "queries.jsonl")
            out.append(Query(qid, text, judged, _answers(meta), dict(meta)))
        return out

    return BeirData(root, doc_ids, texts, build(feedback_qrels), build(scored))
