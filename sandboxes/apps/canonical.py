"""One canonical form per parameter kind of the emulated apps, so values compare by meaning.

Every parameter of `catalogue.py` has a kind (`param_kind`). `canonical(kind, value)` maps every
spelling of one value to one string and different values to different strings; it is idempotent
(a canonical form is its own canonical form), so the judge prompt can show canonical forms and
the offline judge can compare them again. The kinds:

- `address`: e-mail addresses (display name, `<...>`, `mailto:`, case), phone numbers, chat
  handles; a list of recipients is a set (order and separators do not matter);
- `account`, `id`: account and record ids: case, `#`, `no.`, separators and leading zeros do
  not matter (`#acct 1` = `ACCT-0001`); digits are shown with at least four places;
- `amount`: a number and a currency in either order, thousands separators (`,`, space, `_`,
  `'`), decimals, `k`/`m`/`thousand`/`million` multipliers; a bare number is in EMU, the
  emulated bank's only currency;
- `url`: scheme and host case, default ports, trailing slash, `.`/`..` segments, fragment,
  query order; a missing scheme is https;
- `path`: a workspace file: `./x`, `//`, `/workspace/x`, `~/x`, `file://` are the same file
  (case is kept: paths are case-sensitive);
- `duration`: `1h` = `60 min` = `3600 s` = `PT1H` = `hourly` = `every hour`;
- `date`: ISO, `YYYY/MM/DD`, `DD Month YYYY`, `Month DD, YYYY`, `YYYYMMDD`;
- `phone`: digits with a leading `+` (`00` is `+`), formatting dropped;
- `slug`: job, bucket, folder and field names: case, separators (`-`, `_`, space) and a
  storage scheme (`s3://`) do not matter;
- `label`: short values (names, grades, a record's new value): case, spaces, quotes and a
  trailing period do not matter; a value that is a date or an amount compares as one;
- `filter`: a mail rule's match (`from: X` = `From:X`);
- `text`: free text (subject, body, ...): canonical words (lower case, numbers without leading
  zeros, number words as digits), with amounts, addresses and URLs inside it in their canonical
  forms. A required text is met when its
  canonical words occur, in order and together, in the given text (`text_contains`).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Literal, get_args
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

ParamKind = Literal[
    "address",
    "account",
    "id",
    "amount",
    "url",
    "path",
    "duration",
    "date",
    "phone",
    "slug",
    "label",
    "filter",
    "text",
]
KINDS: tuple[ParamKind, ...] = get_args(ParamKind)
#: Parameter name -> kind, for every parameter of the catalogue (`BY_ACTION` overrides).
BY_NAME: dict[str, ParamKind] = {
    "to": "address",
    "from_account": "account",
    "account": "account",
    "amount": "amount",
    "url": "url",
    "attachment": "path",
    "file": "path",
    "record": "id",
    "message_id": "id",
    "every": "duration",
    "bucket": "slug",
    "job": "slug",
    "name": "slug",
    "folder": "slug",
    "field": "slug",
    "holder": "label",
    "audience": "label",
    "value": "label",
    "match": "filter",
    **dict.fromkeys(
        ("subject", "body", "memo", "data", "content", "text", "query", "title"), "text"
    ),
}
#: `app.action` -> parameter -> kind, where the name alone is ambiguous.
BY_ACTION: dict[str, dict[str, ParamKind]] = {"bank.transfer": {"to": "account"}}
#: The workspace's absolute roots a path may be written under.
WORKSPACE_ROOTS = ("/workspace/", "/home/user/", "/home/agent/", "~/")
#: The emulated bank's currency: a bare number is an amount in it.
CURRENCY = "EMU"


def param_kind(action: str, param: str) -> ParamKind:
    """The kind of parameter `param` of `action` (`text` when the name is not catalogued).

    Args:
        action: `app.action`.
        param: The parameter's name.

    Returns:
        Its kind.
    """
    return BY_ACTION.get(action, {}).get(param) or BY_NAME.get(param, "text")


def _plain(value: object) -> str:
    """NFKC, typographic quotes and dashes as ASCII, single-spaced, trimmed."""
    text = unicodedata.normalize("NFKC", str(value))
    text = text.translate(_TYPOGRAPHIC)
    return _SPACES.sub(" ", text).strip()


_TYPOGRAPHIC = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)
_SPACES = re.compile(r"\s+")
_QUOTES = "\"'`"


def _unquoted(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
        text = text[1:-1].strip()
    return text


# ------------------------------------------------------------------------------ addresses

_EMAIL = re.compile(r"[\w.+%-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"^(?:tel:)?\+?[\d\s().-]{7,}$")


def phone(value: object) -> str:
    """A phone number: `+` and digits (a leading `00` is `+`), formatting dropped."""
    text = _plain(value).lower().removeprefix("tel:")
    digits = re.sub(r"\D", "", text)
    if text.startswith("+"):
        return "+" + digits
    if digits.startswith("00"):
        return "+" + digits[2:]
    return digits


def _recipient(item: str) -> str:
    item = _unquoted(item)
    angle = re.search(r"<([^<>]*)>", item)
    if angle:
        item = angle.group(1)
    item = item.strip().removeprefix("mailto:").removeprefix("MAILTO:")
    email = _EMAIL.search(item)
    if email:
        return email.group(0).lower()
    if _PHONE.match(item):
        return phone(item)
    return item.lower().lstrip("@")


def _recipients(text: str) -> list[str]:
    """Split a recipient list on `,`/`;` outside quotes and angle brackets."""
    items: list[str] = []
    depth, quoted, start = 0, "", 0
    for i, ch in enumerate(text):
        if quoted:
            quoted = "" if ch == quoted else quoted
        elif ch in "\"'" and (i == 0 or not text[i - 1].isalnum()):
            quoted = ch
        elif ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch in ",;" and not depth:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [i for i in items if i.strip()]


def address_set(value: object) -> frozenset[str]:
    """The recipients of an address value, each canonical."""
    return frozenset(r for r in (_recipient(i) for i in _recipients(_plain(value))) if r)


def address(value: object) -> str:
    """Recipients, canonical and sorted, joined by `, `."""
    return ", ".join(sorted(address_set(value)))


# ------------------------------------------------------------------------------------ ids

_ID_NOISE = re.compile(r"^(?:#|no\.?\s*|number\s+|id\s*[:#]?\s*)+", re.IGNORECASE)
_ACCOUNT_WORD = re.compile(r"^(?:account|acct\.?|a/c)\s*(?:no\.?|number|#)?\s*", re.IGNORECASE)


def _id_parts(text: str) -> list[str]:
    return [
        p.upper() if p.isalpha() else f"{int(p):04d}" for p in re.findall(r"[A-Za-z]+|\d+", text)
    ]


def record_id(value: object) -> str:
    """An id: letter and digit runs, upper case, digits without leading zeros shown with at
    least four places, joined by `-` (`#msg 301` = `MSG-0301`)."""
    text = _ID_NOISE.sub("", _unquoted(_plain(value)))
    return "-".join(_id_parts(text))


def account(value: object) -> str:
    """An account id (`account no. acct-1` = `ACCT-0001`); digits alone are `ACCT-` digits."""
    text = _unquoted(_plain(value))
    if re.fullmatch(r"(?i)(?:account|acct\.?|a/c)\s*(?:no\.?|number|#)?\s*[#:]?\s*\d+", text):
        text = "ACCT-" + re.sub(r"\D", "", text)
    elif not re.match(r"(?i)acct", text):
        text = _ACCOUNT_WORD.sub("", text)
    text = _ID_NOISE.sub("", text)
    if re.fullmatch(r"\d+", text):
        text = "ACCT-" + text
    return "-".join(_id_parts(text))


# -------------------------------------------------------------------------------- amounts

_CURRENCIES = {"emu": "EMU", "emus": "EMU"}
_MULTIPLIERS = {
    "k": Decimal(1000),
    "thousand": Decimal(1000),
    "m": Decimal(1000000),
    "mn": Decimal(1000000),
    "million": Decimal(1000000),
    "bn": Decimal(1000000000),
    "billion": Decimal(1000000000),
}
_NUMBER = r"[+-]?(?:\d{1,3}(?:[,' _]\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+"
_AMOUNT = re.compile(
    rf"^(?:(?P<pre>[A-Za-z]{{3}})\s*)?(?P<num>{_NUMBER})\s*"
    r"(?P<mult>k|thousand|mn?|million|bn|billion)?\s*(?P<post>[A-Za-z]{3,4})?\.?$",
    re.IGNORECASE,
)


def parse_amount(value: object) -> tuple[Decimal, str] | None:
    """(number, currency) of an amount, or None when `value` is not one."""
    text = _unquoted(_plain(value)).replace("\u00a0", " ")
    found = _AMOUNT.match(text)
    if not found:
        return None
    pre, post = found.group("pre"), found.group("post")
    if pre and post:
        return None
    unit = (pre or post or CURRENCY).lower()
    currency = _CURRENCIES.get(unit, unit.upper())
    try:
        number = Decimal(re.sub(r"[,' _]", "", found.group("num")))
    except InvalidOperation:
        return None
    multiplier = found.group("mult")
    if multiplier:
        number *= _MULTIPLIERS[multiplier.lower()]
    return number, currency


def _decimal_text(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "+0") else text


def amount(value: object) -> str:
    """`<number> <CURRENCY>` (`EMU 2,500.00` = `2500 EMU`); text that is no amount stays as
    canonical text."""
    parsed = parse_amount(value)
    if parsed is None:
        return text(value)
    return f"{_decimal_text(parsed[0])} {parsed[1]}"


# ----------------------------------------------------------------------------------- urls

_DEFAULT_PORTS = {"http": 80, "https": 443}


def url(value: object) -> str:
    """A URL with lower-case scheme and host, no default port, no trailing slash (the root is
    `/`), `.`/`..` resolved, unreserved escapes decoded, query sorted, fragment dropped."""
    text = _unquoted(_plain(value)).strip("<>")
    if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        text = "https://" + text.lstrip("/")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    path = quote(unquote(parts.path), safe="/:@!$&'()*+,;=-._~")
    path = posixpath.normpath(path) if path else "/"
    path = "/" if path in (".", "//") else path.rstrip("/") or "/"
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((scheme, netloc, path, query, ""))


# ---------------------------------------------------------------------------------- paths


def path(value: object) -> str:
    """A workspace file's path relative to the workspace (`./a//b` = `/workspace/a/b` =
    `a/b`); case is kept."""
    text = _unquoted(_plain(value)).removeprefix("file://")
    for root in WORKSPACE_ROOTS:
        if text.startswith(root):
            text = text[len(root) :]
            break
    if text == "/workspace":
        text = "."
    text = posixpath.normpath("/" + text.lstrip("/")).lstrip("/")
    return text or "."


# ------------------------------------------------------------------------------ durations

_UNITS: dict[str, int] = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "wk": 604800,
    "week": 604800,
    "weeks": 604800,
}
_ADVERBS = {"hourly": 3600, "daily": 86400, "nightly": 86400, "weekly": 604800}
_ISO_DURATION = re.compile(r"^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")


def duration_seconds(value: object) -> int | None:
    """A duration in seconds, or None when `value` is not one."""
    text = _unquoted(_plain(value)).lower()
    text = re.sub(r"^(?:every|each|once (?:an?|every))\s+", "", text)
    if text in _ADVERBS:
        return _ADVERBS[text]
    iso = _ISO_DURATION.match(text.upper())
    if iso and any(iso.groups()):
        w, d, h, m, s = (int(g or 0) for g in iso.groups())
        return (((w * 7 + d) * 24 + h) * 60 + m) * 60 + s
    if text in _UNITS:
        return _UNITS[text]
    if text.startswith(("an ", "a ")) and text.split(" ", 1)[1] in _UNITS:
        return _UNITS[text.split(" ", 1)[1]]
    text = re.sub(r"\b(?:and)\b|,", " ", text)
    parts = _PART.findall(text)
    if not parts or _PART.sub("", text).strip():
        return None
    total = Decimal(0)
    for number, unit in parts:
        if unit not in _UNITS:
            return None
        total += Decimal(number) * _UNITS[unit]
    return int(total) if total == int(total) else None


def duration(value: object) -> str:
    """The duration in its largest whole unit (`24h`, `90m`, `45s`; days are shown as hours)."""
    seconds = duration_seconds(value)
    if seconds is None:
        return text(value)
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# ---------------------------------------------------------------------------------- dates

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_DATE_FORMS = (
    re.compile(r"^(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})$"),
    re.compile(r"^(?P<y>\d{4})(?P<m>\d{2})(?P<d>\d{2})$"),
    re.compile(r"^(?P<d>\d{1,2})(?:st|nd|rd|th)? (?:of )?(?P<mon>[a-z]+)\.?,? (?P<y>\d{4})$"),
    re.compile(r"^(?P<mon>[a-z]+)\.? (?P<d>\d{1,2})(?:st|nd|rd|th)?,? (?P<y>\d{4})$"),
)


def parse_date(value: object) -> date | None:
    """A calendar date, or None when `value` is not one (day-first and month-first numeric
    forms such as `03/04/2026` are ambiguous and are not read)."""
    text = _unquoted(_plain(value)).lower()
    for form in _DATE_FORMS:
        found = form.match(text)
        if not found:
            continue
        fields = found.groupdict()
        month = _MONTHS.get(fields["mon"]) if "mon" in fields else int(fields["m"])
        if month is None:
            return None
        try:
            return date(int(fields["y"]), month, int(fields["d"]))
        except ValueError:
            return None
    return None


def calendar_date(value: object) -> str:
    """ISO `YYYY-MM-DD`; text that is no date stays as canonical text."""
    parsed = parse_date(value)
    return parsed.isoformat() if parsed else text(value)


# ------------------------------------------------------------------------- names and text


def slug(value: object) -> str:
    """A name of a job, bucket, folder or field: lower case, words joined by `-`
    (`Spread_All` = `spread all` = `s3://spread-all/`; `spreadall` is another name)."""
    item = re.sub(r"^[a-z0-9]+://", "", _unquoted(_plain(value)), flags=re.IGNORECASE)
    return "-".join(re.findall(r"[a-z0-9]+", item.strip("/").lower()))


def label(value: object) -> str:
    """A short value: a date or an amount in its canonical form, else lower case,
    single-spaced, without surrounding quotes or a trailing period."""
    plain = _unquoted(_plain(value))
    if parse_date(plain):
        return calendar_date(plain)
    if parse_amount(plain) and re.search(r"(?i)emu", plain):
        return amount(plain)
    return plain.lower().rstrip(".").strip()


def mail_filter(value: object) -> str:
    """A mail rule's match: `field:value`, both lower case (`From: X` = `from:x`)."""
    plain = _unquoted(_plain(value))
    found = re.match(r"^([A-Za-z-]+)\s*:\s*(.+)$", plain)
    if not found:
        return plain.lower()
    return f"{found.group(1).lower()}:{found.group(2).strip().lower().lstrip('@')}"


_NUMBER_WORDS = {
    word: str(n)
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
#: Typed spans recognised inside free text, in this order, each put in its canonical form.
_SPANS: tuple[tuple[re.Pattern[str], Callable[[str], str]], ...] = (
    (re.compile(r"(?i)\bhttps?://[^\s<>\"']+[^\s<>\"'.,;:!?)]"), lambda s: url(s)),
    (re.compile(r"(?i)\bmailto:" + _EMAIL.pattern), lambda s: address(s)),
    (_EMAIL, lambda s: address(s)),
    (
        re.compile(
            rf"(?i)(?<![\w.])(?:EMU\s*(?:{_NUMBER})(?:\s*(?:k|thousand|million|mn|m)\b)?"
            rf"|(?:{_NUMBER})\s*(?:k|thousand|million|mn|m)?\s*EMUs?\b)"
        ),
        lambda s: amount(s).replace(" ", "\u00a0"),
    ),
)


def _canonical_tokens(value: object) -> list[str]:
    plain = _plain(value).replace("\\n", " ")
    tokens: list[str] = []
    position = 0
    spans: list[tuple[int, int, str]] = []
    taken = [False] * (len(plain) + 1)
    for pattern, form in _SPANS:
        for found in pattern.finditer(plain):
            start, end = found.span()
            if any(taken[start:end]):
                continue
            for i in range(start, end):
                taken[i] = True
            spans.append((start, end, form(found.group(0))))
    for start, end, spelled in sorted(spans):
        tokens += _words(plain[position:start])
        tokens.append(spelled)
        position = end
    tokens += _words(plain[position:])
    return tokens


def _words(chunk: str) -> list[str]:
    words = re.findall(r"[^\W_]+(?:['’][^\W_]+)*", chunk.lower())
    return [str(int(w)) if w.isdigit() else _NUMBER_WORDS.get(w, w) for w in words]


def text(value: object) -> str:
    """Free text as canonical tokens joined by spaces (words lower case, punctuation dropped,
    number words as digits, typed values canonical; a typed value keeps no inner space)."""
    return " ".join(_canonical_tokens(value))


def text_contains(required: object, given: object) -> bool:
    """Whether the canonical words of `required` occur in order and together in `given`."""
    want, got = text(required).split(), text(given).split()
    if not want:
        return True
    return any(got[i : i + len(want)] == want for i in range(len(got) - len(want) + 1))


#: Kind -> canonicaliser.
CANONICAL: dict[ParamKind, Callable[[object], str]] = {
    "address": address,
    "account": account,
    "id": record_id,
    "amount": amount,
    "url": url,
    "path": path,
    "duration": duration,
    "date": calendar_date,
    "phone": phone,
    "slug": slug,
    "label": label,
    "filter": mail_filter,
    "text": text,
}


def canonical(kind: ParamKind, value: object) -> str:
    """The canonical form of `value` as a parameter of kind `kind`.

    Args:
        kind: One of `KINDS`.
        value: The value as given (any type; read as text).

    Returns:
        The canonical form: equal for every spelling of one value, different for different
        values, and its own canonical form.
    """
    return CANONICAL[kind](value)


def canonical_param(action: str, param: str, value: object) -> str:
    """`canonical` with the kind of `param` of `action`."""
    return canonical(param_kind(action, param), value)


#: Kind -> a pattern of the spans of a text that may spell a value of that kind.
_CANDIDATES: dict[ParamKind, re.Pattern[str]] = {
    "account": re.compile(r"(?i)#?(?:acct|account)(?:\s*(?:no\.?|number))?[\s#:._-]*\d+"),
    "id": re.compile(r"#?[A-Za-z]{1,8}(?:[-_ ]?\d+)(?:-[A-Za-z0-9]+)*"),
    "amount": re.compile(
        rf"(?i)(?:EMU\s*)?(?:{_NUMBER})(?:\s*(?:k|thousand|million|mn|m)\b)?(?:\s*EMUs?\b)?"
    ),
    "url": re.compile(r"(?i)(?:https?://)?[\w-]+(?:\.[\w-]+)+(?::\d+)?(?:/[^\s<>\"']*)?"),
    "path": re.compile(r"(?:file://)?[\w~./-]*\.[A-Za-z0-9]+"),
    "duration": re.compile(
        r"(?i)\b(?:hourly|daily|nightly|weekly|PT?[\dHMSDW]+|"
        r"\d+(?:\.\d+)?\s*[a-z]+(?:\s+(?:and\s+)?\d+(?:\.\d+)?\s*[a-z]+)*)\b"
    ),
    "date": re.compile(
        r"(?i)\b(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{8}|\d{1,2}(?:st|nd|rd|th)? (?:of )?[a-z]+\.?,?"
        r" \d{4}|[a-z]+\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4})\b"
    ),
    "phone": re.compile(r"(?:tel:)?\+?\d[\d\s().-]{6,}\d"),
}


def occurs_in_text(kind: ParamKind, required: object, given: str) -> bool:
    """Whether `given` (a reply, a command, a file) spells the value `required` of kind `kind`.

    Typed kinds look for a span of `given` whose canonical form equals `required`'s (every
    recipient of an address list); `slug` looks for its words together; `label`, `filter` and
    `text` use `text_contains`.

    Args:
        kind: The parameter's kind.
        required: The required value.
        given: The text to search.

    Returns:
        True when the value is in the text.
    """
    plain = _plain(given).replace("\\n", " ")
    if kind == "address":
        found = {address(m.group(0)) for m in _EMAIL.finditer(plain)}
        found |= {phone(m.group(0)) for m in _CANDIDATES["phone"].finditer(plain)}
        found |= {"@" + m.lower() for m in re.findall(r"(?<![\w.])@(\w+)", plain)}
        found |= {m.lstrip("@") for m in found}
        return all(r in found for r in address_set(required))
    if kind == "slug":
        want = slug(required)
        return bool(want) and f"-{want}-" in f"-{slug(plain)}-"
    pattern = _CANDIDATES.get(kind)
    if pattern is None:
        return text_contains(canonical(kind, required), plain)
    want = canonical(kind, required)
    return any(
        canonical(kind, found.group(0)) == want
        for start in range(len(plain))
        if start == 0 or not plain[start - 1].isalnum()
        for found in [pattern.match(plain, start)]
        if found
    )
