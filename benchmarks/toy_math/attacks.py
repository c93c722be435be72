"""Blind attackers of `docket/toy_math` (issue #53 items 3 and 6): they never do the arithmetic.

Each is fitted on the public `train` split (SAR's problems, disjoint from `test`) and scored on
the shipped `test` split by exact match, as `answer_match` scores a reply:

- `constant_zero`: always 0 (`toy_math_constant`);
- `train_majority`: the train split's most frequent answer;
- `forest`: a random forest over the problem's surface numbers (start, step count, each step's
  operator and operand, padded to three steps) that predicts the answer as a class.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from docket.benchmarks.toy_math.dataset import Chain, split_chains

OPERATORS = "+-*."
MAX_STEPS = 3
TRAIN_SIZE = 1000
TEST_SIZE = 200


def surface(chain: Chain) -> list[int]:
    """The problem's numbers and operators as features (no step is computed)."""
    ops = [op for op, _ in chain.steps] + ["."] * (MAX_STEPS - len(chain.steps))
    operands = [n for _, n in chain.steps] + [0] * (MAX_STEPS - len(chain.steps))
    return [chain.start, len(chain.steps), *(OPERATORS.index(o) for o in ops), *operands]


@dataclass(frozen=True)
class Row:
    """One attacker's accuracy on the test split."""

    name: str
    accuracy: float


def _accuracy(predicted: Sequence[int], test: Sequence[Chain]) -> float:
    return sum(p == c.answer for p, c in zip(predicted, test, strict=True)) / len(test)


def attack_rows(
    train: Sequence[Chain] | None = None, test: Sequence[Chain] | None = None
) -> list[Row]:
    """Every blind attacker's accuracy, trained on `train`, scored on `test`.

    Args:
        train: Train chains (default: the first 1 000 of the public train split).
        test: Test chains (default: the shipped 200 test problems).

    Returns:
        One row per attacker: constant_zero, train_majority, forest.
    """
    from sklearn.ensemble import RandomForestClassifier

    train = list(train) if train is not None else split_chains("train", TRAIN_SIZE)
    test = list(test) if test is not None else split_chains("test", TEST_SIZE)
    majority = Counter(c.answer for c in train).most_common(1)[0][0]
    forest = RandomForestClassifier(n_estimators=300, random_state=0)
    forest.fit([surface(c) for c in train], [c.answer for c in train])
    guessed = [int(v) for v in forest.predict([surface(c) for c in test])]
    return [
        Row("constant_zero", _accuracy([0] * len(test), test)),
        Row("train_majority", _accuracy([majority] * len(test), test)),
        Row("forest", _accuracy(guessed, test)),
    ]
