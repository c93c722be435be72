"""Parse a method plugin's `-M` knobs: one `ValueError` line naming the knob and what it takes.

`-M` values arrive as YAML scalars from the CLI (`-M threshold=0.9` is a float) or as anything
from Python; these helpers accept numbers written as strings too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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
    """An integer knob within [minimum, maximum]."""
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
    """A float knob within [minimum, maximum]."""
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
    """One of `accepted`."""
    value = str(knobs.get(name, default)).strip()
    if value not in accepted:
        raise _bad(method, name, knobs.get(name), "one of " + ", ".join(accepted))
    return value


def flag(method: str, knobs: Mapping[str, Any], name: str, default: bool) -> bool:
    """A boolean knob (true/false, yes/no, 1/0)."""
    value = knobs.get(name, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise _bad(method, name, value, "true or false")
