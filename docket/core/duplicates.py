"""Exact duplicates in data splits, after the normalisation a benchmark chooses.

A benchmark turns each item into a key: `text_key` folds case and whitespace and, where the
benchmark's templates repeat with only their numbers changed, masks every run of digits.
`duplicate_report` counts the test items that repeat an earlier test item and those that a split
a model or an attacker may see (train, pretraining, few-shot demos, the public split) holds.
`distinct_draws` is the generators' side: it draws until it holds `count` items of distinct keys
(reject and redraw), so a deduplicated split keeps its size.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

DIGIT_MASK = "#"
"""What every run of digits becomes under `text_key(..., mask_digits=True)`."""

_DIGITS = re.compile(r"\d+")
#: How many example keys a report keeps for its message.
_EXAMPLES = 3


def text_key(text: str, *, mask_digits: bool = False) -> str:
    """`text` as duplicates are compared: case folded, every whitespace run one space.

    Args:
        text: An item's text (a question, a rendered passage, a page).
        mask_digits: Replace every run of digits with `DIGIT_MASK` (for templates that repeat
            with only their numbers changed, where the numbers do not change the answer).

    Returns:
        The key.
    """
    folded = " ".join(text.casefold().split())
    return _DIGITS.sub(DIGIT_MASK, folded) if mask_digits else folded


@dataclass(frozen=True)
class DuplicateReport:
    """Exact duplicates of one test split, after normalisation."""

    #: Test items whose key an earlier test item has (each extra copy counts once).
    within: int
    #: Test items whose key a seen split holds.
    across: int
    #: Up to three duplicated keys, shortened, for a failure message.
    examples: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        """Every duplicated test item: `within` + `across`."""
        return self.within + self.across

    def __str__(self) -> str:
        shown = "; ".join(self.examples)
        return f"{self.within} repeated within the test split, {self.across} seen" + (
            f" (e.g. {shown})" if shown else ""
        )


def duplicate_report(test: Iterable[Hashable], seen: Iterable[Hashable] = ()) -> DuplicateReport:
    """Count the exact duplicates of a test split's keys.

    Args:
        test: The test items' keys, in order.
        seen: The keys of every split a model or an attacker may see (several splits chained).

    Returns:
        The counts: a test key that repeats an earlier one counts in `within`, a test key a seen
        split holds in `across` (a repeated one that is also seen counts in both).
    """
    held = set(seen)
    earlier: set[Hashable] = set()
    within = across = 0
    examples: list[str] = []
    for key in test:
        repeated, known = key in earlier, key in held
        within += repeated
        across += known
        if (repeated or known) and len(examples) < _EXAMPLES:
            examples.append(repr(key)[:80])
        earlier.add(key)
    return DuplicateReport(within, across, tuple(examples))


def distinct_draws(
    draw: Callable[[int], T],
    count: int,
    key: Callable[[T], Hashable],
    taken: Iterable[Hashable] = (),
    attempts: int = 100,
) -> list[T]:
    """`count` draws whose keys are all different and none in `taken` (reject and redraw).

    Args:
        draw: Draws one item; it gets the position the item would take (0, 1, ...).
        count: Items wanted.
        key: An item's key (`text_key` of what a model reads).
        taken: Keys no item may have (another split's).
        attempts: Draws allowed per wanted item before giving up.

    Returns:
        The items, in draw order; a rejected draw leaves no trace but the random state it used.

    Raises:
        ValueError: `count` items of distinct keys were not found in `attempts * count` draws
            (the generator has fewer distinct items than asked for).
    """
    held = set(taken)
    items: list[T] = []
    for _ in range(attempts * max(count, 1)):
        if len(items) >= count:
            break
        item = draw(len(items))
        item_key = key(item)
        if item_key not in held:
            held.add(item_key)
            items.append(item)
    if len(items) < count:
        raise ValueError(
            f"found only {len(items)} distinct items of {count} in {attempts * count} draws"
        )
    return items
