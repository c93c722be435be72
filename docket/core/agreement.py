"""Exact agreement of predictions with gold answers: the score of the benchmarks' attackers."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def match_share(predictions: Sequence[Hashable], answers: Sequence[Hashable]) -> float:
    """Share of predictions equal to their answers.

    Args:
        predictions: One prediction per item.
        answers: The gold answers, in the same order (as many as `predictions`).

    Returns:
        The share (0.0 when there are no items).

    Raises:
        ValueError: The two sequences differ in length.
    """
    pairs = list(zip(predictions, answers, strict=True))
    return sum(p == a for p, a in pairs) / len(pairs) if pairs else 0.0
