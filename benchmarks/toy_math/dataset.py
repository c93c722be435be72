"""Generated arithmetic chains: `Start at 7, add 5, then multiply by 3. What do you get?`.

Start values 1-9, two or three steps (add or subtract 1-9, multiply by 2-9; a subtraction never
goes below 0), drawn from a seeded generator; each split has its own seed, so `train` (SAR's
problems), `pretrain` (the initial student's corpus) and `test` do not depend on each other.
`split_chains` drops from `train` and `pretrain` the first `HELD_TEST` test problems, and from
`pretrain` every chain that is, or begins with, one of those or of the first `PUBLIC_REACH`
train problems, so a student pretrained on it has never seen a SAR problem nor its
intermediate values (`sar_attacks.prefix_memory` recalls them wherever a public chain holds them).

`generate_split(seed, out, size)` writes a private test split (`docket generate toy_math`) of
chains none of the public splits hold (the first `PUBLIC_REACH` of each), read back by
`load_split` for `-T data=DIR`.
"""

from __future__ import annotations

import random
from pathlib import Path

from inspect_ai.dataset import Sample

from docket.benchmarks.toy_math.reference import OPS, Chain, question
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import read_jsonl, write_jsonl

SPLITS = {"test": 11, "train": 23, "pretrain": 37}
PROBLEMS_FILE = "problems.jsonl"
#: How many chains of each public split a private split avoids (the experiment uses at most
#: 200 test, 300 train and 3000 pretraining problems by default).
PUBLIC_REACH = {"test": 1000, "train": 1000, "pretrain": 5000}
#: Test problems no train or pretraining problem repeats.
HELD_TEST = 400
#: Share of two-step chains the generator draws (`rng.choice((2, 2, 3))`).
TWO_STEP_SHARE = 2 / 3


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


def begins_with(chain: Chain, held: set[Chain]) -> bool:
    """Whether `chain` is, or its first steps are, one of `held` (a recalled prefix gives its
    intermediate values away)."""
    return any(Chain(chain.start, chain.steps[:n]) in held for n in range(1, len(chain.steps) + 1))


def split_chains(split: str, count: int) -> list[Chain]:
    """The first `count` chains of a split (see the module docstring for what each one avoids)."""
    if split == "test":
        return chains(count, SPLITS["test"])
    held = set(chains(HELD_TEST, SPLITS["test"]))
    if split != "pretrain":
        return [c for c in chains(count + HELD_TEST, SPLITS[split]) if c not in held][:count]
    held |= set(split_chains("train", PUBLIC_REACH["train"]))
    drawn = count + len(held)
    while True:
        kept = [c for c in chains(drawn, SPLITS[split]) if not begins_with(c, held)]
        if len(kept) >= count:
            return kept[:count]
        drawn *= 2


def to_sample(index: int, chain: Chain) -> Sample:
    """One problem; the target is the final value."""
    return Sample(
        id=f"p{index:04d}",
        input=question(chain),
        target=str(chain.answer),
        metadata={"start": chain.start, "steps": [list(s) for s in chain.steps]},
    )


def public_chains() -> set[Chain]:
    """Every chain the public splits can hand out up to `PUBLIC_REACH`."""
    return {c for name, reach in PUBLIC_REACH.items() for c in split_chains(name, reach)}


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a private test split (`docket generate toy_math`) for `-T data=DIR`.

    Args:
        seed: The secret seed's integer (`docket.core.splits.secret_seed`).
        out: The directory to write `problems.jsonl` into.
        size: Problems (default 200, the shipped test size).
    """
    wanted, public = size or 200, public_chains()
    fresh = [c for c in chains(wanted + len(public), seed) if c not in public]
    # The public splits hold many of the few two-step chains, so the fresh ones lean to three
    # steps; keep the generator's share (two steps 2/3 of the time) by drawing each stratum.
    two = round(wanted * TWO_STEP_SHARE)
    short = [c for c in fresh if len(c.steps) == 2][:two]
    long = [c for c in fresh if len(c.steps) != 2][: wanted - len(short)]
    kept = set(short) | set(long)
    rows = [
        {"start": c.start, "steps": [list(step) for step in c.steps]} for c in fresh if c in kept
    ]
    write_jsonl(out / PROBLEMS_FILE, rows)


def load_split(folder: Path) -> list[Chain]:
    """The chains of a split written by `generate_split`; a bad row is one line.

    Args:
        folder: The split's directory.

    Returns:
        Its chains, in order.

    Raises:
        PrerequisiteError: The file is missing, or a row is not a chain.
    """
    path = folder / PROBLEMS_FILE
    out = []
    for number, row in enumerate(read_jsonl(path, "toy_math", ("start", "steps")), 1):
        try:
            steps = tuple((str(op), int(operand)) for op, operand in row["steps"])
            chain = Chain(int(row["start"]), steps)
        except (TypeError, ValueError) as error:
            raise PrerequisiteError(f"toy_math: {path} row {number}: {error}") from None
        if not steps or any(op not in OPS.values() for op, _ in steps):
            raise PrerequisiteError(f"toy_math: {path} row {number}: steps must be +, - or *")
        out.append(chain)
    return out
