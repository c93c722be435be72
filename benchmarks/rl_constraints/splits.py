"""Private test splits of `docket/rl_constraints` (`docket generate rl_constraints`).

The shipped family (words of 3-5 letters over a-f, 2-3 constraints) has only 1530 distinct
instructions, and the RL runner trains on every one of them but the 200 shipped ones, so a
private split drawn from that family would hold instructions a trained checkpoint has seen. A
private split is therefore drawn from the same letters and constraint kinds with words of 3-7
letters and 2-4 constraints, and keeps only instructions *outside* the shipped family
(`in_public_family`): four constraints at once, or `len=6` / `len=7`. Nothing public (the
runner's training draws, the shipped split) can hold one of its instructions; what it measures
is composing the same constraints beyond the lengths and counts that were trained.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import combinations, product
from pathlib import Path

from docket.methods.rl.tasks.base import Problem, write_jsonl
from docket.methods.rl.tasks.constraints import KINDS, Constraint, ConstraintsFamily

SPLIT_FILE = "test.jsonl"
SPLIT_SIZE = 200
PUBLIC = ConstraintsFamily()
#: The wider family private instructions are drawn from (the same letters and kinds).
PRIVATE = ConstraintsFamily(lengths=(3, 7), most=4)


def in_public_family(constraints: Sequence[Constraint]) -> bool:
    """Whether the shipped family (`ConstraintsFamily()`) can draw this instruction.

    It draws 2-3 constraints of distinct kinds read off a word of 3-5 letters, so an instruction
    is in it exactly when it has 2 or 3 constraints and any `len=` asks 3, 4 or 5 letters (a
    consistent set of start/end/has/no letters always fits a word of 3 letters).

    Args:
        constraints: The instruction's constraints.

    Returns:
        True when the public family can draw it.
    """
    low, high = PUBLIC.lengths
    lengths = [int(c["arg"]) for c in constraints if c["kind"] == "len"]
    return 2 <= len(constraints) <= PUBLIC.most and all(low <= n <= high for n in lengths)


def public_prompts() -> set[str]:
    """Every instruction the shipped family can draw, enumerated (1530 of them).

    Returns:
        Their prompts (`len=4 start=b no=e >`).
    """
    letters = PUBLIC.letters
    lengths = [str(n) for n in range(PUBLIC.lengths[0], PUBLIC.lengths[1] + 1)]
    found = set()
    for count in range(2, PUBLIC.most + 1):
        for kinds in combinations(KINDS, count):
            choices = [lengths if kind == "len" else letters for kind in kinds]
            for args in product(*choices):
                chosen = dict(zip(kinds, args, strict=True))
                present = {chosen.get(k) for k in ("start", "end", "has")}
                if "no" in chosen and chosen["no"] in present:
                    continue  # a letter both required and forbidden: no witness word
                found.add(" ".join(f"{k}={a}" for k, a in chosen.items()) + " >")
    return found


def private_problems(seed: int, size: int) -> list[Problem]:
    """`size` distinct instructions outside the public family, deterministic in `seed`.

    Args:
        seed: The secret seed's integer.
        size: Instructions to draw.

    Returns:
        Rows with opaque ids (random hex, not an index or the seed), prompt, constraints and
        the witness word they were read off.

    Raises:
        ValueError: `size` below 1.
    """
    if size < 1:
        raise ValueError(f"--size {size} must be at least 1")
    rng = random.Random(seed)
    rows: list[Problem] = []
    seen: set[str] = set()
    while len(rows) < size:
        problem = PRIVATE.problem(rng)
        constraints = problem["constraints"]
        if len(constraints) < 2 or in_public_family(constraints) or problem["prompt"] in seen:
            continue
        seen.add(problem["prompt"])
        rows.append({"id": f"rc-{rng.getrandbits(48):012x}", **problem})
    return rows


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a private test split (`docket generate rl_constraints`) for `-T data=DIR`.

    Args:
        seed: The secret seed's integer (`docket.core.splits.secret_seed`).
        out: The directory to write `test.jsonl` into.
        size: Instructions (default: 200, the shipped split's size).
    """
    write_jsonl(private_problems(seed, SPLIT_SIZE if size is None else size), out / SPLIT_FILE)
