"""Blind attackers of `docket/erm_retrieval`: rankings that never read a query's words
(README.md: "Chance row").

- `random_rankings`: the task's `-T method=random` (a seeded shuffle per query).
- `feedback_prior`: every document ranked by how many feedback queries judge it relevant
  (ties in corpus order), the same ranking for every query.
- `id_neighbours` (the learned attacker, issue #53 item 6): reads only the query's *id*. Fitted
  on the feedback qrels (query number → document number), it predicts a held-out query's
  document number by interpolating between the feedback queries whose numbers are nearest and
  ranks the documents by their distance to that prediction. It measures whether the ids carry
  the generator's order.
"""

from __future__ import annotations

import bisect
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from docket.benchmarks.erm_retrieval.dataset import BeirData, Query, load_beir
from docket.methods.retrieval.metrics import evaluate

_NUMBER = re.compile(r"(\d+)$")


@dataclass(frozen=True)
class Row:
    """One blind attacker's mean nDCG@10 on the held-out queries."""

    name: str
    ndcg_10: float


def _number(identifier: str) -> int:
    found = _NUMBER.search(identifier)
    return int(found.group(1)) if found else 0


def random_rankings(data: BeirData, seed: int = 0) -> dict[str, list[str]]:
    """The task's `-T method=random` ranking of every held-out query (`engine.Engine.rank`)."""
    out = {}
    for query in data.heldout:
        order = list(range(len(data.doc_ids)))
        random.Random(f"{seed}:{query.text}").shuffle(order)
        out[query.id] = [data.doc_ids[i] for i in order]
    return out


def feedback_prior(data: BeirData) -> dict[str, list[str]]:
    """Documents by their count of relevant feedback judgements, one ranking for all queries."""
    counts = Counter(d for q in data.feedback for d, g in q.relevant.items() if g > 0)
    order = sorted(data.doc_ids, key=lambda d: -counts[d])
    return {query.id: order for query in data.heldout}


def id_neighbours(feedback: Sequence[Query], data: BeirData) -> dict[str, list[str]]:
    """The learned attacker: each held-out query's documents ranked by the distance of their id
    number to the one interpolated from the nearest feedback query ids (ties: corpus order).

    Args:
        feedback: The queries it is fitted on (their ids and judgements only).
        data: The corpus and the held-out queries it ranks for (their ids only).

    Returns:
        {query id: ranking}.
    """
    points = sorted(
        (_number(q.id), _number(d)) for q in feedback for d, g in q.relevant.items() if g > 0
    )
    xs = [x for x, _ in points]
    numbers = [_number(d) for d in data.doc_ids]

    def predict(x: int) -> float:
        i = bisect.bisect_left(xs, x)
        if i == 0 or i == len(xs):
            return float(points[min(i, len(xs) - 1)][1])
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        return y0 + (y1 - y0) * (x - x0) / max(x1 - x0, 1)

    out = {}
    for query in data.heldout:
        guess = predict(_number(query.id))
        order = sorted(range(len(numbers)), key=lambda i: abs(numbers[i] - guess))
        out[query.id] = [data.doc_ids[i] for i in order]
    return out


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
        Row("feedback_prior", round(mean_ndcg(data, feedback_prior(data)), 6)),
        Row("id_neighbours", round(mean_ndcg(data, id_neighbours(data.feedback, data)), 6)),
    ]
