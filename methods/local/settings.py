"""A method's `-M` knobs as one settings dataclass (the pattern of TRL's configs).

Each knob is a dataclass field declared with `knob(default, help, ...)`: its name is the `-M`
argument, its default applies when the argument is absent, its help says what it does, and its
bounds or choices are checked when it is given. `parse_settings` turns the `-M` values of a run
into the dataclass, with one `ValueError` line naming a bad knob and what it takes. Fields
declared without `knob` (no help) are not knobs: the method sets them per call.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from docket.core import options as parse

#: A knob's own converter: the field values a given `-M` value sets, or None to have the value
#: parsed by the field's type like any other knob.
Converter = Callable[[Any], "dict[str, Any] | None"]

SettingsT = TypeVar("SettingsT")


def knob(
    default: Any,
    help: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: Sequence[str] = (),
    convert: Converter | None = None,
) -> Any:
    """A dataclass field that is a `-M` knob.

    Args:
        default: The value when the knob is not given.
        help: What the knob does (one line).
        minimum: The smallest accepted value of a number.
        maximum: The largest accepted value of a number.
        choices: The accepted values of a text knob.
        convert: A converter for a knob with its own syntax (see `Converter`).

    Returns:
        The `dataclasses.field` carrying the knob's description.
    """
    metadata = {
        "help": help,
        "minimum": minimum,
        "maximum": maximum,
        "choices": tuple(choices),
        "convert": convert,
    }
    return dataclasses.field(default=default, metadata=metadata)


def knob_fields(settings_type: type) -> list[dataclasses.Field[Any]]:
    """The fields of a settings dataclass that are `-M` knobs, in declaration order.

    Args:
        settings_type: A dataclass whose knobs are declared with `knob`.

    Returns:
        Its knob fields (those with a help text).
    """
    return [f for f in dataclasses.fields(settings_type) if "help" in f.metadata]


def knob_names(settings_type: type) -> tuple[str, ...]:
    """The `-M` arguments a settings dataclass accepts.

    Args:
        settings_type: A dataclass whose knobs are declared with `knob`.

    Returns:
        The knob names in declaration order.
    """
    return tuple(f.name for f in knob_fields(settings_type))


def parse_settings(
    method: str, settings_type: type[SettingsT], values: Mapping[str, Any]
) -> SettingsT:
    """The settings of `-M method=<method>` from the run's `-M` values.

    Absent knobs keep their defaults; given ones are checked against their type, bounds and
    choices. A settings dataclass with a `resolve_knobs(given)` method then applies its rules
    between knobs (which knobs were given decides).

    Args:
        method: The method name, as the error messages say it.
        settings_type: The method's settings dataclass.
        values: The `-M` values (YAML scalars from the CLI, anything from Python).

    Returns:
        The settings.

    Raises:
        ValueError: A knob's value is not valid (one line naming it and what it takes).
    """
    hints = typing.get_type_hints(settings_type)
    parsed: dict[str, Any] = {}
    for found in knob_fields(settings_type):
        if found.name in values:
            parsed.update(_parse_knob(method, found, hints[found.name], values))
    settings = settings_type(**parsed)
    if hasattr(settings, "resolve_knobs"):
        resolved: SettingsT = settings.resolve_knobs(frozenset(parsed))
        return resolved
    return settings


def _parse_knob(
    method: str, found: dataclasses.Field[Any], hint: Any, values: Mapping[str, Any]
) -> dict[str, Any]:
    meta, name = found.metadata, found.name
    if meta["convert"] is not None:
        converted: dict[str, Any] | None = meta["convert"](values[name])
        if converted is not None:
            return converted
    kind = _without_none(hint)
    low, high = meta["minimum"], meta["maximum"]
    value: Any
    if meta["choices"]:
        value = parse.choice(method, values, name, str(found.default), meta["choices"])
    elif kind is bool:
        value = parse.flag(method, values, name, bool(found.default))
    elif kind is int:
        value = parse.integer(method, values, name, 0, minimum=low, maximum=high)
    elif kind is float:
        value = parse.real(method, values, name, 0.0, minimum=low, maximum=high)
    else:
        value = str(values[name])
    return {name: value}


def _without_none(hint: Any) -> Any:
    """`int` for `int | None` (and `Optional[int]`); the hint itself otherwise."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        kinds = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return kinds[0] if len(kinds) == 1 else hint
    return hint
