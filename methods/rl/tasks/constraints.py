"""Instruction following with mechanically checkable constraints (HiR's setting, toy scale).

An instruction is a list of 2 to 3 constraints on a short lowercase word over `letters`:
`len=N` (exact length), `start=c`, `end=c`, `has=c` (contains), `no=c` (does not contain),
rendered `len=4 start=b has=e >`. Every generated instruction is satisfiable (its constraints
are read off a random word). The binary reward is "all satisfied" (ILA); `cla` is the
satisfied fraction; `render` is HiR's rewrite (the instruction with a subset of constraints).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from .base import Problem, TaskFamily

KINDS: tuple[str, ...] = ("len", "start", "end", "has", "no")

Constraint = dict[str, str]


def render(constraints: Sequence[Constraint]) -> str:
    """The instruction text for `constraints`."""
    return " ".join(f"{c['kind']}={c['arg']}" for c in constraints) + " >"


def check(constraint: Constraint, word: str) -> bool:
    """Whether `word` satisfies `constraint`."""
    kind, arg = constraint["kind"], constraint["arg"]
    if kind == "len":
        return len(word) == int(arg)
    if kind == "start":
        return word.startswith(arg)
    if kind == "end":
        return word.endswith(arg)
    if kind == "has":
        return arg in word
    if kind == "no":
        return arg not in word
    raise ValueError(f"unknown constraint kind {kind!r} (accepted: {', '.join(KINDS)})")


def judge(constraints: Sequence[Constraint], response: str) -> list[bool]:
    """One judgement per constraint on the response's first word."""
    words = response.strip().split()
    word = words[0] if words else ""
    return [check(c, word) for c in constraints]


class ConstraintsFamily(TaskFamily):
    """Words over a small alphabet under 2 to `most` constraints."""

    name = "constraints"
    max_new_tokens = 8

    def __init__(
        self, letters: str = "abcdef", lengths: tuple[int, int] = (3, 5), most: int = 3
    ) -> None:
        self.letters = letters
        self.lengths = lengths
        self.most = most
        self.alphabet = letters + "0123456789=> " + "".join(sorted(set("lenstarthasnod")))

    def problem(self, rng: random.Random) -> Problem:
        word = "".join(rng.choice(self.letters) for _ in range(rng.randint(*self.lengths)))
        kinds = rng.sample(KINDS, rng.randint(2, self.most))
        constraints = []
        for kind in KINDS:  # a fixed order keeps prompts canonical
            if kind not in kinds:
                continue
            if kind == "len":
                arg = str(len(word))
            elif kind == "start":
                arg = word[0]
            elif kind == "end":
                arg = word[-1]
            elif kind == "has":
                arg = rng.choice(word)
            else:
                absent = [c for c in self.letters if c not in word]
                if not absent:
                    continue
                arg = rng.choice(absent)
            constraints.append({"kind": kind, "arg": arg})
        return {"prompt": render(constraints), "constraints": constraints, "witness": word}

    def judgements(self, problem: Problem, response: str) -> list[bool]:
        return judge(problem["constraints"], response)

    def cla(self, problem: Problem, response: str) -> float:
        """The satisfied fraction of the constraints."""
        marks = self.judgements(problem, response)
        return sum(marks) / len(marks) if marks else 0.0

    def reward(self, problem: Problem, response: str) -> float:
        return 1.0 if all(self.judgements(problem, response)) else 0.0

    def canonical(self, constraints: Sequence[Constraint]) -> str:
        """The word a demonstration writes: the length asked (else 4) filled with the first
        allowed letter, then the start, end and contained letters put in place."""
        args = {c["kind"]: c["arg"] for c in constraints}
        fill = next(c for c in self.letters if c != args.get("no"))
        word = [fill] * int(args.get("len", 4))
        if "start" in args:
            word[0] = args["start"]
        if "end" in args:
            word[-1] = args["end"]
        if "has" in args and args["has"] not in word:
            word[1] = args["has"]
        return "".join(word)

    def demonstration(self, problem: Problem, rng: random.Random, noise: float) -> str:
        if rng.random() < noise:
            return "".join(rng.choice(self.letters) for _ in range(rng.randint(*self.lengths)))
        return self.canonical(problem["constraints"])

    def answer(self, response: str) -> Hashable | None:
        words = response.strip().split()
        return words[0] if words else None

    def details(self, problem: Problem, response: str) -> dict[str, object]:
        marks = self.judgements(problem, response)
        return {"cla": sum(marks) / len(marks) if marks else 0.0, "judgements": marks}
