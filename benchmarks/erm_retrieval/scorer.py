"""Scorers: per-query nDCG@10 / Recall@k / RR by trec_eval, and the RAG answer's exact match."""

from __future__ import annotations

import re
import string
from typing import Any

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    Target,
    accuracy,
    grouped,
    mean,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from docket.core.inspect_private import PrerequisiteError
from docket.methods.retrieval.metrics import evaluate, trec_eval_available

RETRIEVAL_KEYS = ("ndcg_10", "recall_at_k", "rr")
_ANSWER = re.compile(r"ANSWER\s*:\s*(.+)", re.IGNORECASE)


def require_trec_eval() -> None:
    """One line when pytrec_eval is missing."""
    if not trec_eval_available():
        raise PrerequisiteError(
            "docket/erm_retrieval needs pytrec_eval: pip install 'docket[retrieval]' "
            "(pytrec-eval-terrier)"
        )


def _metrics() -> dict[str, list[Any]]:
    return {key: [mean(), stderr(), grouped(mean(), "docs", all=False)] for key in RETRIEVAL_KEYS}


@scorer(metrics=_metrics())
def retrieval_scorer(k: int = 20) -> Scorer:
    """nDCG@10, Recall@k and reciprocal rank of the sample's ranking against its qrels.

    Args:
        k: Cut-off of Recall@k.

    Returns:
        A scorer of the ranking the solver stored, one value per measure.
    """

    async def score(state: TaskState, target: Target) -> Score:
        ranking = list(state.store.get("ranking") or [])
        qrels = {str(state.sample_id): dict(state.metadata["relevant"])}
        values = evaluate(qrels, {str(state.sample_id): ranking}, k)[str(state.sample_id)]
        relevant = [d for d, g in qrels[str(state.sample_id)].items() if g > 0]
        ranks = [ranking.index(d) + 1 for d in relevant if d in ranking]
        return Score(
            value=values,
            explanation=(
                f"relevant {relevant} at ranks {ranks or 'none'} of {len(ranking)}; "
                f"top 3: {ranking[:3]}"
            ),
        )

    return score


def normalise(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in string.punctuation)
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def parse_answer(completion: str) -> str | None:
    """The text after the last `ANSWER:` (None when there is none)."""
    found = _ANSWER.findall(completion)
    return found[-1].strip() if found else None


@scorer(metrics=[accuracy(), stderr(), grouped(accuracy(), "docs", all=False)])
def answer_scorer() -> Scorer:
    """Exact match (normalised) of the `ANSWER:` line with any accepted answer.

    Returns:
        A scorer with CORRECT or INCORRECT and the parsed answer.
    """

    async def score(state: TaskState, target: Target) -> Score:
        answer = parse_answer(state.output.completion)
        accepted = {normalise(t) for t in target.target}
        ok = answer is not None and normalise(answer) in accepted
        found = state.store.get("gold_in_passages")
        return Score(
            value=CORRECT if ok else INCORRECT,
            answer=answer,
            explanation=(
                f"answer {answer!r} vs {sorted(target.target)}; a relevant passage was "
                f"{'' if found else 'not '}among the {state.store.get('passages', 0)} given"
            ),
            metadata={"gold_in_passages": bool(found)},
        )

    return score
