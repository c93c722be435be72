"""Scorer of docket/fed_topics: the first topic label the completion names."""

from __future__ import annotations

import re

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from docket.benchmarks.fed_topics.dataset import LABELS

_LABEL = re.compile(r"\b(" + "|".join(LABELS) + r")\b", re.IGNORECASE)


def first_label(completion: str) -> str | None:
    """The first label word in `completion` (lower case), None when it names none."""
    found = _LABEL.search(completion)
    return found.group(1).lower() if found else None


@scorer(metrics=[accuracy(), stderr()])
def topic_label() -> Scorer:
    """CORRECT when the first label the answer names is the target.

    Returns:
        A scorer with CORRECT or INCORRECT and the label named as the answer.
    """

    async def score(state: TaskState, target: Target) -> Score:
        answer = first_label(state.output.completion)
        return Score(
            value=CORRECT if answer == target.text else INCORRECT,
            answer=answer or "",
            explanation=f"named {answer!r}, expected {target.text!r}",
        )

    return score
