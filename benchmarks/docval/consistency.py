"""Internal consistency of a generated DocVAL document, checked from what the page prints.

`check_document(doc)` returns one line per problem (empty when the document is consistent):

* every fact (`doc["facts"]`, the printed text of each value field) is printed on the page as a
  whole OCR segment;
* money adds up to the cent: line amount = quantity x unit price (invoices), subtotal = sum of
  line amounts, tax = rate% of the subtotal rounded half up, total = subtotal + tax; one
  currency throughout;
* dates parse, and are ordered: an invoice is due its payment terms (`Net N`) after its issue
  date; a meeting follows its letter; an applicant is born before signing and is 18 to 100
  years old then;
* names agree across fields: the salutation greets the recipient's first name, the e-mail
  address is the applicant's `first.last`, the applicant and emergency contact (recipient and
  signer) are different people with different phone numbers, the sender is not the recipient's
  company;
* table totals are the column sums;
* each question's first answer is the text of its answer segments and its box is the union of
  their word boxes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from docket.benchmarks.docval.layouts import parse_date, parse_money, percent_of

Check = Callable[[dict[str, Any]], Iterator[str]]


def _printed(value: object) -> Iterator[str]:
    """Every text in a facts value (nested lists and dicts; numbers are not printed facts)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _printed(item)
    elif isinstance(value, list):
        for item in value:
            yield from _printed(item)


def _money_chain(facts: dict[str, Any], with_units: bool) -> Iterator[str]:
    currency = facts["currency"]

    def cents(text: str, what: str) -> int:
        value = parse_money(text, currency)
        if value is None:
            raise ValueError(f"{what} {text!r} is not money in {currency!r}")
        return value

    try:
        amounts = []
        for item in facts["items"]:
            amount = cents(item["amount"], f"amount of {item['name']}")
            if with_units:
                unit = cents(item["unit"], f"unit price of {item['name']}")
                if amount != int(item["qty"]) * unit:
                    name, qty = item["name"], item["qty"]
                    yield f"amount of {name} {item['amount']} != {qty} x {item['unit']}"
            amounts.append(amount)
        subtotal, tax = cents(facts["subtotal"], "subtotal"), cents(facts["tax"], "tax")
        total = cents(facts["total"], "total")
    except ValueError as ex:
        yield str(ex)
        return
    if subtotal != sum(amounts):
        yield f"subtotal {facts['subtotal']} != sum of line amounts ({sum(amounts)} cents)"
    if tax != percent_of(subtotal, int(facts["tax_rate"])):
        yield f"tax {facts['tax']} != {facts['tax_rate']}% of {facts['subtotal']}"
    if total != subtotal + tax:
        yield f"total {facts['total']} != subtotal {facts['subtotal']} + tax {facts['tax']}"


def _dates(facts: dict[str, Any], *names: str) -> Iterator[Any]:
    for name in names:
        yield parse_date(facts[name])


def _receipt(doc: dict[str, Any]) -> Iterator[str]:
    facts = doc["facts"]
    if parse_date(facts["date"]) is None:
        yield f"date {facts['date']!r} does not parse"
    yield from _money_chain(facts, with_units=False)


def _invoice(doc: dict[str, Any]) -> Iterator[str]:
    facts = doc["facts"]
    yield from _money_chain(facts, with_units=True)
    issued, due = _dates(facts, "issue_date", "due_date")
    terms = facts["terms"].removeprefix("Net ")
    if issued is None or due is None:
        yield f"dates {facts['issue_date']!r} / {facts['due_date']!r} do not parse"
    elif not terms.isdigit() or (due - issued).days != int(terms):
        yield (
            f"due date {facts['due_date']} is {(due - issued).days} days after issue "
            f"{facts['issue_date']}, terms say {facts['terms']!r}"
        )


def _form(doc: dict[str, Any]) -> Iterator[str]:
    facts = doc["facts"]
    born, signed = _dates(facts, "dob", "signed")
    if born is None or signed is None:
        yield f"dates {facts['dob']!r} / {facts['signed']!r} do not parse"
    elif not 18 <= (signed - born).days / 365.25 <= 100:
        yield f"applicant born {facts['dob']} is not 18 to 100 years old on {facts['signed']}"
    first, _, last = facts["applicant_name"].partition(" ")
    if facts["email"] != f"{first.lower()}.{last.lower()}@example.org":
        yield f"email {facts['email']} does not belong to {facts['applicant_name']}"
    if facts["applicant_name"] == facts["contact_name"]:
        yield "the applicant is their own emergency contact"
    if facts["applicant_phone"] == facts["contact_phone"]:
        yield "applicant and emergency contact share a phone number"


def _table(doc: dict[str, Any]) -> Iterator[str]:
    facts = doc["facts"]
    columns = zip(*facts["rows"].values(), strict=True)
    for quarter, (cells, total) in enumerate(zip(columns, facts["totals"], strict=True), 1):
        if sum(int(c.replace(",", "")) for c in cells) != int(total.replace(",", "")):
            yield f"Q{quarter} total {total} != column sum"


def _letter(doc: dict[str, Any]) -> Iterator[str]:
    facts = doc["facts"]
    written, meeting = _dates(facts, "letter_date", "meeting_date")
    if written is None or meeting is None:
        yield f"dates {facts['letter_date']!r} / {facts['meeting_date']!r} do not parse"
    elif meeting <= written:
        yield f"meeting {facts['meeting_date']} is not after the letter {facts['letter_date']}"
    if facts["salutation"] != f"Dear {facts['recipient'].split()[0]},":
        yield f"salutation {facts['salutation']!r} does not greet {facts['recipient']}"
    if facts["signer"] == facts["recipient"]:
        yield "the letter is signed by its recipient"
    if facts["sender"] == facts["recipient_company"]:
        yield "the sender writes to its own company"


CHECKS: dict[str, Check] = {
    "receipt": _receipt,
    "invoice": _invoice,
    "form": _form,
    "table": _table,
    "letter": _letter,
}


def _questions(doc: dict[str, Any]) -> Iterator[str]:
    segments = {s[0]: s for s in doc["segments"]}
    for q in doc["questions"]:
        ids = q.get("segments", [])
        if not ids or any(i not in segments for i in ids):
            yield f"{q['qid']}: answer segments {ids} are not on the page"
            continue
        text = " ".join(segments[i][5] for i in ids)
        if q["answers"][0] != text:
            yield f"{q['qid']}: answer {q['answers'][0]!r} is not the printed {text!r}"
        boxes = [w[1:5] for w in doc["words"] if len(w) > 5 and w[5] in ids]
        if not boxes:
            yield f"{q['qid']}: no words are recorded for answer segments {ids}"
            continue
        union = [min(b[0] for b in boxes), min(b[1] for b in boxes)]
        union += [max(b[2] for b in boxes), max(b[3] for b in boxes)]
        if q["bbox"] != union:
            yield f"{q['qid']}: box {q['bbox']} is not the union of its words' boxes {union}"


def check_document(doc: dict[str, Any]) -> list[str]:
    """Problems with one generated document (see the module docstring); [] when consistent."""
    where = doc.get("doc_id", "?")
    if doc.get("doc_type") not in CHECKS or not isinstance(doc.get("facts"), dict):
        return [f"{where}: no facts to check for doc_type {doc.get('doc_type')!r}"]
    texts = {s[5] for s in doc["segments"]}
    problems = [
        f"fact {value!r} is not printed as a segment"
        for value in _printed(doc["facts"])
        if value not in texts and value != doc["facts"].get("currency")
    ]
    try:
        problems += CHECKS[doc["doc_type"]](doc)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as ex:
        problems.append(f"facts are malformed ({type(ex).__name__}: {str(ex)[:80]})")
    problems += _questions(doc)
    return [f"{where}: {p}" for p in problems]
