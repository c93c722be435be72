"""Scorer of docket/fed_topics: the first topic label the completion names.

What counts as an answer: the first whole-word topic label anywhere in the reply (`Music`,
`It is about music, not food.`, `ANSWER: music`); a reply naming no label is unparsed (the
`unparsed` metric, score metadata `{"parsed": false, "reason": ...}`). Naming several labels
gains nothing: only the first counts.
"""

from __future__ import annotations

import re

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from docket.benchmarks.fed_topics.dataset import LABELS
from docket.core.answers import unparsed

_LABEL = re.compile(r"\b(" + "|".join(LABELS) + r")\b", re.IGNORECASE)


def first_label(completion: str) -> str | None:
    """The first label word in `completion` (lower case), None when it names none."""
    found = _LABEL.search(completion)
    return found.group(1).lower() if found else None


@scorer(metrics=[accuracy(), stderr(), unparsed()])
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
            metadata=(
                {"parsed": True, "form": "label"}
                if answer
                else {"parsed": False, "reason": "names no topic label"}
            ),
        )

    return score
