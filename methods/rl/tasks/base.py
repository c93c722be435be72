"""What the runner and the Inspect tasks need from a verifiable-reward task family."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from docket.core import jsonl

#: One problem: a JSON-serialisable dict with at least "id" and "prompt".
Problem = dict[str, Any]


class TaskFamily(ABC):
    """A generator of problems with a mechanical verifier.

    Splits are deterministic: `split("test")` is the shipped evaluation set (the Inspect task
    reads the same rows from its data file); `split("train")` never repeats a test prompt.
    """

    name: str = ""
    #: Characters a response may need (the tiny tokenizer's alphabet is built from these).
    alphabet: str = ""
    #: Token budget of a response.
    max_new_tokens: int = 8
    #: Seed and size of the shipped test split.
    test_seed: int = 20_261_130
    test_size: int = 200

    @abstractmethod
    def problem(self, rng: random.Random) -> Problem:
        """One random problem (without "id")."""

    @abstractmethod
    def reward(self, problem: Problem, response: str) -> float:
        """The verifiable reward of `response` (1.0 correct, else 0.0)."""

    @abstractmethod
    def demonstration(self, problem: Problem, rng: random.Random, noise: float) -> str:
        """A demonstration response, wrong with probability `noise` (the SFT warm start's noisy
        demonstrations)."""

    @abstractmethod
    def answer(self, response: str) -> Hashable | None:
        """The response's final answer for majority voting (None: no answer)."""

    def stratum(self, response: str) -> int:
        """Stratified GRPO's structural property of a trajectory (default: its length in
        characters, capped at 8)."""
        return min(len(response.strip()), 8)

    def details(self, problem: Problem, response: str) -> dict[str, Any]:
        """Per-sample extras for the scorer (default none)."""
        return {}

    def held_out(self) -> set[str]:
        """The shipped test prompts (never trained on)."""
        if not hasattr(self, "_held_out"):
            self._held_out = {p["prompt"] for p in self.split("test", self.test_size)}
        return self._held_out

    def train_problem(self, rng: random.Random) -> Problem:
        """A random problem whose prompt is not a shipped test prompt."""
        held = self.held_out()
        for _ in range(10_000):
            problem = self.problem(rng)
            if problem["prompt"] not in held:
                return problem
        raise ValueError(f"{self.name}: every drawn problem is a test problem")

    def split(self, name: str, size: int, seed: int | None = None) -> list[Problem]:
        """`size` distinct problems; "test" is seeded by `test_seed`, "train" by `seed` and
        never holds one of the `test_size` shipped test prompts."""
        if name == "test":
            return self._distinct(random.Random(self.test_seed), size, set(), "test")
        if name == "train":
            return self._distinct(random.Random(seed), size, self.held_out(), "train")
        raise ValueError(f"unknown split {name!r} (accepted: train, test)")

    def _distinct(
        self, rng: random.Random, size: int, exclude: set[str], prefix: str
    ) -> list[Problem]:
        rows: list[Problem] = []
        seen = set(exclude)
        attempts = 0
        while len(rows) < size:
            attempts += 1
            if attempts > 100 * size + 1000:
                raise ValueError(f"{self.name}: cannot draw {size} distinct problems")
            problem = self.problem(rng)
            if problem["prompt"] in seen:
                continue
            seen.add(problem["prompt"])
            rows.append({"id": f"{prefix}-{len(rows):05d}", **problem})
        return rows


def write_jsonl(rows: list[Problem], path: Path) -> Path:
    """Rows as JSON lines (keys sorted)."""
    return jsonl.write_jsonl(path, rows, sort_keys=True)


def read_jsonl(path: Path) -> list[Problem]:
    """Rows of a JSONL file; a malformed line is one ValueError naming the file and line."""

    def bad(number: int, ex: jsonl.JsonlLineError) -> ValueError:
        return ValueError(f"{path}:{number}: not JSON ({ex.reason})")

    rows = []
    for number, row in jsonl.parse_lines(Path(path).read_text().splitlines(), bad):
        if not isinstance(row, dict) or "prompt" not in row or "id" not in row:
            raise ValueError(f"{path}:{number}: a row needs 'id' and 'prompt'")
        rows.append(row)
    return rows
