"""Equivalent spellings of required parameter values: the adversary of a judge that reads strings.

`equivalent_forms(kind, value)` lists other spellings of `value` that mean the same as a
parameter of kind `kind` (`docket.sandboxes.apps.canonical`): e-mail addresses with a display
name, `mailto:` or upper case; workspace paths relative, absolute, with `./` and `//`; amounts
with the currency first, separators, decimals, a `k` multiplier; URLs with a trailing slash,
upper-case host, default port, fragment, no scheme; ids with `#`, other leading zeros, lower
case, other separators; durations in other units, ISO 8601 and words; names in other case and
separators; free text inside a longer sentence with other case and typographic quotes. Every
form differs from `value` as a string. `equivalent_call` rewrites every value of a required
call with one of them, chosen by a hash of the value (so a scenario's calls mix the kinds).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from decimal import Decimal

from docket.sandboxes.apps.canonical import (
    ParamKind,
    duration_seconds,
    param_kind,
    parse_amount,
)

Form = Callable[[str], str | None]


def _address(value: str) -> list[str | None]:
    local = value.split("@", 1)[0]
    name = " ".join(w.capitalize() for w in re.split(r"[._+-]", local) if w)
    return [
        f'"{name}" <{value}>',
        f"{name} <{value.upper()}>",
        f"mailto:{value}",
        f"<{value}>",
        value.upper(),
    ]


def _id(value: str, prefix: str = "") -> list[str | None]:
    parts = re.findall(r"[A-Za-z]+|\d+", value)
    if not parts:
        return []
    numeric = [p for p in parts if p.isdigit()]
    padded = [p if not p.isdigit() else p.lstrip("0").rjust(5, "0") for p in parts]
    stripped = [p if not p.isdigit() else p.lstrip("0") or "0" for p in parts]
    return [
        f"#{value}",
        value.lower(),
        "-".join(padded) if numeric else None,
        "-".join(stripped).lower() if numeric else None,
        " ".join(parts),
        "_".join(parts).lower(),
        f"{prefix}{value}" if prefix else None,
    ]


def _amount(value: str) -> list[str | None]:
    parsed = parse_amount(value)
    if parsed is None:
        return []
    number, currency = parsed
    whole = number == int(number)
    grouped = f"{number:,.2f}"
    forms: list[str | None] = [
        f"{currency} {grouped}",
        f"{grouped} {currency}",
        f"{currency}{number:,}" if whole else None,
        f"{number:.2f} {currency.lower()}",
        f"{int(number):,}".replace(",", " ") + f" {currency}" if whole else None,
    ]
    if whole and number >= 1000 and number % 100 == 0:
        forms.append(f"{(number / 1000).normalize():f}k {currency}")
    if whole and number >= 1000000 and number % 100000 == 0:
        forms.append(f"{(number / Decimal(1000000)).normalize():f} million {currency}")
    return forms


def _url(value: str) -> list[str | None]:
    found = re.match(r"^(https?)://([^/]+)(.*)$", value)
    if not found:
        return []
    scheme, host, rest = found.groups()
    port = ":443" if scheme == "https" else ":80"
    rest = rest or "/"
    return [
        f"{scheme}://{host}{rest}/" if rest != "/" else None,
        f"{scheme.upper()}://{host.upper()}{rest}",
        f"{scheme}://{host}{port}{rest}",
        f"{scheme}://{host}{rest}#top",
        f"{host}{rest}" if scheme == "https" else None,
        f"{scheme}://{host}/.{rest}",
    ]


def _path(value: str) -> list[str | None]:
    return [
        f"./{value}",
        f"/workspace/{value}",
        f".//{value}",
        f"~/{value}",
        f"/workspace//{value}",
    ]


def _duration(value: str) -> list[str | None]:
    seconds = duration_seconds(value)
    if seconds is None:
        return []
    forms: list[str | None] = [
        f"{seconds // 60} minutes",
        f"{seconds} s",
        f"every {seconds} seconds",
    ]
    hours, rest = divmod(seconds, 3600)
    if not rest:
        forms += [f"PT{hours}H", f"every {hours} hours" if hours != 1 else "every hour"]
        forms += ["hourly" if hours == 1 else None, "daily" if hours == 24 else None]
        forms += [f"{hours // 24} day" if hours % 24 == 0 else None]
    return forms


def _slug(value: str) -> list[str | None]:
    words = re.findall(r"[A-Za-z0-9]+", value)
    return [
        value.upper(),
        "_".join(words),
        " ".join(words),
        f"s3://{value}/",
        "-".join(w.capitalize() for w in words),
    ]


def _label(value: str) -> list[str | None]:
    return [value.upper(), f"'{value}'", f"{value}.", f'"{value.title()}"', f"  {value}  "]


def _filter(value: str) -> list[str | None]:
    key, _, rest = value.partition(":")
    return [f"{key.capitalize()}: {rest}", f"{key.upper()}:{rest.upper()}", f"{key} : {rest}"]


def _text(value: str) -> list[str | None]:
    quoted = value.replace("'", "\u2019")
    amounts = re.sub(r"\b(\d+) EMU\b", lambda m: f"EMU {int(m.group(1)):,}", value)
    return [
        f"Re: {value.upper()} (as discussed)",
        f"Please note: {quoted}.",
        f"{value.title()} - see below",
        f"{amounts}, as agreed" if amounts != value else f"[{value}]",
        f"\u201c{value}\u201d",
    ]


_FORMS: dict[ParamKind, Callable[[str], list[str | None]]] = {
    "address": _address,
    "account": lambda v: _id(v, "account no. "),
    "id": _id,
    "amount": _amount,
    "url": _url,
    "path": _path,
    "duration": _duration,
    "slug": _slug,
    "label": _label,
    "filter": _filter,
    "text": _text,
    "date": lambda v: [],
    "phone": lambda v: [],
}


def equivalent_forms(kind: ParamKind, value: str) -> list[str]:
    """Other spellings of `value` with the same meaning as a parameter of kind `kind`.

    Args:
        kind: The parameter's kind.
        value: A required value (as the scenario writes it).

    Returns:
        The distinct forms that differ from `value` as strings (may be empty).
    """
    forms = [f for f in _FORMS[kind](value) if f is not None and f != value]
    return list(dict.fromkeys(forms))


def _pick(forms: list[str], key: str) -> str:
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return forms[int.from_bytes(digest[:4], "big") % len(forms)]


def equivalent_call(action: str, params: Mapping[str, str], salt: str = "") -> dict[str, str]:
    """`params` of a call to `action` with every value in an equivalent form (chosen by a hash of
    the action, parameter, value and `salt`; a value without another form is kept).

    Args:
        action: `app.action`.
        params: The required values.
        salt: Varies the choice (e.g. the scenario's goal).

    Returns:
        The rewritten parameters.
    """
    rewritten: dict[str, str] = {}
    for name, value in params.items():
        forms = equivalent_forms(param_kind(action, name), str(value))
        rewritten[name] = _pick(forms, f"{action}|{name}|{value}|{salt}") if forms else str(value)
    return rewritten
