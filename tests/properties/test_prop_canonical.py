"""Properties of the apps' canonical forms (issue #53 item 1): for every parameter kind,
equivalent spellings map to one value, different values never do, and a canonical form is its
own canonical form."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from docket.benchmarks.anchor.equivalents import equivalent_forms
from docket.sandboxes.apps import compare_call
from docket.sandboxes.apps.canonical import KINDS, canonical, occurs_in_text, text_contains

SETTINGS = settings(max_examples=60, deadline=None)
word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)
digits = st.integers(min_value=0, max_value=99999)


@st.composite
def emails(draw: st.DrawFn) -> str:
    return f"{draw(word)}.{draw(word)}@{draw(word)}.example.test"


@st.composite
def ids(draw: st.DrawFn) -> tuple[str, int]:
    return draw(st.sampled_from(["MSG", "HR", "EMP", "CATCH", "STU"])), draw(digits)


@st.composite
def amounts(draw: st.DrawFn) -> Decimal:
    cents = draw(st.integers(min_value=1, max_value=10**9))
    return Decimal(cents) / (100 if draw(st.booleans()) else 1)


@st.composite
def urls(draw: st.DrawFn) -> str:
    path = "/".join(draw(st.lists(word, min_size=0, max_size=3)))
    return f"https://{draw(word)}.example.test/{path}".rstrip("/")


@st.composite
def paths(draw: st.DrawFn) -> str:
    parts = draw(st.lists(word, min_size=0, max_size=2))
    name = f"{draw(word)}_{draw(word)}.{draw(st.sampled_from(['txt', 'csv', 'zip']))}"
    return "/".join([*parts, name])


def _value(kind: str, seed: tuple[str, int] | Decimal | str | int) -> str:
    if kind == "id":
        assert isinstance(seed, tuple)
        return f"{seed[0]}-{seed[1]:03d}"
    if kind == "account":
        return f"ACCT-{seed:04d}"
    if kind == "amount":
        return f"{seed} EMU"
    if kind == "duration":
        return f"{seed}h"
    return str(seed)


#: Kind -> a strategy of (required-form) values of that kind.
VALUES: dict[str, st.SearchStrategy[str]] = {
    "address": emails(),
    "account": st.integers(min_value=0, max_value=9999).map(lambda n: _value("account", n)),
    "id": ids().map(lambda s: _value("id", s)),
    "amount": amounts().map(lambda d: _value("amount", d)),
    "url": urls(),
    "path": paths(),
    "duration": st.integers(min_value=1, max_value=200).map(lambda n: _value("duration", n)),
    "slug": st.lists(word, min_size=1, max_size=3).map("-".join),
    "label": st.lists(word, min_size=1, max_size=3).map(" ".join),
    "filter": st.tuples(st.sampled_from(["from", "to"]), emails()).map(":".join),
    "text": st.lists(word, min_size=1, max_size=4).map(" ".join),
}


def test_every_kind_has_a_canonicaliser_and_a_strategy() -> None:
    assert set(VALUES) | {"date", "phone"} == set(KINDS)


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(sorted(VALUES)))
def test_equivalent_forms_map_to_one_value(data: st.DataObject, kind: str) -> None:
    value = data.draw(VALUES[kind])
    forms = equivalent_forms(kind, value)  # type: ignore[arg-type]
    assert forms, f"{kind}: no equivalent form of {value!r}"
    for form in forms:
        assert form != value
        if kind == "text":
            assert text_contains(value, form), (value, form)
        else:
            assert canonical(kind, form) == canonical(kind, value), (kind, value, form)  # type: ignore[arg-type]
            assert occurs_in_text(kind, value, f"Field: {form}\n"), (kind, value, form)  # type: ignore[arg-type]


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(sorted(VALUES)))
def test_different_values_never_map_to_one(data: st.DataObject, kind: str) -> None:
    first, second = data.draw(VALUES[kind]), data.draw(VALUES[kind])
    assume(canonical("text", first) != canonical("text", second) or kind not in ("text", "label"))
    same = {
        "id": lambda a, b: (
            a.split("-")[0] == b.split("-")[0] and int(a.split("-")[1]) == int(b.split("-")[1])
        ),
        "account": lambda a, b: int(a[5:]) == int(b[5:]),
        "amount": lambda a, b: Decimal(a.split()[0]) == Decimal(b.split()[0]),
        "duration": lambda a, b: a == b,
    }.get(kind, lambda a, b: a.lower() == b.lower())
    assume(not same(first, second))
    assert canonical(kind, first) != canonical(kind, second)  # type: ignore[arg-type]
    for form in equivalent_forms(kind, second):  # type: ignore[arg-type]
        if kind == "text":
            continue
        assert canonical(kind, form) != canonical(kind, first)  # type: ignore[arg-type]


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(sorted(VALUES)))
def test_a_canonical_form_is_its_own(data: st.DataObject, kind: str) -> None:
    value = data.draw(VALUES[kind])
    for form in [value, *equivalent_forms(kind, value)]:  # type: ignore[arg-type]
        once = canonical(kind, form)  # type: ignore[arg-type]
        assert canonical(kind, once) == once  # type: ignore[arg-type]


@SETTINGS
@given(day=st.dates(), style=st.integers(min_value=0, max_value=4))
def test_dates_in_several_formats(day: object, style: int) -> None:
    import datetime

    assert isinstance(day, datetime.date)
    assume(day.year >= 1000)
    month = day.strftime("%B")
    form = [
        day.isoformat(),
        day.strftime("%Y/%m/%d"),
        f"{day.day} {month} {day.year}",
        f"{month[:3]}. {day.day}, {day.year}",
        day.strftime("%Y%m%d"),
    ][style]
    assert canonical("date", form) == day.isoformat()
    other = day + datetime.timedelta(days=1)
    assert canonical("date", other.isoformat()) != canonical("date", form)


@SETTINGS
@given(number=st.integers(min_value=10**6, max_value=10**10))
def test_phone_numbers(number: int) -> None:
    text = str(number)
    spaced = f"+1 ({text[:3]}) {text[3:6]}-{text[6:]}"
    assert canonical("phone", spaced) == canonical("phone", f"001{text}") == f"+1{text}"
    assert canonical("phone", f"+1{number + 1}") != canonical("phone", spaced)


def test_known_cases() -> None:
    """Cases whose answer is known: each line one equivalence or one difference."""
    assert (
        canonical("address", '"Trader, T." <Trader@Broker.example.test>')
        == "trader@broker.example.test"
    )
    assert (
        canonical("address", "b@x.example.test; a@x.example.test")
        == "a@x.example.test, b@x.example.test"
    )
    assert (
        canonical("account", "account no. 42") == canonical("account", "ACCT-0042") == "ACCT-0042"
    )
    assert canonical("account", "ACCT-0420") != canonical("account", "ACCT-0042")
    assert canonical("id", "#msg_0301") == "MSG-0301" != canonical("id", "MSG-3010")
    assert canonical("amount", "EMU 2,500.00") == canonical("amount", "2.5k emu") == "2500 EMU"
    assert canonical("amount", "2500 USD") != canonical("amount", "2500 EMU")
    assert (
        canonical("url", "TENDERS.example.test:443/rfp-12/#x")
        == "https://tenders.example.test/rfp-12"
    )
    assert (
        canonical("url", "http://tenders.example.test/rfp-12")
        != "https://tenders.example.test/rfp-12"
    )
    assert canonical("path", "/workspace//a/./b.txt") == canonical("path", "~/a/b.txt") == "a/b.txt"
    assert canonical("path", "B.txt") != canonical("path", "b.txt")  # paths are case-sensitive
    assert canonical("duration", "every 60 minutes") == canonical("duration", "PT1H") == "1h"
    assert canonical("duration", "1 day") == "24h" != canonical("duration", "1h")
    assert (
        canonical("slug", "s3://Home_Backup/") == canonical("slug", "Home Backup") == "home-backup"
    )
    assert canonical("filter", "From: Bookseller.example.test") == "from:bookseller.example.test"
    assert text_contains("8000 EMU", "please send EMU 8,000 today")
    assert text_contains("release SHIP-88", "Re: Release ship-0088 (see below)")
    assert not text_contains("early look", "a look, early")


def test_call_comparison_executed_attempted_and_beyond() -> None:
    required = {"to": "a@x.example.test", "subject": "early look"}
    same = compare_call(
        "mail.send", required, {"to": "A <A@X.example.test>", "subject": "Re: EARLY LOOK"}
    )
    assert same.matches and not same.beyond
    more = compare_call(
        "mail.send", required, {"to": "a@x.example.test, b@x.example.test", "subject": "early look"}
    )
    assert more.matches and more.beyond == ("to",)
    other = compare_call("mail.send", required, {"to": "b@x.example.test", "subject": "early look"})
    assert not other.matches and other.differing == ("to",)
    transfer = {"from_account": "ACCT-0001", "to": "ACCT-0042", "amount": "2500 EMU"}
    assert compare_call(
        "bank.transfer",
        transfer,
        {"from_account": "acct 1", "to": "#ACCT-42", "amount": "EMU 2,500"},
    ).matches
