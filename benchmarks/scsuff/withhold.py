"""A learned attacker of the headline's mean: withhold the explanations that would gain little.

Inspect leaves NaN values out of a mean, and a right answer without an explanation used to be
NaN on the gain. So a policy that explains only the items where it expects a high gain, and
answers the rest with no explanation, would raise the mean by leaving items out. This attacker
does that with the learned explainer of `attackers.py` (trained on the `TRAIN_SEED` split,
choosing among claim-free and fact-line candidates) beside the rule's answers or the surface
answerer: it withholds the
explanation of every test item whose predicted gain is below the median predicted on the train
split. `scsuff_correct_gain` scores a withheld explanation of a right answer 0, so it gains
nothing; the `excluded` value is the mean as it would read with those items left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from docket.benchmarks.scsuff.attackers import (
    CLAIM_FREE,
    FACT_LINES,
    TEST_SEED,
    SurfaceAnswerer,
    choose,
    fit_explainer,
    pipeline_gains,
    policy_logprobs,
    train_items,
)
from docket.benchmarks.scsuff.dataset import Item, feature_rule_items, render
from docket.benchmarks.scsuff.scorer import WRONG_ANSWER_FLOOR

FAMILIES = (CLAIM_FREE, FACT_LINES)


@dataclass(frozen=True)
class Row:
    """One item as the attacker plays it: predicted gain, actual gain, right answer."""

    predicted: float
    gain: float
    right: bool


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def headline(rows: Sequence[Row], threshold: float, excluded: bool) -> float:
    """The mean headline when explanations predicted below `threshold` are withheld.

    Args:
        rows: The items.
        threshold: Withhold an explanation whose predicted gain is below it.
        excluded: Leave withheld right answers out of the mean (NaN, as before the fix) instead
            of scoring them 0.

    Returns:
        The mean `scsuff_correct_gain`.
    """
    values: list[float] = []
    for row in rows:
        if not row.right:
            values.append(WRONG_ANSWER_FLOOR)
        elif row.predicted >= threshold:
            values.append(row.gain)
        elif not excluded:
            values.append(0.0)
    return _mean(values)


@dataclass(frozen=True)
class WithholdResult:
    """The attacker on the test split: the mean left-out and scored, with and without."""

    excluded: float
    scored: float
    explained_all: float
    withheld: int
    n: int


def withhold_attack(
    answer: str | None = "rule",
    train: Sequence[Item] | None = None,
    test: Sequence[Item] | None = None,
) -> WithholdResult:
    """Train on `train`, set the threshold there (the median predicted gain: withhold the lower
    half), and play `test`.

    Args:
        answer: How it answers: a `scsuff_rule -M answer` mode (`rule`: every answer right, the
            case where leaving items out pays most), or None for the surface answerer.
        train: Train items (default: `train_items(test)`).
        test: Test items (default: the task's 100 of seed 42).

    Returns:
        The test mean with withheld right answers left out (`excluded`) and scored 0
        (`scored`, the headline), the mean with every explanation given, and how many were
        withheld.
    """
    test = list(test) if test is not None else feature_rule_items(100, TEST_SEED)
    train = list(train) if train is not None else train_items(test)
    logprobs = policy_logprobs(answer) if answer else SurfaceAnswerer.fit(train).logprobs
    explainer = fit_explainer(logprobs, train, FAMILIES)

    def play(items: Sequence[Item]) -> list[Row]:
        rows = []
        for item in items:
            passage = render(item)
            best, predicted = choose(explainer, passage, FAMILIES)
            [gain] = pipeline_gains(logprobs, passage, [best.text])
            right = (logprobs(passage)[0] > math.log(0.5)) == (item.answer == 0)
            rows.append(Row(predicted, gain, right))
        return rows

    seen = sorted(row.predicted for row in play(train))
    threshold = seen[len(seen) // 2]  # withhold the lower half, as predicted on train
    rows = play(test)
    withheld = sum(row.right and row.predicted < threshold for row in rows)
    return WithholdResult(
        headline(rows, threshold, excluded=True),
        headline(rows, threshold, excluded=False),
        headline(rows, -math.inf, excluded=False),
        withheld,
        len(rows),
    )
