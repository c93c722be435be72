"""Rows as text: round trips in any column order, value spans, consistent numbers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docket.methods.anomaly.serialize import (
    Column,
    decimals_for,
    parse,
    permutations,
    serialize,
)

COLUMNS = [
    Column("mean radius", "numeric", 2),
    Column("store", "categorical"),
    Column("quantity", "numeric", 0),
]
ROWS = st.fixed_dictionaries(
    {
        "mean radius": st.floats(-1e4, 1e4, allow_nan=False),
        "store": st.sampled_from(["alder", "birch", "north-east 7", "x"]),
        "quantity": st.integers(-50, 50).map(float),
    }
)


@given(ROWS, st.permutations(range(3)))
def test_parse_inverts_serialize_in_every_column_order(row: dict, order: list[int]) -> None:
    text, spans = serialize(row, COLUMNS, order)
    back = parse(text, COLUMNS)
    assert back == {
        "mean radius": float(f"{row['mean radius']:.2f}"),
        "store": row["store"],
        "quantity": row["quantity"],
    }
    assert serialize(back, COLUMNS, order)[0] == text
    values = [text[a:b] for a, b in spans]
    assert values == [COLUMNS[i].format(row[COLUMNS[i].name]) for i in order]


def test_serialized_form() -> None:
    row: dict[str, float | str] = {"mean radius": 14.127, "store": "alder", "quantity": 3.0}
    assert (
        serialize(row, COLUMNS, [2, 0, 1])[0]
        == "quantity is 3, mean radius is 14.13, store is alder"
    )


def test_bad_text_and_bad_names_are_one_clear_error() -> None:
    with pytest.raises(ValueError, match="columns missing: quantity"):
        parse("mean radius is 1.00, store is x", COLUMNS)
    with pytest.raises(ValueError, match="not a number"):
        parse("mean radius is abc, store is x, quantity is 1", COLUMNS)
    with pytest.raises(ValueError, match="appears twice"):
        parse("store is x, store is y", COLUMNS)
    with pytest.raises(ValueError, match="without ', ' or ' is '"):
        Column("a is b", "numeric")


def test_decimals_keep_three_significant_digits_and_orders_start_with_the_identity() -> None:
    assert decimals_for([0.0123, 0.05]) == 4
    assert decimals_for([14.1, 28.0]) == 1
    assert decimals_for([2500.0]) == 0
    orders = permutations(5, 4, seed=1)
    assert orders[0] == [0, 1, 2, 3, 4] and all(sorted(o) == list(range(5)) for o in orders)
    assert orders == permutations(5, 4, seed=1)
