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
Builder = Callable[[random.Random], tuple[Page, list[QA], Facts]]

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


def receipt(rng: random.Random) -> tuple[Page, list[QA], Facts]:
    """A till receipt: shop header, date, items with quantities, subtotal, tax, total."""
    currency = rng.choice(["$", "EUR ", "£"])
    n_items = rng.randint(3, 7)
    width, size = rng.choice([420, 460, 500]), rng.choice([14, 15, 16])
    line = size + 10
    height = 230 + line * (n_items + 6)
    c = Canvas(width, height)
    margin = rng.randint(18, 30)
    right = width - margin
    shop = c.text(margin, 20, rng.choice(_SHOPS), "bold", size + 6)
    street, city = _address(rng)
    c.text(margin, 20 + size + 14, street, "sans", size - 2)
    c.text(margin, 20 + 2 * size + 16, city, "sans", size - 2)
    y = 30 + 3 * size + 24
    c.text(margin, y, "Date:", "sans", size)
    when = format_date(_day(rng), rng.randrange(DATE_STYLES))
    date_seg = c.text(margin + c.width_of("Date: ", "sans", size) + 8, y, when, "sans", size)
    receipt_no = c.text(right, y, f"No. {rng.randint(1000, 99999)}", "mono", size, "right")
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
        ("Subtotal", "Subtotal", subtotal),
        ("Tax", f"Tax {rate}%", tax),
        ("Total", "Total", subtotal + tax),
    ):
        c.text(margin, y, label, "bold" if key == "Total" else "sans", size)
        totals[key] = c.text(
            right, y, money(value, currency), "bold" if key == "Total" else "mono", size, "right"
        )
        y += line
    pick = rng.randrange(len(items))
    item, qty_seg, amount = items[pick]
    qas = [
        _qa(
            "What is the total amount paid?",
            totals["Total"],
            "distractor",
            "total",
            _money_answers(totals["Total"].text, currency),
        ),
        _qa(
            "What is the subtotal before tax?",
            totals["Subtotal"],
            "distractor",
            "subtotal",
            _money_answers(totals["Subtotal"].text, currency),
        ),
        _qa(
            "How much tax was charged?",
            totals["Tax"],
            "key_value",
            "tax",
            _money_answers(totals["Tax"].text, currency),
        ),
        _qa("What is the date on the receipt?", date_seg, "key_value", "date"),
        _qa("What is the name of the shop?", shop, "header", "shop"),
        _qa(
            "What is the receipt number?",
            receipt_no,
            "header",
            "receipt_no",
            [receipt_no.text.removeprefix("No. ")],
        ),
        _qa(
            f"What is the line amount for {item.text}?",
            amount,
            "table_cell",
            "item_amount",
            _money_answers(amount.text, currency),
        ),
        _qa(
            f"How many units of {item.text} were bought?",
            qty_seg,
            "table_cell",
            "item_qty",
            [qty_seg.text.removeprefix("x")],
        ),
    ]
    lines = [{"name": i.text, "qty": q.text, "amount": a.text} for i, q, a in items]
    facts = {"date": date_seg.text, **_money_facts(currency, lines, rate, totals, "Tax")}
    return c.page, qas, facts


def invoice(rng: random.Random) -> tuple[Page, list[QA], Facts]:
    """An invoice: seller block and invoice meta in two columns, bill-to, item table, totals."""
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
    for i, (label, value) in enumerate(
        (
            ("Invoice No:", f"INV-{rng.randint(1000, 9999)}"),
            ("Issue date:", format_date(issued, style)),
            ("Due date:", format_date(issued + timedelta(days=terms), style)),
            ("Terms:", f"Net {terms}"),
        )
    ):
        c.text(meta_x, 90 + i * 26, label, "sans", size)
        meta[label] = c.text(value_x, 90 + i * 26, value, "mono", size)
    c.text(margin, 190, "Bill to:", "bold", size)
    first, last = _names(rng, 1)[0]
    client = c.text(margin, 214, f"{first} {last}", "sans", size)
    street2, city2 = _address(rng)
    c.text(margin, 236, street2, "sans", size)
    c.text(margin, 258, city2, "sans", size)
    cols = [margin, width * 0.5, width * 0.64, right]
    y = 320
    for x, head in zip(cols, ["Description", "Qty", "Unit price", "Amount"], strict=True):
        c.text(x, y, head, "bold", size, "right" if head == "Amount" else "left")
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
    for label, number in (
        ("Subtotal", subtotal),
        (f"VAT {rate}%", tax),
        ("Total due", subtotal + tax),
    ):
        c.text(width * 0.58, y, label, "bold" if label == "Total due" else "sans", size)
        totals[label.split()[0]] = c.text(right, y, money(number, currency), "mono", size, "right")
        y += 26
    pick = rng.randrange(len(rows))
    desc, qty_seg, unit_seg, amount = rows[pick]
    issue, due = meta["Issue date:"], meta["Due date:"]
    qas = [
        _qa("What is the invoice number?", meta["Invoice No:"], "header", "invoice_no"),
        _qa("What is the issue date of the invoice?", issue, "distractor", "issue_date"),
        _qa("When is the invoice due?", due, "distractor", "due_date"),
        _qa(
            "What is the total amount due?",
            totals["Total"],
            "distractor",
            "total",
            _money_answers(totals["Total"].text, currency),
        ),
        _qa(
            "What is the subtotal?",
            totals["Subtotal"],
            "distractor",
            "subtotal",
            _money_answers(totals["Subtotal"].text, currency),
        ),
        _qa("Who is the invoice billed to?", client, "key_value", "bill_to"),
        _qa("Which company issued the invoice?", seller, "header", "seller"),
        _qa(f"What is the quantity for {desc.text}?", qty_seg, "table_cell", "row_qty"),
        _qa(
            f"What is the unit price of {desc.text}?",
            unit_seg,
            "table_cell",
            "row_unit",
            _money_answers(unit_seg.text, currency),
        ),
        _qa(
            f"What is the amount for {desc.text}?",
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


def form(rng: random.Random) -> tuple[Page, list[QA], Facts]:
    """An application form with repeated labels in two sections (applicant, emergency contact)."""
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
    for section, name, phone in (
        ("Applicant", f"{first} {last}", phones[0]),
        ("Emergency contact", " ".join(contact), phones[1]),
    ):
        c.text(margin, y, section, "bold", size + 2)
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
        fields: dict[str, Segment] = {}
        for label, value in rows:
            c.text(margin, y, f"{label}:", "sans", size)
            c.rect((value_x - 6, y - 6, width - margin, y + size + 10))
            fields[label] = c.text(value_x, y, value, "mono", size)
            y += size + 26
        sections[section] = fields
        y += 24
    signed = c.text(margin + 120, y + 20, format_date(signed_on, style), "mono", size)
    c.text(margin, y + 20, "Signed on:", "sans", size)
    app, emer = sections["Applicant"], sections["Emergency contact"]
    qas = [
        _qa("What is the applicant's name?", app["Name"], "distractor", "applicant_name"),
        _qa(
            "What is the name of the emergency contact?", emer["Name"], "distractor", "contact_name"
        ),
        _qa("What is the applicant's phone number?", app["Phone"], "distractor", "applicant_phone"),
        _qa(
            "What is the emergency contact's phone number?",
            emer["Phone"],
            "distractor",
            "contact_phone",
        ),
        _qa("What is the applicant's date of birth?", app["Date of birth"], "key_value", "dob"),
        _qa("What is the applicant's email address?", app["Email"], "key_value", "email"),
        _qa(
            "How is the emergency contact related to the applicant?",
            emer["Relationship"],
            "key_value",
            "relationship",
        ),
        _qa("On what date was the form signed?", signed, "distractor", "signed"),
        _qa(
            "What is the form's reference number?",
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


def table(rng: random.Random) -> tuple[Page, list[QA], Facts]:
    """A statistics table with a title, row and column headers and a totals row."""
    width, size = 800, rng.choice([14, 15])
    n_rows = rng.randint(3, 5)
    height = 260 + 34 * (n_rows + 2)
    c = Canvas(width, height)
    margin = rng.randint(40, 70)
    metric = rng.choice(["Sales (units)", "Visitors", "Orders", "Tickets closed"])
    year = rng.randint(2018, 2025)
    title = c.text(margin, 36, f"{metric} by region, {year}", "bold", 20)
    cols = [margin, *[margin + 170 + i * 130 for i in range(4)]]
    y = 100
    for x, head in zip(cols, ["Region", *_QUARTERS], strict=True):
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
    c.text(cols[0], y, "Total", "bold", size)
    total_cells = {
        q: c.text(cols[i + 1], y, f"{totals[i]:,}", "bold", size) for i, q in enumerate(_QUARTERS)
    }
    source = c.text(margin, y + 60, f"Source: internal report {rng.randint(10, 99)}", "serif", 12)
    qas: list[QA] = []
    for region, quarter in rng.sample(sorted(cells), 3):
        seg = cells[(region, quarter)]
        qas.append(
            _qa(
                f"What is the {quarter} value for the {region} region?",
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
            f"What is the total for {quarter}?",
            seg,
            "distractor",
            "total",
            [seg.text.replace(",", "")],
        ),
        _qa("What is the title of the table?", title, "header", "title"),
        _qa(
            "What source is given for the table?",
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


def letter(rng: random.Random) -> tuple[Page, list[QA], Facts]:
    """A business letter: sender block, two dates (letter, meeting), reference, signature."""
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
    c.text(margin, 250, "Our ref:", "bold", size)
    ref = c.text(
        margin + 100,
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
    qas = [
        _qa("What is the date of the letter?", letter_date, "distractor", "letter_date"),
        _qa("On what date is the review meeting?", meeting, "distractor", "meeting_date"),
        _qa("Who is the letter addressed to?", recipient, "key_value", "recipient"),
        _qa("Who signed the letter?", signer, "key_value", "signer"),
        _qa("What is the job title of the person who signed?", title, "key_value", "signer_title"),
        _qa("What is the reference number of the letter?", ref, "key_value", "ref"),
        _qa("Which company sent the letter?", company, "header", "sender"),
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
