"""Test-time RL pseudo-labels (TTRL, the base of ECHO): majority vote over a prompt's sampled
answers; a response earns 1 when its answer equals the majority answer, else 0.

Answer extraction is task-specific and injected (`extract`). Responses without an answer do
not vote and earn 0. Ties go to the answer that appeared first among the responses
(deterministic).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

A = TypeVar("A", bound=Hashable)


def majority_vote(answers: Sequence[A | None]) -> A | None:
    """The most frequent non-None answer (first seen wins ties); None when none voted."""
    votes = Counter(a for a in answers if a is not None)
    if not votes:
        return None
    top = max(votes.values())
    return next(a for a in answers if a is not None and votes[a] == top)


def majority_rewards(answers: Sequence[A | None]) -> tuple[A | None, list[float]]:
    """(pseudo-label, reward per response): 1.0 where the answer is the majority answer."""
    label = majority_vote(answers)
    return label, [1.0 if label is not None and a == label else 0.0 for a in answers]


def pseudo_label_rewards(
    responses: Sequence[str], extract: Callable[[str], A | None]
) -> tuple[A | None, list[float]]:
    """Majority-vote rewards for raw responses, with a task's answer extractor."""
    return majority_rewards([extract(r) for r in responses])
