"""Task arguments: the shared validators (`docket/core/options.py`) on values of any type, and
every registered task's every `-T` argument, given what `inspect eval -T name=VALUE` passes: the
task is built, or Inspect prints one line (a `PrerequisiteError`), never a traceback. The same for
`-M` values of docket's model providers."""

from __future__ import annotations

import importlib
import inspect
import time
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from inspect_ai import Task
from inspect_ai.model import get_model

from docket.core.inspect_private import PrerequisiteError, parse_cli_args
from docket.core.options import checked, names, one_of, positive
from docket.sandboxes import sandbox_spec
from tests.properties.prop_strategies import JSON_VALUES, one_line

VALUES = st.one_of(JSON_VALUES, st.text(max_size=10).map(lambda t: t + "\n"), st.integers(-3, 3))
LINE_CHARS = st.characters(blacklist_characters="\n")
KINDS = st.sampled_from([int, float, str, bool, list, dict])
#: What a user types after `-T name=`: words, numbers, lists, paths, YAML.
CLI_VALUES = st.one_of(
    st.sampled_from(["nope", "-1", "0", "1.5", "true", "[1, 2]", "{a: 1}", "a,b", "", "null"]),
    st.text(st.characters(codec="ascii", blacklist_characters="\n\r"), max_size=12),
)
REGISTRY = importlib.import_module("docket._registry")
TASK_ARGS = [
    (name, param)
    for name in REGISTRY.REGISTERED["task"]
    for param in inspect.signature(getattr(REGISTRY, name.split("/", 1)[1])).parameters
]
#: Per-task fixes that belong to the task's own engineer (their error is one line but not a
#: PrerequisiteError, so `inspect eval` prints a traceback). Strict: remove once fixed.
NEEDS_TASK_FIX: dict[tuple[str, str], str] = {
    ("docket/docval_grounding", "data"): "DocvalDataError should be a PrerequisiteError",
    ("docket/docval_teacher", "data"): "DocvalDataError should be a PrerequisiteError",
}


def _cli_value(raw: str) -> Any:
    try:
        return parse_cli_args([f"x={raw}"])["x"]
    except yaml.YAMLError:
        return raw


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
        result = one_of("docket/x", "mode", value, accepted)
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


@settings(max_examples=150)
@given(st.one_of(VALUES, CLI_VALUES.map(lambda v: _cli_value(v))))
@example("fraud,theft")
@example(["fraud", "theft"])
def test_names_accepts_comma_lists_as_inspect_passes_them(value: object) -> None:
    accepted = ["fraud", "theft", "stalking"]
    try:
        result = names("docket/x", "categories", value, accepted)
    except PrerequisiteError as ex:
        one_line(str(ex), "docket/x: -T categories=", "fraud, theft, stalking")
        return
    assert result and set(result) <= set(accepted)


@settings(max_examples=100)
@given(VALUES)
@example("nope")
@example(["bwrap"])
def test_a_bad_sandbox_kind_is_one_line(value: Any) -> None:
    try:
        sandbox_spec(value)
    except PrerequisiteError as ex:
        one_line(str(ex), "-T sandbox=", "accepted: bwrap, docker, k8s")


@pytest.mark.parametrize(
    ("task", "param"),
    [
        pytest.param(t, p, marks=pytest.mark.xfail(strict=True, reason=NEEDS_TASK_FIX[(t, p)]))
        if (t, p) in NEEDS_TASK_FIX
        else (t, p)
        for t, p in TASK_ARGS
    ],
)
def test_every_task_argument_builds_or_fails_in_one_line(task: str, param: str) -> None:
    build = getattr(REGISTRY, task.split("/", 1)[1])
    started = time.perf_counter()
    build()
    costly = time.perf_counter() - started > 0.2  # e.g. a task that indexes its dataset

    @settings(max_examples=3 if costly else 12, deadline=None)
    @given(CLI_VALUES)
    @example("nope")
    @example("-1")
    @example("[1, 2]")
    def check(raw: str) -> None:
        value = _cli_value(raw)
        try:
            built = build(**{param: value})
        except PrerequisiteError as ex:
            one_line(str(ex))
            return
        assert isinstance(built, Task)

    check()


@pytest.mark.parametrize(
    ("model", "args"),
    [
        ("docket/scripted", {"policy": "nope"}),
        ("docket/scripted", {}),
        ("docket/scripted", {"policy": "comply", "bogus": 1}),
        ("docket/nope", {}),
        ("docket/local", {"path": "/nonexistent/checkpoint"}),
    ],
)
def test_bad_model_args_are_one_line(model: str, args: dict[str, Any]) -> None:
    with pytest.raises(PrerequisiteError) as error:
        get_model(model, **args)
    one_line(str(error.value))
