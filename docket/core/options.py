"""Validation of options, with one clear error line naming the option and what it takes.

- Task arguments (`-T name=value`, a benchmark's `@task` parameters): `checked`, `one_of`,
  `positive`, `names` raise `PrerequisiteError` (Inspect prints its one line).
- Method knobs (`-M name=value` of a method's model provider): `integer`, `real`, `choice`,
  `flag` read a knob from the `-M` mapping and raise `ValueError`. `-M` values arrive as YAML
  scalars from the CLI (`-M threshold=0.9` is a float) or as anything from Python; these accept
  numbers written as strings too.
- Policy arguments (`-M key=value` of `docket/scripted`): `converted` applies the declared type.

Types, bounds and accepted values are checked by pydantic (`TypeAdapter`); its multi-line
`ValidationError` never reaches the user: each function turns it into its one line.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError

from docket.core.inspect_private import PrerequisiteError

T = TypeVar("T")

#: Task arguments take exactly their type (no "1" for 1, no True for 1; an int for a float).
_STRICT = ConfigDict(strict=True, arbitrary_types_allowed=True)


@functools.lru_cache(maxsize=256)
def _adapter(kind: Any) -> TypeAdapter[Any]:
    """A cached strict pydantic validator of `kind` (no coercion between types)."""
    return TypeAdapter(kind, config=_STRICT)


@functools.lru_cache(maxsize=256)
def _bounded(
    kind: type[float] | type[int], minimum: float | None, maximum: float | None
) -> TypeAdapter[Any]:
    """A cached lax pydantic validator of a number within [minimum, maximum] (text is read)."""
    if kind is float:
        return TypeAdapter(
            Annotated[float, Field(ge=minimum, le=maximum), AfterValidator(_not_nan)]
        )
    return TypeAdapter(Annotated[int, Field(ge=minimum, le=maximum)])


def _not_nan(number: float) -> float:
    if math.isnan(number):
        raise ValueError("NaN is not a number")
    return number


def _valid(kind: Any, value: object) -> tuple[Any, str | None]:
    """`value` validated as `kind` (strict), and None; or `value` and pydantic's error type."""
    return _check(_adapter(kind), value)


def _check(adapter: TypeAdapter[Any], value: object) -> tuple[Any, str | None]:
    """`value` validated by `adapter`, and None; or `value` and pydantic's first error type."""
    try:
        return adapter.validate_python(value), None
    except ValidationError as error:
        return value, str(error.errors()[0]["type"])


#: An int >= 1 (a `-T` count or limit).
_POSITIVE = Annotated[int, Field(ge=1)]


def _literal(accepted: Sequence[str]) -> Any:
    """`Literal[accepted...]`, the pydantic type of a closed set of strings (none: nothing)."""
    if not accepted:
        return _NOTHING
    return Literal.__getitem__(tuple(accepted))


def _reject(value: object) -> object:
    raise ValueError("nothing is accepted")


#: What an empty set of accepted values takes: nothing.
_NOTHING = Annotated[object, AfterValidator(_reject)]


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
    result, error = _valid(kind, value)
    if error is not None:
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} must be {kind.__name__}, got {type(value).__name__}"
        )
    found: T = result
    return found


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
    result, error = _valid(_literal(options), value)
    if error is not None:
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} is not accepted; choose one of: {', '.join(options)}"
        )
    return str(result)


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
    number, error = _valid(_POSITIVE, value)
    if error == "greater_than_equal":
        raise PrerequisiteError(f"{task}: -T {name}={number} must be at least 1")
    if error is not None:
        checked(task, name, value, int)  # raises: the line saying the type
    return int(number)


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
    items, error = _valid(list[str], value.split(",") if isinstance(value, str) else value)
    if error is not None:
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r} must be comma-separated names from: {', '.join(options)}"
        )
    chosen = [i.strip() for i in items if i.strip()]
    found, unknown = _first_unknown(chosen, options)
    if unknown is not None or not chosen:
        bad = f"unknown {unknown!r}" if unknown is not None else "no names given"
        raise PrerequisiteError(
            f"{task}: -T {name}={value!r}: {bad}; choose from: {', '.join(options)}"
        )
    return list(found)


def _first_unknown(chosen: list[str], options: list[str]) -> tuple[list[str], str | None]:
    """`chosen` validated against `options`, and the first name not among them (or None)."""
    try:
        names_of = _literal(options)
        return _adapter(list[names_of]).validate_python(chosen), None  # type: ignore[valid-type]
    except ValidationError as error:
        return chosen, str(error.errors()[0]["input"])


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
    # an int, or one written as text (" 7 "); pydantic would also take True, 3.0, "3.0", b"3"
    if isinstance(value, bool) or not isinstance(value, (int, str)) or "." in str(value):
        raise _bad(method, name, value, wanted)
    number, error = _check(_bounded(int, minimum, maximum), value)
    if error is not None:
        raise _bad(method, name, value, wanted)
    return int(number)


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
    number, error = _check(_bounded(float, minimum, maximum), value)
    if error is not None:
        raise _bad(method, name, value, wanted)
    return float(number)


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
    value, error = _valid(_literal(accepted), str(knobs.get(name, default)).strip())
    if error is not None:
        raise _bad(method, name, knobs.get(name), "one of " + ", ".join(accepted))
    return str(value)


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
    text, error = _valid(_FLAG, str(value).strip().lower())
    if error is not None:
        raise _bad(method, name, value, "true or false")
    return text in _TRUE


#: The spellings of a boolean knob (pydantic's own bool also takes t/f/y/n; these do not).
_TRUE = ("true", "yes", "1", "on")
_FLAG = Literal["true", "yes", "1", "on", "false", "no", "0", "off"]


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
