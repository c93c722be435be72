"""Scorers: per-query nDCG@10 / Recall@k / RR by trec_eval, and the RAG answer's exact match.

What counts as the RAG answer (`docket.core.answers.extract_text`): a `\\boxed{}` value, else
the text of the last `ANSWER:` line (also `Answer:`, `**ANSWER:**`), else the reply's first
line as a bare answer (`Paris`, `The answer is Paris.`), at most 80 characters. It must equal an
accepted answer after SQuAD normalisation: a line listing several candidates matches none.
"""

from __future__ import annotations

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

from docket.core.answers import Extraction, extract_text, parse_metadata, unparsed
from docket.core.inspect_private import PrerequisiteError
from docket.methods.retrieval.metrics import evaluate, trec_eval_available

RETRIEVAL_KEYS = ("ndcg_10", "recall_at_k", "rr")


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
    """The reply's answer (see the module docstring; None when there is none)."""
    return extract_text(completion).value


def answer_matches(completion: str, accepted: list[str]) -> tuple[bool, Extraction]:
    """Whether the reply's answer equals one of `accepted` (normalised), and the extraction.

    Args:
        completion: The reply.
        accepted: The accepted answers.

    Returns:
        (match, extraction); no match when nothing parsed.
    """
    found = extract_text(completion)
    wanted = {normalise(t) for t in accepted}
    return found.value is not None and normalise(found.value) in wanted, found


@scorer(metrics=[accuracy(), stderr(), unparsed(), grouped(accuracy(), "docs", all=False)])
def answer_scorer() -> Scorer:
    """Exact match (normalised) of the reply's answer with any accepted answer.

    Returns:
        A scorer with CORRECT or INCORRECT, the parsed answer, and `parsed` (with `form` or
        `reason`) in the metadata.
    """

    async def score(state: TaskState, target: Target) -> Score:
        ok, found = answer_matches(state.output.completion, list(target.target))
        answer = found.value
        gold = state.store.get("gold_in_passages")
        return Score(
            value=CORRECT if ok else INCORRECT,
            answer=answer,
            explanation=(
                f"answer {answer!r} vs {sorted(target.target)}; a relevant passage was "
                f"{'' if gold else 'not '}among the {state.store.get('passages', 0)} given"
            ),
            metadata={"gold_in_passages": bool(gold), **parse_metadata(found)},
        )

    return score
