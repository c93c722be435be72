"""Rows as text, AnoLLM style: `name is value, name is value, ...` in a chosen column order.

Numbers are written with a fixed number of decimals per column (chosen from the training data,
so every value of a column has the same form: consistent tokens), categories as their label.
`serialize` also returns the character spans of the values, so a score can count only the
value tokens. `parse` inverts `serialize` for any column order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SEPARATOR = ", "
IS = " is "

Value = float | str


@dataclass(frozen=True)
class Column:
    """A column: its name, kind and (numeric) decimals."""

    name: str
    kind: str  # "numeric" or "categorical"
    decimals: int = 2

    def __post_init__(self) -> None:
        if self.kind not in ("numeric", "categorical"):
            raise ValueError(f"column {self.name!r}: kind must be numeric or categorical")
        if not self.name or SEPARATOR in self.name or IS in self.name or "\n" in self.name:
            raise ValueError(f"column name {self.name!r} must be non-empty, without ', ' or ' is '")

    def format(self, value: Value) -> str:
        """The value as text."""
        if self.kind == "numeric":
            return f"{float(value):.{self.decimals}f}"
        text = str(value)
        if SEPARATOR in text or "\n" in text:
            raise ValueError(f"column {self.name!r}: category {text!r} contains ', ' or a newline")
        return text


def decimals_for(values: Sequence[float], significant: int = 3) -> int:
    """Decimals that keep about `significant` digits of the column's largest magnitude."""
    largest = max((abs(v) for v in values if math.isfinite(v)), default=1.0) or 1.0
    return max(0, significant - 1 - math.floor(math.log10(largest)))


def serialize(
    row: Mapping[str, Value], columns: Sequence[Column], order: Sequence[int] | None = None
) -> tuple[str, list[tuple[int, int]]]:
    """(text, value spans) of a row with its columns in `order` (default: as given)."""
    order = list(range(len(columns))) if order is None else list(order)
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    position = 0
    for i in order:
        column = columns[i]
        head = f"{column.name}{IS}"
        value = column.format(row[column.name])
        start = position + len(head)
        spans.append((start, start + len(value)))
        parts.append(head + value)
        position += len(head) + len(value) + len(SEPARATOR)
    return SEPARATOR.join(parts), spans


def parse(text: str, columns: Sequence[Column]) -> dict[str, Value]:
    """The row a serialized text holds; ValueError naming what is wrong."""
    known = {c.name: c for c in columns}
    row: dict[str, Value] = {}
    for part in text.split(SEPARATOR):
        name, sep, value = part.partition(IS)
        if not sep or name not in known:
            raise ValueError(f"cannot read {part!r} as '<column> is <value>'")
        if name in row:
            raise ValueError(f"column {name!r} appears twice")
        column = known[name]
        if column.kind == "numeric":
            try:
                row[name] = float(value)
            except ValueError:
                raise ValueError(f"column {name!r}: {value!r} is not a number") from None
        else:
            row[name] = value
    missing = [c.name for c in columns if c.name not in row]
    if missing:
        raise ValueError(f"columns missing: {', '.join(missing)}")
    return row


def permutations(n_columns: int, count: int, seed: int) -> list[list[int]]:
    """`count` column orders: the identity first, then seeded random permutations."""
    rng = random.Random(seed)
    orders = [list(range(n_columns))]
    while len(orders) < count:
        order = list(range(n_columns))
        rng.shuffle(order)
        orders.append(order)
    return orders[:count]
