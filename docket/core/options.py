"""Validation of task arguments (`-T name=value`), with one clear error line each."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from inspect_ai._util.error import PrerequisiteError

T = TypeVar("T")


def checked(task: str, name: str, value: object, kind: type[T]) -> T:
    """Return `value` if it is a `kind` (ints accepted for floats), else raise a clear error."""
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # type: ignore[return-value]
    if not ok:
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} must be {kind.__name__}, got {type(value).__name__}"
        )
    return value  # type: ignore[return-value]


def choice(task: str, name: str, value: object, accepted: Iterable[str]) -> str:
    """Return `value` if it is one of `accepted`, else raise a clear error listing them."""
    options = list(accepted)
    if value not in options:
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} is not accepted; choose one of: {', '.join(options)}"
        )
    return str(value)


def positive(task: str, name: str, value: object) -> int:
    """Return `value` if it is an int >= 1, else raise a clear error."""
    number = checked(task, name, value, int)
    if number < 1:
        raise PrerequisiteError(f"{task}: -T {name}={number} must be at least 1")
    return number


def names(task: str, name: str, value: object, accepted: Iterable[str]) -> list[str]:
    """A comma-separated list of `accepted` names as a list.

    Accepts what `inspect eval -T name=a,b` passes (Inspect splits unquoted commas into a list)
    and a plain "a,b" string from Python; anything else, an empty list or an unknown name is one
    clear error listing the accepted names.
    """
    options = list(accepted)
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} must be comma-separated names from: {', '.join(options)}"
        )
    chosen = [i.strip() for i in items if i.strip()]
    unknown = [i for i in chosen if i not in options]
    if unknown or not chosen:
        bad = f"unknown {unknown[0]!r}" if unknown else "no names given"
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r}: {bad}; choose from: {', '.join(options)}"
        )
    return chosen
