"""The no-reasoning attackers of `docket/rl_constraints` (README.md: the chance row is the best).

`first_letter_fill` reads one letter and one number: it repeats the first letter that a
`start=`, `end=` or `has=` constraint names, as many times as `len=` asks (`FALLBACK_LENGTH`
without one), and with no such letter repeats the first of the alphabet that no `no=` forbids.
It never checks two constraints against each other, yet satisfies every instruction whose
positive constraints name one letter. `nearest_witness` (the learned attacker) copies the
witness word of the most similar train instruction; on the shipped split it is the strongest
and sets the chance row (`attack_rows`, `scripts/chance.py`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from docket.methods.rl.tasks.base import Problem
from docket.methods.rl.tasks.constraints import KINDS, Constraint, ConstraintsFamily, judge

LETTERS = "abcdef"
FALLBACK_LENGTH = 4
_CONSTRAINT = re.compile(r"\b(len|start|end|has|no)=(\w+)")


def first_letter_fill(prompt: str) -> str:
    """The asked length filled with the first letter a positive constraint names.

    Args:
        prompt: The instruction (`len=4 start=b no=e >`).

    Returns:
        One word, e.g. `bbbb`.
    """
    found = _CONSTRAINT.findall(prompt)
    length = next((int(arg) for kind, arg in found if kind == "len"), FALLBACK_LENGTH)
    named = [arg for kind, arg in found if kind in ("start", "end", "has")]
    forbidden = {arg for kind, arg in found if kind == "no"}
    letter = named[0] if named else next((c for c in LETTERS if c not in forbidden), "a")
    return letter * length


#: Train instructions the learned attackers are fitted on (the runner's `split("train")`, seed 0).
TRAIN_SIZE = 1000


@dataclass(frozen=True)
class Row:
    """One blind attacker's reward on a test split."""

    name: str
    reward: float


def train_problems(size: int = TRAIN_SIZE, seed: int = 0) -> list[Problem]:
    """The RL runner's train split (never a shipped test instruction)."""
    return ConstraintsFamily().split("train", size, seed=seed)


def shipped() -> list[Problem]:
    """The 200 shipped test instructions."""
    return ConstraintsFamily().split("test", 200)


def one_hot(constraints: Sequence[Constraint]) -> list[float]:
    """What the learned attacker reads: one 0/1 per (kind, value) of the instruction."""
    present = {(c["kind"], c["arg"]) for c in constraints}
    return [float((kind, value) in present) for kind, value in _VOCABULARY]


_VOCABULARY = [("len", str(n)) for n in range(3, 8)] + [
    (kind, letter) for kind in KINDS[1:] for letter in LETTERS
]


def nearest_witness(train: Sequence[Problem], test: Sequence[Problem]) -> list[str]:
    """The learned attacker of issue #53 item 6: for each test instruction, the witness word of
    the train instruction nearest to it (1-nearest-neighbour over `one_hot`, Hamming distance;
    ties: the first in train). It never checks a word against a constraint."""
    import numpy as np

    known = np.array([one_hot(p["constraints"]) for p in train])
    asked = np.array([one_hot(p["constraints"]) for p in test])
    nearest = (asked[:, None, :] != known[None, :, :]).sum(axis=2).argmin(axis=1)
    return [str(train[int(i)]["witness"]) for i in nearest]


def majority_witness(train: Sequence[Problem]) -> str:
    """The blind prior: the train split's most frequent witness word (ties: the first seen)."""
    return Counter(str(p["witness"]) for p in train).most_common(1)[0][0]


def _reward(words: Sequence[str], test: Sequence[Problem]) -> float:
    return sum(all(judge(p["constraints"], w)) for w, p in zip(words, test, strict=True)) / len(
        test
    )


def attack_rows(
    train: Sequence[Problem] | None = None, test: Sequence[Problem] | None = None
) -> list[Row]:
    """Every blind attacker's reward on `test` (default the shipped split), fitted on `train`
    (default `train_problems()`)."""
    train = train_problems() if train is None else train
    test = shipped() if test is None else test
    constant = majority_witness(train)
    return [
        Row("constant", _reward(["aaaa"] * len(test), test)),
        Row("majority_witness", _reward([constant] * len(test), test)),
        Row("first_letter_fill", _reward([first_letter_fill(p["prompt"]) for p in test], test)),
        Row("nearest_witness", _reward(nearest_witness(train, test), test)),
    ]
