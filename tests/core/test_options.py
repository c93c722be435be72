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


@pytest.mark.parametrize(
    ("call", "line"),
    [
        (lambda: integer("m", {"n": "3.0"}, "n", 3), "-M method=m: -M n='3.0' is not valid"),
        (lambda: integer("m", {"n": 3.0}, "n", 3), "-M method=m: -M n=3.0 is not valid"),
        (lambda: integer("m", {"n": b"3"}, "n", 3), "-M method=m: -M n=b'3' is not valid"),
        (lambda: flag("m", {"f": "t"}, "f", True), "-M method=m: -M f='t' is not valid"),
        (lambda: real("m", {"t": True}, "t", 0.5), "-M method=m: -M t=True is not valid"),
    ],
)
def test_knobs_take_no_more_than_their_spellings(call: object, line: str) -> None:
    """pydantic's lax int and bool would take these; a knob does not."""
    with pytest.raises(ValueError) as error:
        call()  # type: ignore[operator]
    assert str(error.value).startswith(line)


def test_task_arguments_are_strict_and_lists_name_the_first_unknown() -> None:
    from docket.core.inspect_private import PrerequisiteError
    from docket.core.options import checked, names, one_of, positive

    assert checked("t", "x", 2, float) == 2.0 and type(checked("t", "x", 2, float)) is float
    assert names("t", "c", " b , a ,", ["a", "b"]) == ["b", "a"]
    cases = [
        (lambda: checked("t", "n", True, int), "t: -T n=True must be int, got bool"),
        (lambda: checked("t", "n", "1", int), "t: -T n='1' must be int, got str"),
        (lambda: positive("t", "n", 0), "t: -T n=0 must be at least 1"),
        (lambda: positive("t", "n", 1.5), "t: -T n=1.5 must be int, got float"),
        (lambda: one_of("t", "m", "a", []), "t: -T m='a' is not accepted; choose one of: "),
        (lambda: names("t", "c", "a,z,y", ["a"]), "t: -T c='a,z,y': unknown 'z'; choose from: a"),
        (lambda: names("t", "c", ",", ["a"]), "t: -T c=',': no names given; choose from: a"),
    ]
    for call, line in cases:
        with pytest.raises(PrerequisiteError) as error:
            call()
        assert str(error.value) == line
