"""Validation of options, with one clear error line naming the option and what it takes.

- Task arguments (`-T name=value`, a benchmark's `@task` parameters): `checked`, `one_of`,
  `positive`, `names` raise `PrerequisiteError` (Inspect prints its one line).
- Method knobs (`-M name=value` of a method's model provider): `integer`, `real`, `choice`,
  `flag` read a knob from the `-M` mapping and raise `ValueError`. `-M` values arrive as YAML
  scalars from the CLI (`-M threshold=0.9` is a float) or as anything from Python; these accept
  numbers written as strings too.
- Policy arguments (`-M key=value` of `docket/scripted`): `converted` applies the declared type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from docket.core.inspect_private import PrerequisiteError

T = TypeVar("T")


def checked(task: str, name: str, value: object, kind: type[T]) -> T:
    """A task argument of type `kind` (ints accepted for floats).

    Args:
        task: The task's name, which starts the error line.
        name: The argument's name (`-T name=...`).
        value: The value passed.
        kind: The type the argument takes.

    Returns:
        `value` (an int converted to float when `kind` is float).

    Raises:
        PrerequisiteError: `value` is not a `kind` (a bool is not an int).
    """
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # type: ignore[return-value]
    if not ok:
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} must be {kind.__name__}, got {type(value).__name__}"
        )
    return value  # type: ignore[return-value]


def one_of(task: str, name: str, value: object, accepted: Iterable[str]) -> str:
    """A task argument that is one of `accepted`.

    Args:
        task: The task's name, which starts the error line.
        name: The argument's name (`-T name=...`).
        value: The value passed.
        accepted: The accepted values.

    Returns:
        `value` as a string.

    Raises:
        PrerequisiteError: `value` is not accepted (the line lists the accepted values).
    """
    options = list(accepted)
    if value not in options:
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} is not accepted; choose one of: {', '.join(options)}"
        )
    return str(value)


def positive(task: str, name: str, value: object) -> int:
    """A task argument that is an int >= 1.

    Args:
        task: The task's name, which starts the error line.
        name: The argument's name (`-T name=...`).
        value: The value passed.

    Returns:
        `value`.

    Raises:
        PrerequisiteError: `value` is not an int or is below 1.
    """
    number = checked(task, name, value, int)
    if number < 1:
        raise PrerequisiteError(f"{task}: -T {name}={number} must be at least 1")
    return number


def names(task: str, name: str, value: object, accepted: Iterable[str]) -> list[str]:
    """A comma-separated list of `accepted` names as a list.

    Accepts what `inspect eval -T name=a,b` passes (Inspect splits unquoted commas into a list)
    and a plain "a,b" string from Python; anything else, an empty list or an unknown name is one
    clear error listing the accepted names.

    Args:
        task: The task's name, which starts the error line.
        name: The argument's name (`-T name=...`).
        value: The value passed.
        accepted: The accepted names.

    Returns:
        The chosen names, stripped, in the order given.

    Raises:
        PrerequisiteError: `value` is not names, names none or names an unknown one.
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


def _bad(method: str, name: str, value: Any, wanted: str) -> ValueError:
    return ValueError(f"-M method={method}: -M {name}={value!r} is not valid ({wanted})")


def integer(
    method: str,
    knobs: Mapping[str, Any],
    name: str,
    default: int,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """An integer knob within [minimum, maximum].

    Args:
        method: The method's name (`-M method=...`), which starts the error line.
        knobs: The `-M` mapping.
        name: The knob's name.
        default: The value when `knobs` lacks `name`.
        minimum: The smallest accepted value (None: no bound).
        maximum: The largest accepted value (None: no bound).

    Returns:
        The knob's value.

    Raises:
        ValueError: The value is not an integer (a bool is not) or out of bounds.
    """
    value = knobs.get(name, default)
    wanted = "an integer" + (f" >= {minimum}" if minimum is not None else "")
    if maximum is not None:
        wanted += f" and <= {maximum}"
    if isinstance(value, bool):
        raise _bad(method, name, value, wanted)
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise _bad(method, name, value, wanted) from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _bad(method, name, value, wanted)
    return number


def real(
    method: str,
    knobs: Mapping[str, Any],
    name: str,
    default: float,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    """A float knob within [minimum, maximum].

    Args:
        method: The method's name (`-M method=...`), which starts the error line.
        knobs: The `-M` mapping.
        name: The knob's name.
        default: The value when `knobs` lacks `name`.
        minimum: The smallest accepted value (None: no bound).
        maximum: The largest accepted value (None: no bound).

    Returns:
        The knob's value.

    Raises:
        ValueError: The value is not a number (NaN and bools are not) or out of bounds.
    """
    value = knobs.get(name, default)
    wanted = "a number"
    if minimum is not None and maximum is not None:
        wanted += f" in [{minimum:g}, {maximum:g}]"
    elif minimum is not None:
        wanted += f" >= {minimum:g}"
    if isinstance(value, bool):
        raise _bad(method, name, value, wanted)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(method, name, value, wanted) from None
    if number != number or (minimum is not None and number < minimum):
        raise _bad(method, name, value, wanted)
    if maximum is not None and number > maximum:
        raise _bad(method, name, value, wanted)
    return number


def choice(
    method: str, knobs: Mapping[str, Any], name: str, default: str, accepted: Sequence[str]
) -> str:
    """A knob that is one of `accepted`.

    Args:
        method: The method's name (`-M method=...`), which starts the error line.
        knobs: The `-M` mapping.
        name: The knob's name.
        default: The value when `knobs` lacks `name`.
        accepted: The accepted values.

    Returns:
        The knob's value, stripped.

    Raises:
        ValueError: The value is not accepted (the line lists the accepted values).
    """
    value = str(knobs.get(name, default)).strip()
    if value not in accepted:
        raise _bad(method, name, knobs.get(name), "one of " + ", ".join(accepted))
    return value


def flag(method: str, knobs: Mapping[str, Any], name: str, default: bool) -> bool:
    """A boolean knob (true/false, yes/no, 1/0, on/off).

    Args:
        method: The method's name (`-M method=...`), which starts the error line.
        knobs: The `-M` mapping.
        name: The knob's name.
        default: The value when `knobs` lacks `name`.

    Returns:
        The knob's value.

    Raises:
        ValueError: The value is none of the accepted spellings.
    """
    value = knobs.get(name, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise _bad(method, name, value, "true or false")


def converted(owner: str, key: str, value: Any, kind: type[T]) -> T:
    """A `-M key=value` converted by its declared type (`kind(value)`).

    Args:
        owner: What takes the option (e.g. `policy=oracle`), which starts the error line.
        key: The option's name.
        value: The value passed.
        kind: The declared type, called on `value`.

    Returns:
        `kind(value)`.

    Raises:
        ValueError: `kind` does not accept `value` (the line shows at most 60 characters of it).
    """
    try:
        return kind(value)  # type: ignore[call-arg]
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{owner}: -M {key}={value!r:.60} must be {kind.__name__}") from None
