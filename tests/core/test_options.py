"""Method knobs and policy arguments (the task-argument validators: test_prop_task_args)."""

import pytest

from docket.core.options import choice, converted, flag, integer, real


def test_knobs_take_numbers_written_as_strings_and_defaults() -> None:
    assert integer("m", {"n": " 7 "}, "n", 3, minimum=1) == 7
    assert integer("m", {}, "n", 3) == 3
    assert real("m", {"t": "0.5"}, "t", 0.9, minimum=0.0, maximum=1.0) == 0.5
    assert choice("m", {"c": " b "}, "c", "a", ["a", "b"]) == "b"
    assert flag("m", {"f": "off"}, "f", True) is False


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: integer("m", {"n": 0}, "n", 3, minimum=1), "(an integer >= 1)"),
        (lambda: integer("m", {"n": True}, "n", 3, 1, 9), "(an integer >= 1 and <= 9)"),
        (lambda: real("m", {"t": "nan"}, "t", 0.5, 0.0, 1.0), "(a number in [0, 1])"),
        (lambda: real("m", {"t": -1}, "t", 0.5, minimum=0.0), "(a number >= 0)"),
        (lambda: choice("m", {"c": "z"}, "c", "a", ["a", "b"]), "(one of a, b)"),
        (lambda: flag("m", {"f": "maybe"}, "f", True), "(true or false)"),
    ],
)
def test_a_bad_knob_is_one_line_naming_the_method_and_knob(call: object, message: str) -> None:
    with pytest.raises(ValueError) as error:
        call()  # type: ignore[operator]
    assert str(error.value).startswith("-M method=m: -M ")
    assert str(error.value).endswith(f"is not valid {message}")


def test_policy_arguments_are_converted_by_their_declared_type() -> None:
    assert converted("policy=p", "n", "4", int) == 4
    with pytest.raises(ValueError, match=r"^policy=p: -M n='x' must be int$"):
        converted("policy=p", "n", "x", int)
