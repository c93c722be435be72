"""Shared hypothesis strategies: arbitrary JSON, hostile numbers and one-line error checks."""

from __future__ import annotations

import json

from hypothesis import strategies as st

#: Numbers a parser must survive: huge ints (float overflow), NaN, +-inf, -0.0, bools.
HOSTILE_NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=10**308, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
JSON_SCALARS = st.one_of(st.none(), st.text(max_size=20), HOSTILE_NUMBERS)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=12,
)


def json_line(value: object) -> str:
    """`value` as one JSON line (NaN and Infinity written as Python's json writes them)."""
    return json.dumps(value)


#: One line of a JSONL file: valid JSON of any shape, or garbage text.
JSONL_LINES = st.one_of(
    JSON_VALUES.map(json_line), st.text(max_size=40).map(lambda t: " ".join(t.splitlines()))
)


def one_line(message: str, *must_contain: str) -> None:
    """Assert `message` is one non-empty line naming each of `must_contain`."""
    assert message.strip(), "empty error message"
    assert "\n" not in message, f"multi-line error message: {message!r}"
    for part in must_contain:
        assert part in message, f"{part!r} not named in {message!r}"
