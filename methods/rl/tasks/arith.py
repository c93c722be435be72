"""Multi-digit arithmetic with an exact-match verifier: `47+85=` → `132`, `90-38=` → `52`.

Operands have up to `digits` digits; subtraction keeps the result non-negative. The prompt is
the bare expression (what the tiny checkpoint is trained on); the verifier reads the first
integer of the response.
"""

from __future__ import annotations

import random
import re
from collections.abc import Hashable

from .base import Problem, TaskFamily

_INTEGER = re.compile(r"-?\d+")


def first_integer(response: str) -> int | None:
    """The first integer in `response` (None when there is none)."""
    match = _INTEGER.search(response)
    return int(match.group()) if match else None


class ArithFamily(TaskFamily):
    """Two-operand addition and subtraction."""

    name = "arith"
    alphabet = "0123456789+-="
    max_new_tokens = 5

    def __init__(self, digits: int = 3, digits_b: int = 1, ops: str = "+-") -> None:
        self.digits = digits
        self.digits_b = digits_b
        self.ops = ops

    def problem(self, rng: random.Random) -> Problem:
        a, b = rng.randint(0, 10**self.digits - 1), rng.randint(0, 10**self.digits_b - 1)
        op = rng.choice(self.ops)
        if op == "-" and b > a:
            a, b = b, a
        result = a + b if op == "+" else a - b
        return {"prompt": f"{a}{op}{b}=", "a": a, "b": b, "op": op, "answer": str(result)}

    def reward(self, problem: Problem, response: str) -> float:
        value = first_integer(response)
        return 1.0 if value is not None and str(value) == str(problem["answer"]) else 0.0

    def demonstration(self, problem: Problem, rng: random.Random, noise: float) -> str:
        answer = str(problem["answer"])
        if rng.random() >= noise:
            return answer
        digits = list(answer)
        spot = rng.randrange(len(digits))
        digits[spot] = rng.choice([d for d in "0123456789" if d != digits[spot]])
        wrong = "".join(digits).lstrip("0") or "0"
        return wrong if wrong != answer else str(int(answer) + 1)

    def answer(self, response: str) -> Hashable | None:
        return first_integer(response)

    def details(self, problem: Problem, response: str) -> dict[str, object]:
        return {"parsed": first_integer(response), "expected": problem["answer"]}
