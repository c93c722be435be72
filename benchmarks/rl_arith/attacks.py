"""Blind attackers of `docket/rl_arith` (issue #53 items 3 and 6): they never read the second
operand, so they cannot do the sum.

Fitted on problems drawn from the family's generator (`TRAIN_SEED`, the shipped test prompts
left out), scored on the shipped 200 test problems by exact match:

- `first_operand`: repeats the first number (`rl_arith_first_operand`);
- `offset_prior`: the first number plus the offset (result − first number) most frequent in
  train for the problem's operator: an answer prior that ignores the second operand.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.methods.rl.tasks.arith import ArithFamily

SHIPPED = Path(__file__).parent / "data" / "test.jsonl"
TRAIN_SEED = 2029
TRAIN_SIZE = 2000


@dataclass(frozen=True)
class Row:
    """One attacker's reward on the test problems."""

    name: str
    reward: float


def shipped() -> list[dict[str, Any]]:
    """The shipped test problems."""
    return [json.loads(line) for line in SHIPPED.read_text(encoding="utf-8").splitlines()]


def train_problems(test: Sequence[dict[str, Any]], size: int = TRAIN_SIZE) -> list[dict[str, Any]]:
    """`size` generator problems of `TRAIN_SEED` whose prompts are not test prompts."""
    held, rng, family = {p["prompt"] for p in test}, random.Random(TRAIN_SEED), ArithFamily()
    out: list[dict[str, Any]] = []
    while len(out) < size:
        problem = family.problem(rng)
        if problem["prompt"] not in held:
            out.append(dict(problem))
    return out


def _reward(guesses: Sequence[int], test: Sequence[dict[str, Any]]) -> float:
    return sum(str(g) == p["answer"] for g, p in zip(guesses, test, strict=True)) / len(test)


def attack_rows(test: Sequence[dict[str, Any]] | None = None) -> list[Row]:
    """Every blind attacker's reward on `test` (default: the shipped split).

    Args:
        test: Test problems (fields `a`, `op`, `answer`).

    Returns:
        One row per attacker: first_operand, offset_prior.
    """
    test = list(test) if test is not None else shipped()
    train = train_problems(test)
    offsets = {
        op: Counter(int(p["answer"]) - p["a"] for p in train if p["op"] == op).most_common(1)[0][0]
        for op in "+-"
    }
    return [
        Row("first_operand", _reward([p["a"] for p in test], test)),
        Row("offset_prior", _reward([p["a"] + offsets[p["op"]] for p in test], test)),
    ]
