"""Blind attackers of `docket/erm_retrieval`: rankings that never read a query's words
(README.md: "Chance row").

- `random_rankings`: the task's `-T method=random` (a seeded shuffle per query).
- `expected_random`: the exact mean nDCG@10 a uniformly random ranking has in expectation (the
  seeded row is one draw from it).
- `feedback_prior`: every document ranked by how many feedback queries judge it relevant
  (ties in corpus order), the same ranking for every query.
- `id_neighbours` (the learned attacker, issue #53 item 6): reads only the query's *id*. Fitted
  on the feedback qrels (query id's rank among the sorted query ids → document id's rank among
  the sorted document ids), it predicts a held-out query's document rank by interpolating
  between the feedback queries nearest in rank and ranks the documents by their distance to that
  prediction. It measures whether the ids carry the generator's order (on 1-A's `d0000`/`q0000`
  numbering the rank is the number: nDCG@10 0.805).
- `order_neighbours`: the same fit on positions in the files instead (a query's row in
  queries.jsonl → its document's row in corpus.jsonl): whether the file order carries it.
"""

from __future__ import annotations

import bisect
import json
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from docket.benchmarks.erm_retrieval.dataset import BeirData, Query, load_beir
from docket.methods.retrieval.metrics import evaluate


@dataclass(frozen=True)
class Row:
    """One blind attacker's mean nDCG@10 on the held-out queries."""

    name: str
    ndcg_10: float


def random_rankings(data: BeirData, seed: int = 0) -> dict[str, list[str]]:
    """The task's `-T method=random` ranking of every held-out query (`engine.Engine.rank`)."""
    out = {}
    for query in data.heldout:
        order = list(range(len(data.doc_ids)))
        random.Random(f"{seed}:{query.text}").shuffle(order)
        out[query.id] = [data.doc_ids[i] for i in order]
    return out


def expected_random(data: BeirData, depth: int = 10) -> float:
    """The exact expected mean nDCG@`depth` of a uniformly random ranking of the corpus.

    Each rank holds each document with probability 1/N, so the expected DCG of a query is the
    grades of its documents in the corpus, summed, over N, times the sum of the rank discounts;
    the ideal DCG is trec_eval's (every judged document, in the corpus or not).

    Args:
        data: The corpus and the held-out queries.
        depth: The nDCG cut-off.

    Returns:
        The mean over the held-out queries.
    """
    discounts = [1 / math.log2(rank + 1) for rank in range(1, min(depth, len(data.doc_ids)) + 1)]
    known = set(data.doc_ids)
    total = 0.0
    for query in data.heldout:
        grades = sorted((g for g in query.relevant.values() if g > 0), reverse=True)
        ideal = sum(g * w for g, w in zip(grades, discounts, strict=False))
        found = sum(g for d, g in query.relevant.items() if g > 0 and d in known)
        total += found / len(data.doc_ids) * sum(discounts) / ideal if ideal else 0.0
    return total / len(data.heldout)


def feedback_prior(data: BeirData) -> dict[str, list[str]]:
    """Documents by their count of relevant feedback judgements, one ranking for all queries."""
    counts = Counter(d for q in data.feedback for d, g in q.relevant.items() if g > 0)
    order = sorted(data.doc_ids, key=lambda d: -counts[d])
    return {query.id: order for query in data.heldout}


def neighbours(
    feedback: Sequence[Query],
    data: BeirData,
    query_key: Callable[[str], float],
    doc_key: Callable[[str], float],
) -> dict[str, list[str]]:
    """Each held-out query's documents ranked by the distance of their key to the one
    interpolated, from the feedback queries nearest in key, at the query's key (ties: corpus
    order). Only ids (through the keys) and the feedback judgements are read.

    Args:
        feedback: The queries it is fitted on (their ids and judgements only).
        data: The corpus and the held-out queries it ranks for (their ids only).
        query_key: A number for a query id.
        doc_key: A number for a document id.

    Returns:
        {query id: ranking}.
    """
    points = sorted(
        (query_key(q.id), doc_key(d)) for q in feedback for d, g in q.relevant.items() if g > 0
    )
    xs = [x for x, _ in points]
    keys = [doc_key(d) for d in data.doc_ids]

    def predict(x: float) -> float:
        i = bisect.bisect_left(xs, x)
        if i == 0 or i == len(xs):
            return points[min(i, len(xs) - 1)][1]
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        return y0 + (y1 - y0) * (x - x0) / max(x1 - x0, 1)

    out = {}
    for query in data.heldout:
        guess = predict(query_key(query.id))
        order = sorted(range(len(keys)), key=lambda i: abs(keys[i] - guess))
        out[query.id] = [data.doc_ids[i] for i in order]
    return out


def _ranks(ids: Sequence[str]) -> dict[str, float]:
    return {ident: float(rank) for rank, ident in enumerate(sorted(set(ids)))}


def id_neighbours(feedback: Sequence[Query], data: BeirData) -> dict[str, list[str]]:
    """The learned id attacker: `neighbours` keyed by each id's rank among the sorted ids.

    Args:
        feedback: The queries it is fitted on (their ids and judgements only).
        data: The corpus and the held-out queries it ranks for (their ids only).

    Returns:
        {query id: ranking}.
    """
    queries = _ranks([q.id for q in [*feedback, *data.feedback, *data.heldout]])
    docs = _ranks(data.doc_ids)
    return neighbours(feedback, data, queries.__getitem__, docs.__getitem__)


def order_neighbours(feedback: Sequence[Query], data: BeirData) -> dict[str, list[str]]:
    """The learned order attacker: `neighbours` keyed by each id's row in queries.jsonl and
    corpus.jsonl (a query missing from the file goes last).

    Args:
        feedback: The queries it is fitted on (their ids and judgements only).
        data: The corpus and the held-out queries it ranks for (their ids only).

    Returns:
        {query id: ranking}.
    """
    lines = (data.root / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {str(json.loads(line)["_id"]): float(i) for i, line in enumerate(lines) if line.strip()}
    docs = {d: float(i) for i, d in enumerate(data.doc_ids)}
    return neighbours(feedback, data, lambda q: rows.get(q, float(len(rows))), docs.__getitem__)


def mean_ndcg(data: BeirData, rankings: dict[str, list[str]]) -> float:
    """Mean nDCG@10 of `rankings` over the held-out queries (trec_eval, as the task scores)."""
    qrels = {q.id: dict(q.relevant) for q in data.heldout}
    values = evaluate(qrels, rankings, 20)
    return sum(v["ndcg_10"] for v in values.values()) / len(data.heldout)


def attack_rows(data: BeirData | None = None) -> list[Row]:
    """Every blind attacker's mean nDCG@10 on `data`'s held-out queries (default: shipped)."""
    data = load_beir() if data is None else data
    return [
        Row("random", round(mean_ndcg(data, random_rankings(data)), 6)),
        Row("random_expected", round(expected_random(data), 6)),
        Row("feedback_prior", round(mean_ndcg(data, feedback_prior(data)), 6)),
        Row("id_neighbours", round(mean_ndcg(data, id_neighbours(data.feedback, data)), 6)),
        Row("order_neighbours", round(mean_ndcg(data, order_neighbours(data.feedback, data)), 6)),
    ]
