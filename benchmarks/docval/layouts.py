"""Five procedural document layouts (receipt, invoice, form, table, letter) with grounded QA.

Each builder draws a page on a `Canvas` and returns the question/answer pairs it supports and
the document's facts (the printed text of every value field). An answer is always one or more
whole segments, so its ground-truth box is the union of their word boxes. Documents are
internally consistent (`consistency.check_document` verifies it): money is counted in cents, so
line amounts, subtotals, tax and totals add up exactly; a due date follows its issue date by the
printed payment terms; a meeting follows its letter; an applicant is an adult when signing; the
salutation and e-mail address use the names printed elsewhere on the page. Layout noise:
two-column blocks, subtotal vs total, VAT vs total due, two dates per document in one of four
formats, repeated labels (applicant vs emergency contact), varied fonts, sizes and margins.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from docket.benchmarks.docval.render import Canvas, Page, Segment
from docket.benchmarks.docval.wording import Wording

DOC_TYPES = ("receipt", "invoice", "form", "table", "letter")

_FIRST = [
    "Anna",
    "Ben",
    "Carla",
    "David",
    "Elena",
    "Farid",
    "Grace",
    "Hugo",
    "Ines",
    "Jonas",
    "Keiko",
    "Liam",
    "Maya",
    "Nikos",
    "Olga",
    "Pavel",
    "Rosa",
    "Samir",
    "Tara",
    "Viktor",
]
_LAST = [
    "Adams",
    "Becker",
    "Costa",
    "Dubois",
    "Evans",
    "Fischer",
    "Garcia",
    "Hansen",
    "Ito",
    "Jensen",
    "Kowalski",
    "Larsen",
    "Moreau",
    "Novak",
    "Okafor",
    "Petrov",
    "Quinn",
    "Rossi",
]
_SHOPS = [
    "Green Grocer",
    "Corner Market",
    "Harbor Deli",
    "Sunrise Bakery",
    "Maple Pharmacy",
    "Blue Fin Cafe",
    "North Hardware",
    "City Books",
]
_COMPANIES = [
    "Acme Tools Ltd",
    "Borealis Systems",
    "Cedar Logistics",
    "Delta Print Co",
    "Evergreen Supplies",
    "Fjord Analytics",
    "Granite Works",
    "Helix Labs",
]
_ITEMS = [
    "Milk",
    "Bread",
    "Coffee beans",
    "Apples",
    "Cheddar",
    "Olive oil",
    "Rice",
    "Eggs",
    "Tomatoes",
    "Yogurt",
    "Pasta",
    "Tea",
    "Butter",
    "Honey",
    "Oranges",
    "Granola",
]
_SERVICES = [
    "Consulting hours",
    "Server rental",
    "Design review",
    "Support plan",
    "Printing",
    "Delivery",
    "Installation",
    "Training session",
    "License fee",
    "Maintenance",
]
_STREETS = ["Oak Street", "Mill Road", "Station Ave", "River Lane", "High Street", "Park Way"]
_CITIES = ["Springfield", "Riverton", "Lakeside", "Fairview", "Kingsport", "Ashford"]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_REGIONS = ["North", "South", "East", "West", "Central"]
_QUARTERS = ["Q1", "Q2", "Q3", "Q4"]


@dataclass(frozen=True)
class QA:
    """A question whose answer is the text of `segments` (answers lists accepted variants)."""

    question: str
    answers: list[str]
    segments: list[int]
    kind: str
    field: str


Facts = dict[str, Any]
Builder = Callable[[random.Random, "Wording | None"], tuple[Page, list[QA], Facts]]

#: Date styles: ISO, day/month/year, "March 4, 2021", "4 Mar 2021".
DATE_STYLES = 4
PAYMENT_TERMS = (14, 30, 45, 60)


def format_date(day: date, style: int) -> str:
    """`day` printed in one of the `DATE_STYLES` styles."""
    if style == 0:
        return day.isoformat()
    if style == 1:
        return f"{day.day:02d}/{day.month:02d}/{day.year}"
    if style == 2:
        return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"
    return f"{day.day} {_MONTHS[day.month - 1][:3]} {day.year}"


def parse_date(text: str) -> date | None:
    """The date printed by `format_date` in any style, else None."""
    from datetime import datetime

    for pattern in ("%Y-%m-%d", "%d/%m/%Y", "%B %d, %Y", "%d %b %Y"):
        try:
            return datetime.strptime(text, pattern).date()
        except ValueError:
            continue
    return None


def _day(rng: random.Random, first: int = 2019, last: int = 2025) -> date:
    start = date(first, 1, 1)
    return start + timedelta(days=rng.randrange((date(last, 12, 31) - start).days + 1))


def money(cents: int, currency: str) -> str:
    """`cents` printed with `currency` and thousands separators, e.g. `$1,234.50`."""
    return f"{currency}{cents // 100:,}.{cents % 100:02d}"


def parse_money(text: str, currency: str) -> int | None:
    """Cents of a `money` text in `currency`, else None."""
    if not text.startswith(currency):
        return None
    whole, _, cents = text.removeprefix(currency).replace(",", "").partition(".")
    if not (whole.isdigit() and cents.isdigit() and len(cents) == 2):
        return None
    return int(whole) * 100 + int(cents)


def percent_of(cents: int, rate: int) -> int:
    """`rate`% of `cents`, rounded half up to a whole cent."""
    return (cents * rate + 50) // 100


def _money_answers(text: str, currency: str) -> list[str]:
    bare = text.removeprefix(currency)
    return [text, bare] if bare != text else [text]


def _names(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """`count` different (first, last) names."""
    names: list[tuple[str, str]] = []
    while len(names) < count:
        name = (rng.choice(_FIRST), rng.choice(_LAST))
        if all(name[0] != n[0] and name[1] != n[1] for n in names):
            names.append(name)
    return names


def _address(rng: random.Random) -> tuple[str, str]:
    return (
        f"{rng.randint(1, 299)} {rng.choice(_STREETS)}",
        f"{rng.randint(10000, 99999)} {rng.choice(_CITIES)}",
    )


def _distractor_value(rng: random.Random, style: int) -> str:
    """A value for a distractor line: a count, a code or a date (shapes answers have)."""
    kind = rng.randrange(3)
    if kind == 0:
        return str(rng.randint(1, 99))
    if kind == 1:
        return f"{rng.choice('ABCDKLMN')}{rng.randint(100, 99999)}"
    return format_date(_day(rng), style)


def _distractor(c: Canvas, x: float, y: float, label: str, value: str, size: int) -> float:
    """Print `label value` from (x, y); return the x where it ends."""
    c.text(x, y, label, "sans", size)
    at = x + c.width_of(label + " ", "sans", size) + 6
    c.text(at, y, value, "mono", size)
    return at + c.width_of(value, "mono", size)


def _qa(question: str, seg: Segment, kind: str, key: str, extra: list[str] | None = None) -> QA:
    answers = [seg.text, *[a for a in (extra or []) if a != seg.text]]
    return QA(question, answers, [seg.id], kind, key)


def _money_facts(
    currency: str, lines: list[dict[str, str]], rate: int, totals: dict[str, Segment], tax: str
) -> Facts:
    """The printed money of a receipt or invoice: line items, subtotal, tax rate, tax, total."""
    return {
        "currency": currency,
        "items": lines,
        "subtotal": totals["Subtotal"].text,
        "tax_rate": rate,
        "tax": totals[tax].text,
        "total": totals["Total"].text,
    }


def receipt(rng: random.Random, w: Wording | None = None) -> tuple[Page, list[QA], Facts]:
    """A till receipt: shop header, date, items with quantities, subtotal, tax, total."""
    w = w or Wording("test", rng)
    currency = rng.choice(["$", "EUR ", "£"])
    n_items = rng.randint(3, 7)
    width, size = rng.choice([420, 460, 500]), rng.choice([14, 15, 16])
    line = size + 10
    height = 230 + line * (n_items + 8)
    style = rng.randrange(DATE_STYLES)
    noise = w.distractors("receipt", 2)
    c = Canvas(width, height)
    margin = rng.randint(18, 30)
    right = width - margin
    shop = c.text(margin, 20, rng.choice(_SHOPS), "bold", size + 6)
    street, city = _address(rng)
    c.text(margin, 20 + size + 14, street, "sans", size - 2)
    c.text(margin, 20 + 2 * size + 16, city, "sans", size - 2)
    y = 30 + 3 * size + 24
    date_label = w.label("receipt.date")
    c.text(margin, y, date_label, "sans", size)
    when = format_date(_day(rng), style)
    at = margin + c.width_of(date_label + " ", "sans", size) + 8
    date_seg = c.text(at, y, when, "sans", size)
    number = rng.randint(1000, 99999)
    receipt_no = c.text(right, y, f"{w.label('receipt.no')} {number}", "mono", size, "right")
    y += line
    _distractor(c, margin, y, noise[0], _distractor_value(rng, style), size - 2)
    y += line + 6
    c.hline(margin, right, y)
    y += 8
    items: list[tuple[Segment, Segment, Segment]] = []
    subtotal = 0
    for name in rng.sample(_ITEMS, n_items):
        qty, unit = rng.randint(1, 5), rng.randint(50, 2500)
        subtotal += qty * unit
        item = c.text(margin, y, name, "sans", size)
        q = c.text(width * 0.55, y, f"x{qty}", "mono", size)
        amount = c.text(right, y, money(qty * unit, currency), "mono", size, "right")
        items.append((item, q, amount))
        y += line
    y += 4
    c.hline(margin, right, y)
    y += 8
    rate = rng.choice([5, 7, 10, 20])
    tax = percent_of(subtotal, rate)
    totals: dict[str, Segment] = {}
    for key, label, value in (
        ("Subtotal", w.label("receipt.subtotal"), subtotal),
        ("Tax", w.label("receipt.tax", rate=rate), tax),
        ("Total", w.label("receipt.total"), subtotal + tax),
    ):
        c.text(margin, y, label, "bold" if key == "Total" else "sans", size)
        totals[key] = c.text(
            right, y, money(value, currency), "bold" if key == "Total" else "mono", size, "right"
        )
        y += line
    _distractor(c, margin, y + 6, noise[1], _distractor_value(rng, style), size - 2)
    pick = rng.randrange(len(items))
    item, qty_seg, amount = items[pick]
    ask = lambda field, **slots: w.question("receipt", field, **slots)  # noqa: E731
    qas = [
        _qa(
            ask("total"),
            totals["Total"],
            "distractor",
            "total",
            _money_answers(totals["Total"].text, currency),
        ),
        _qa(
            ask("subtotal"),
            totals["Subtotal"],
            "distractor",
            "subtotal",
            _money_answers(totals["Subtotal"].text, currency),
        ),
        _qa(
            ask("tax"),
            totals["Tax"],
            "key_value",
            "tax",
            _money_answers(totals["Tax"].text, currency),
        ),
        _qa(ask("date"), date_seg, "key_value", "date"),
        _qa(ask("shop"), shop, "header", "shop"),
        _qa(ask("receipt_no"), receipt_no, "header", "receipt_no", [str(number)]),
        _qa(
            ask("item_amount", item=item.text),
            amount,
            "table_cell",
            "item_amount",
            _money_answers(amount.text, currency),
        ),
        _qa(
            ask("item_qty", item=item.text),
            qty_seg,
            "table_cell",
            "item_qty",
            [qty_seg.text.removeprefix("x")],
        ),
    ]
    lines = [{"name": i.text, "qty": q.text, "amount": a.text} for i, q, a in items]
    facts = {"date": date_seg.text, **_money_facts(currency, lines, rate, totals, "Tax")}
    return c.page, qas, facts


def invoice(rng: random.Random, w: Wording | None = None) -> tuple[Page, list[QA], Facts]:
    """An invoice: seller block and invoice meta in two columns, bill-to, item table, totals."""
    w = w or Wording("test", rng)
    noise = w.distractors("invoice", 2)
    currency = rng.choice(["$", "EUR "])
    width, height, size = 800, 1000, rng.choice([14, 15])
    c = Canvas(width, height)
    margin = rng.randint(40, 60)
    right = width - margin
    seller = c.text(margin, 40, rng.choice(_COMPANIES), "bold", 22)
    street, city = _address(rng)
    c.text(margin, 74, street, "sans", size)
    c.text(margin, 96, city, "sans", size)
    c.text(right, 40, "INVOICE", "bold", 26, "right")
    meta_x = width * 0.58
    value_x = width * 0.76
    style, issued, terms = rng.randrange(DATE_STYLES), _day(rng), rng.choice(PAYMENT_TERMS)
    meta: dict[str, Segment] = {}
    meta_rows = [
        ("Invoice No:", w.label("invoice.no"), f"INV-{rng.randint(1000, 9999)}"),
        ("Issue date:", w.label("invoice.issued"), format_date(issued, style)),
        ("Due date:", w.label("invoice.due"), format_date(issued + timedelta(days=terms), style)),
        ("Terms:", w.label("invoice.terms"), f"Net {terms}"),
        ("", noise[0], _distractor_value(rng, style)),
    ]
    rng.shuffle(meta_rows)
    for i, (key, label, value) in enumerate(meta_rows):
        c.text(meta_x, 84 + i * 24, label, "sans", size)
        seg = c.text(value_x, 84 + i * 24, value, "mono", size)
        if key:
            meta[key] = seg
    c.text(margin, 190, w.label("invoice.bill_to"), "bold", size)
    first, last = _names(rng, 1)[0]
    client = c.text(margin, 214, f"{first} {last}", "sans", size)
    street2, city2 = _address(rng)
    c.text(margin, 236, street2, "sans", size)
    c.text(margin, 258, city2, "sans", size)
    cols = [margin, width * 0.5, width * 0.64, right]
    y = 320
    heads = ["Description", *(w.label(f"invoice.{k}") for k in ("qty", "unit", "amount"))]
    for i, (x, head) in enumerate(zip(cols, heads, strict=True)):
        c.text(x, y, head, "bold", size, "right" if i == 3 else "left")
    y += 28
    c.hline(margin, right, y - 4)
    rows: list[tuple[Segment, Segment, Segment, Segment]] = []
    subtotal = 0
    for service in rng.sample(_SERVICES, rng.randint(3, 6)):
        qty, unit = rng.randint(1, 20), rng.randint(1000, 90000)
        subtotal += qty * unit
        rows.append(
            (
                c.text(cols[0], y, service, "sans", size),
                c.text(cols[1], y, str(qty), "mono", size),
                c.text(cols[2], y, money(unit, currency), "mono", size),
                c.text(cols[3], y, money(qty * unit, currency), "mono", size, "right"),
            )
        )
        y += 28
    c.hline(margin, right, y)
    y += 14
    rate = rng.choice([5, 10, 20])
    tax = percent_of(subtotal, rate)
    totals: dict[str, Segment] = {}
    for key, label, number in (
        ("Subtotal", w.label("invoice.subtotal"), subtotal),
        ("VAT", w.label("invoice.vat", rate=rate), tax),
        ("Total", w.label("invoice.total"), subtotal + tax),
    ):
        c.text(width * 0.58, y, label, "bold" if key == "Total" else "sans", size)
        totals[key] = c.text(right, y, money(number, currency), "mono", size, "right")
        y += 26
    _distractor(c, margin, y + 30, noise[1], _distractor_value(rng, style), size)
    pick = rng.randrange(len(rows))
    desc, qty_seg, unit_seg, amount = rows[pick]
    issue, due = meta["Issue date:"], meta["Due date:"]
    ask = lambda field, **slots: w.question("invoice", field, **slots)  # noqa: E731
    qas = [
        _qa(ask("invoice_no"), meta["Invoice No:"], "header", "invoice_no"),
        _qa(ask("issue_date"), issue, "distractor", "issue_date"),
        _qa(ask("due_date"), due, "distractor", "due_date"),
        _qa(
            ask("total"),
            totals["Total"],
            "distractor",
            "total",
            _money_answers(totals["Total"].text, currency),
        ),
        _qa(
            ask("subtotal"),
            totals["Subtotal"],
            "distractor",
            "subtotal",
            _money_answers(totals["Subtotal"].text, currency),
        ),
        _qa(ask("bill_to"), client, "key_value", "bill_to"),
        _qa(ask("seller"), seller, "header", "seller"),
        _qa(ask("row_qty", item=desc.text), qty_seg, "table_cell", "row_qty"),
        _qa(
            ask("row_unit", item=desc.text),
            unit_seg,
            "table_cell",
            "row_unit",
            _money_answers(unit_seg.text, currency),
        ),
        _qa(
            ask("row_amount", item=desc.text),
            amount,
            "table_cell",
            "row_amount",
            _money_answers(amount.text, currency),
        ),
    ]
    lines = [
        {"name": d.text, "qty": q.text, "unit": u.text, "amount": a.text} for d, q, u, a in rows
    ]
    facts = {
        "issue_date": issue.text,
        "due_date": due.text,
        "terms": meta["Terms:"].text,
        **_money_facts(currency, lines, rate, totals, "VAT"),
    }
    return c.page, qas, facts


_FORM_LABELS = {
    "Name": "form.name",
    "Phone": "form.phone",
    "Date of birth": "form.dob",
    "City": "form.city",
    "Email": "form.email",
    "Relationship": "form.relationship",
}


def form(rng: random.Random, w: Wording | None = None) -> tuple[Page, list[QA], Facts]:
    """An application form with repeated labels in two sections (applicant, emergency contact)."""
    w = w or Wording("test", rng)
    noise = w.distractors("form", 3)
    width, height, size = 800, rng.choice([900, 960]), rng.choice([14, 15, 16])
    c = Canvas(width, height)
    margin = rng.randint(40, 70)
    c.text(
        margin,
        36,
        rng.choice(
            [
                "Membership Application",
                "Patient Registration",
                "Enrollment Form",
                "Volunteer Sign-up",
            ]
        ),
        "bold",
        24,
    )
    ref = c.text(
        width - margin,
        42,
        f"Ref {rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
        "mono",
        size,
        "right",
    )
    style = rng.randrange(DATE_STYLES)
    signed_on = _day(rng, 2020, 2025)
    born = signed_on - timedelta(days=rng.randint(18 * 366, 85 * 365))
    (first, last), contact = _names(rng, 2)
    phones = rng.sample(range(1000, 10000), 2)
    value_x = margin + 190
    y = 110
    sections: dict[str, dict[str, Segment]] = {}
    for n, (section, name, phone) in enumerate(
        (
            ("Applicant", f"{first} {last}", phones[0]),
            ("Emergency contact", " ".join(contact), phones[1]),
        )
    ):
        key = "form.applicant" if section == "Applicant" else "form.contact"
        c.text(margin, y, w.label(key), "bold", size + 2)
        y += 36
        rows = [
            ("Name", name),
            ("Phone", f"+1 {rng.randint(200, 999)}-{rng.randint(100, 999)}-{phone}"),
        ]
        if section == "Applicant":
            rows += [
                ("Date of birth", format_date(born, style)),
                ("City", rng.choice(_CITIES)),
                ("Email", f"{first.lower()}.{last.lower()}@example.org"),
            ]
        else:
            rows += [("Relationship", rng.choice(["Parent", "Spouse", "Sibling", "Friend"]))]
        rows.append(("", _distractor_value(rng, style)))
        rng.shuffle(rows)
        fields: dict[str, Segment] = {}
        for field, value in rows:
            label = w.label(_FORM_LABELS[field]) if field else noise[n]
            c.text(margin, y, label if label.endswith(":") else f"{label}:", "sans", size)
            c.rect((value_x - 6, y - 6, width - margin, y + size + 10))
            seg = c.text(value_x, y, value, "mono", size)
            if field:
                fields[field] = seg
            y += size + 26
        sections[section] = fields
        y += 24
    signed_label = w.label("form.signed")
    at = margin + c.width_of(signed_label + " ", "sans", size) + 10
    signed = c.text(at, y + 20, format_date(signed_on, style), "mono", size)
    c.text(margin, y + 20, signed_label, "sans", size)
    _distractor(c, margin, y + 56, noise[2], _distractor_value(rng, style), size)
    app, emer = sections["Applicant"], sections["Emergency contact"]
    ask = lambda field, **slots: w.question("form", field, **slots)  # noqa: E731
    qas = [
        _qa(ask("applicant_name"), app["Name"], "distractor", "applicant_name"),
        _qa(ask("contact_name"), emer["Name"], "distractor", "contact_name"),
        _qa(ask("applicant_phone"), app["Phone"], "distractor", "applicant_phone"),
        _qa(ask("contact_phone"), emer["Phone"], "distractor", "contact_phone"),
        _qa(ask("dob"), app["Date of birth"], "key_value", "dob"),
        _qa(ask("email"), app["Email"], "key_value", "email"),
        _qa(ask("relationship"), emer["Relationship"], "key_value", "relationship"),
        _qa(ask("signed"), signed, "distractor", "signed"),
        _qa(
            ask("ref"),
            ref,
            "header",
            "ref",
            [ref.text.removeprefix("Ref ")],
        ),
    ]
    facts: Facts = {
        "applicant_name": app["Name"].text,
        "contact_name": emer["Name"].text,
        "applicant_phone": app["Phone"].text,
        "contact_phone": emer["Phone"].text,
        "dob": app["Date of birth"].text,
        "email": app["Email"].text,
        "signed": signed.text,
    }
    return c.page, qas, facts


def table(rng: random.Random, w: Wording | None = None) -> tuple[Page, list[QA], Facts]:
    """A statistics table with a title, row and column headers and a totals row."""
    w = w or Wording("test", rng)
    noise = w.distractors("table", 2)
    width, size = 800, rng.choice([14, 15])
    n_rows = rng.randint(3, 5)
    height = 260 + 34 * (n_rows + 2)
    c = Canvas(width, height)
    margin = rng.randint(40, 70)
    metric = rng.choice(["Sales (units)", "Visitors", "Orders", "Tickets closed"])
    year = rng.randint(2018, 2025)
    title = c.text(margin, 36, f"{metric} by region, {year}", "bold", 20)
    _distractor(c, margin, 70, noise[0], _distractor_value(rng, rng.randrange(DATE_STYLES)), 12)
    cols = [margin, *[margin + 170 + i * 130 for i in range(4)]]
    y = 100
    for x, head in zip(cols, [w.label("table.region"), *_QUARTERS], strict=True):
        c.text(x, y, head, "bold", size)
    regions = rng.sample(_REGIONS, n_rows)
    cells: dict[tuple[str, str], Segment] = {}
    totals = [0, 0, 0, 0]
    for region in regions:
        y += 34
        c.hline(margin, width - margin, y - 8)
        c.text(cols[0], y, region, "sans", size)
        for i, quarter in enumerate(_QUARTERS):
            value = rng.randint(100, 9999)
            totals[i] += value
            cells[(region, quarter)] = c.text(cols[i + 1], y, f"{value:,}", "mono", size)
    y += 34
    c.hline(margin, width - margin, y - 8, 2)
    c.text(cols[0], y, w.label("table.total"), "bold", size)
    total_cells = {
        q: c.text(cols[i + 1], y, f"{totals[i]:,}", "bold", size) for i, q in enumerate(_QUARTERS)
    }
    source = c.text(margin, y + 60, f"Source: internal report {rng.randint(10, 99)}", "serif", 12)
    _distractor(c, width / 2 + 40, y + 60, noise[1], str(rng.randint(2, 99)), 12)
    ask = lambda field, **slots: w.question("table", field, **slots)  # noqa: E731
    qas: list[QA] = []
    for region, quarter in rng.sample(sorted(cells), 3):
        seg = cells[(region, quarter)]
        qas.append(
            _qa(
                ask("cell", quarter=quarter, region=region),
                seg,
                "table_cell",
                "cell",
                [seg.text.replace(",", "")],
            )
        )
    quarter = rng.choice(_QUARTERS)
    seg = total_cells[quarter]
    qas += [
        _qa(
            ask("total", quarter=quarter),
            seg,
            "distractor",
            "total",
            [seg.text.replace(",", "")],
        ),
        _qa(ask("title"), title, "header", "title"),
        _qa(
            ask("source"),
            source,
            "key_value",
            "source",
            [source.text.removeprefix("Source: ")],
        ),
    ]
    facts: Facts = {
        "rows": {r: [cells[(r, q)].text for q in _QUARTERS] for r in regions},
        "totals": [total_cells[q].text for q in _QUARTERS],
    }
    return c.page, qas, facts


def letter(rng: random.Random, w: Wording | None = None) -> tuple[Page, list[QA], Facts]:
    """A business letter: sender block, two dates (letter, meeting), reference, signature."""
    w = w or Wording("test", rng)
    noise = w.distractors("letter", 2)
    width, height, size = 800, 1000, rng.choice([14, 15, 16])
    c = Canvas(width, height)
    margin = rng.randint(60, 80)
    right = width - margin
    sender, recipient_company = rng.sample(_COMPANIES, 2)
    company = c.text(right, 40, sender, "bold", 18, "right")
    street, city = _address(rng)
    c.text(right, 66, street, "serif", size, "right")
    c.text(right, 88, city, "serif", size, "right")
    style, written = rng.randrange(DATE_STYLES), _day(rng)
    letter_date = c.text(margin, 150, format_date(written, style), "serif", size)
    (first, last), signer_name = _names(rng, 2)
    recipient = c.text(margin, 190, f"{first} {last}", "serif", size)
    c.text(margin, 212, recipient_company, "serif", size)
    ref_label = w.label("letter.ref")
    c.text(margin, 250, ref_label, "bold", size)
    _distractor(c, width / 2, 120, noise[0], _distractor_value(rng, style), size - 2)
    _distractor(c, width / 2, 250, noise[1], _distractor_value(rng, style), size - 2)
    ref = c.text(
        margin + c.width_of(ref_label + " ", "bold", size) + 12,
        250,
        f"{rng.choice('ABCDEFGH')}{rng.choice('KLMNPRST')}-{rng.randint(100, 999)}",
        "mono",
        size,
    )
    salutation = c.text(margin, 300, f"Dear {first},", "serif", size)
    y = 340
    for sentence in (
        "Thank you for your recent enquiry about our services.",
        "We would like to confirm the review meeting scheduled for",
    ):
        c.text(margin, y, sentence, "serif", size)
        y += size + 12
    meeting_day = written + timedelta(days=rng.randint(7, 45))
    meeting = c.text(margin, y, format_date(meeting_day, style), "serif", size)
    c.text(
        margin + c.width_of(meeting.text, "serif", size) + 14,
        y,
        "at our main office.",
        "serif",
        size,
    )
    y += 2 * size + 24
    c.text(margin, y, "Please bring the signed agreement to the meeting.", "serif", size)
    y += 3 * size + 20
    c.text(margin, y, "Yours sincerely,", "serif", size)
    signer = c.text(margin, y + 70, " ".join(signer_name), "serif", size)
    title = c.text(
        margin, y + 94, rng.choice(["Account Manager", "Director", "Office Lead"]), "serif", size
    )
    ask = lambda field, **slots: w.question("letter", field, **slots)  # noqa: E731
    qas = [
        _qa(ask("letter_date"), letter_date, "distractor", "letter_date"),
        _qa(ask("meeting_date"), meeting, "distractor", "meeting_date"),
        _qa(ask("recipient"), recipient, "key_value", "recipient"),
        _qa(ask("signer"), signer, "key_value", "signer"),
        _qa(ask("signer_title"), title, "key_value", "signer_title"),
        _qa(ask("ref"), ref, "key_value", "ref"),
        _qa(ask("sender"), company, "header", "sender"),
    ]
    facts: Facts = {
        "sender": company.text,
        "recipient_company": recipient_company,
        "letter_date": letter_date.text,
        "meeting_date": meeting.text,
        "recipient": recipient.text,
        "salutation": salutation.text,
        "signer": signer.text,
    }
    return c.page, qas, facts


BUILDERS: dict[str, Builder] = {
    "receipt": receipt,
    "invoice": invoice,
    "form": form,
    "table": table,
    "letter": letter,
}
