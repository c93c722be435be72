"""Task argument validation (`benchmarks/common/args.py`) on values of any type."""

from __future__ import annotations

from docket.benchmarks.common.args import checked, choice, positive
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai._util.error import PrerequisiteError
from prop_strategies import JSON_VALUES, one_line

VALUES = st.one_of(JSON_VALUES, st.text(max_size=10).map(lambda t: t + "\n"), st.integers(-3, 3))
LINE_CHARS = st.characters(blacklist_characters="\n")
KINDS = st.sampled_from([int, float, str, bool, list, dict])


@settings(max_examples=200)
@given(VALUES, KINDS)
def test_checked_returns_the_kind_or_one_error_naming_task_and_arg(
    value: object, kind: type
) -> None:
    try:
        result: object = checked("docket/x", "n", value, kind)
    except PrerequisiteError as ex:
        one_line(str(ex), "docket/x: -T n=", f"must be {kind.__name__}")
        return
    assert isinstance(result, kind)
    assert not (kind in (int, float) and isinstance(result, bool))


@settings(max_examples=150)
@given(VALUES, st.lists(st.text(LINE_CHARS, min_size=1, max_size=5), min_size=1, max_size=4))
def test_choice_returns_an_accepted_value_or_lists_them(value: object, accepted: list[str]) -> None:
    try:
        result = choice("docket/x", "mode", value, accepted)
    except PrerequisiteError as ex:
        one_line(str(ex), "docket/x: -T mode=", "choose one of")
        return
    assert result in accepted


@settings(max_examples=150)
@given(VALUES)
def test_positive_returns_an_int_of_at_least_one_or_one_error(value: object) -> None:
    try:
        result = positive("docket/x", "limit", value)
    except PrerequisiteError as ex:
        one_line(str(ex), "docket/x: -T limit=")
        return
    assert type(result) is int and result >= 1
