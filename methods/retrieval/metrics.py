"""Per-query nDCG@10, Recall@k and reciprocal rank by trec_eval (`pytrec_eval`), as BEIR does.

A ranking is a list of document ids, best first. trec_eval orders by score and breaks ties by
document id, so each ranking is handed over with strictly decreasing scores (its rank order).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence

#: Relevance judgements: query id -> document id -> grade (0 = not relevant).
Qrels = Mapping[str, Mapping[str, int]]


def trec_eval_available() -> bool:
    """Whether `pytrec_eval` (PyPI `pytrec-eval-terrier`) is installed."""
    return importlib.util.find_spec("pytrec_eval") is not None


def evaluate(
    qrels: Qrels, rankings: Mapping[str, Sequence[str]], k: int = 10
) -> dict[str, dict[str, float]]:
    """{query id: {"ndcg_10", "recall_at_k", "rr"}} for every ranked query with judgements.

    A query with judgements but no ranking scores 0 on every measure.
    """
    import pytrec_eval

    judged = {q: {d: int(g) for d, g in docs.items()} for q, docs in qrels.items()}
    run = {
        q: {d: float(len(ranking) - i) for i, d in enumerate(dict.fromkeys(ranking))}
        for q, ranking in rankings.items()
        if q in judged
    }
    measures = {"ndcg_cut.10", f"recall.{k}", "recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, measures)
    results = evaluator.evaluate({q: r for q, r in run.items() if r})
    out = {}
    for query in run:
        found = results.get(query, {})
        out[query] = {
            "ndcg_10": float(found.get("ndcg_cut_10", 0.0)),
            "recall_at_k": float(found.get(f"recall_{k}", 0.0)),
            "rr": float(found.get("recip_rank", 0.0)),
        }
    return out
