"""Generated arithmetic chains: `Start at 7, add 5, then multiply by 3. What do you get?`.

Start values 1-9, two or three steps (add or subtract 1-9, multiply by 2-9; a subtraction never
goes below 0), drawn from a seeded generator; each split has its own seed, so `train` (SAR's
problems), `pretrain` (the initial student's corpus) and `test` do not depend on each other
(`disjoint` drops from one list the problems another holds).
"""

from __future__ import annotations

import random

from inspect_ai.dataset import Sample

from docket.benchmarks.toy_math.reference import Chain, question

SPLITS = {"test": 11, "train": 23, "pretrain": 37}


def chains(count: int, seed: int) -> list[Chain]:
    """`count` distinct chains from a seeded generator."""
    rng = random.Random(seed)
    out: dict[Chain, None] = {}
    while len(out) < count:
        start, value, steps = rng.randint(1, 9), 0, []
        value = start
        for _ in range(rng.choice((2, 2, 3))):
            op = rng.choice("+-*")
            operand = rng.randint(2, 9) if op == "*" else rng.randint(1, 9)
            if op == "-" and operand > value:
                op = "+"
            if op == "*" and value * operand > 200:
                op = "+"
            value = (
                value + operand if op == "+" else value - operand if op == "-" else value * operand
            )
            steps.append((op, operand))
        out.setdefault(Chain(start, tuple(steps)))
    return list(out)


def split_chains(split: str, count: int) -> list[Chain]:
    """The first `count` chains of a split (test problems never appear in train or pretrain)."""
    if split == "test":
        return chains(count, SPLITS["test"])
    held = set(chains(400, SPLITS["test"]))
    return [c for c in chains(count + 400, SPLITS[split]) if c not in held][:count]


def to_sample(index: int, chain: Chain) -> Sample:
    """One problem; the target is the final value."""
    return Sample(
        id=f"p{index:04d}",
        input=question(chain),
        target=str(chain.answer),
        metadata={"start": chain.start, "steps": [list(s) for s in chain.steps]},
    )
