"""Printed labels and question paraphrases of the DocVAL layouts, in two disjoint families.

A learned surface attacker trained on generated documents must not meet the test split's
wording: every printed label and every question template exists in a `train` and a `test`
variant set that share no entry. The shipped split and `docket generate` splits use `test`;
`generate_split(..., family="train")` (and attackers, SFT data) use `train`. Test questions are
also worded away from their labels (the question "What did the customer pay altogether?" for
the label "Amount paid"), so matching words is not reading them.

`Wording(family, rng)` draws one label per key and one question template per field.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FAMILIES = ("train", "test")

#: key -> (train labels, test labels); `{rate}` is the tax rate.
LABELS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "receipt.date": (("Date:", "Date"), ("Sold on", "Purchased:")),
    "receipt.no": (("No.", "Receipt"), ("Till ref", "Trans.")),
    "receipt.subtotal": (("Subtotal", "Sub-total"), ("Goods", "Net sales")),
    "receipt.tax": (("Tax {rate}%", "Sales tax {rate}%"), ("Levy {rate}%", "Duty {rate}%")),
    "receipt.total": (("Total", "TOTAL"), ("Amount paid", "To pay")),
    "invoice.no": (("Invoice No:", "Invoice #"), ("Document:", "Bill ref:")),
    "invoice.issued": (("Issue date:", "Invoice date:"), ("Raised:", "Dated:")),
    "invoice.due": (("Due date:", "Payment due:"), ("Settle by:", "Deadline:")),
    "invoice.terms": (("Terms:", "Payment terms:"), ("Conditions:", "Credit:")),
    "invoice.bill_to": (("Bill to:", "Billed to:"), ("Client:", "Customer:")),
    "invoice.qty": (("Qty", "Quantity"), ("Units", "Count")),
    "invoice.unit": (("Unit price", "Price"), ("Rate", "Each")),
    "invoice.amount": (("Amount", "Line total"), ("Sum", "Net")),
    "invoice.subtotal": (("Subtotal", "Sub-total"), ("Goods value", "Before VAT")),
    "invoice.vat": (("VAT {rate}%", "Tax {rate}%"), ("Levy {rate}%", "Duty {rate}%")),
    "invoice.total": (("Total due", "Amount due"), ("Payable", "Balance to pay")),
    "form.applicant": (("Applicant", "Applicant details"), ("Person applying", "Section A")),
    "form.contact": (("Emergency contact", "In case of emergency"), ("Next of kin", "Section B")),
    "form.name": (("Name", "Full name"), ("Surname, given", "Called")),
    "form.phone": (("Phone", "Telephone"), ("Mobile", "Reach at")),
    "form.dob": (("Date of birth", "Birth date"), ("Born", "DOB")),
    "form.city": (("City", "Town"), ("Resides in", "Locality")),
    "form.email": (("Email", "E-mail"), ("Mail to", "Online")),
    "form.relationship": (("Relationship", "Relation"), ("Connection", "Is my")),
    "form.signed": (("Signed on:", "Date signed:"), ("Executed:", "Completed:")),
    "table.region": (("Region", "Area"), ("Zone", "Territory")),
    "table.total": (("Total", "All regions"), ("Sum", "Overall")),
    "letter.ref": (("Our ref:", "Reference:"), ("File:", "Quote:")),
}

#: (doc type, field) -> (train templates, test templates); `{item}`, `{quarter}`, `{region}`.
QUESTIONS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("receipt", "total"): (
        ("What is the total amount paid?", "What is the receipt total?"),
        ("What did the customer pay altogether?", "How much left the buyer's pocket?"),
    ),
    ("receipt", "subtotal"): (
        ("What is the subtotal before tax?", "What is the sub-total?"),
        ("What did the goods cost before the levy?", "What is the pre-tax sum of the items?"),
    ),
    ("receipt", "tax"): (
        ("How much tax was charged?", "What is the sales tax amount?"),
        ("How much of the payment went to the government?", "What levy was added?"),
    ),
    ("receipt", "date"): (
        ("What is the date on the receipt?", "On what date was the receipt issued?"),
        ("When did this purchase happen?", "Which day was the sale made?"),
    ),
    ("receipt", "shop"): (
        ("What is the name of the shop?", "Which shop issued the receipt?"),
        ("Where was this bought?", "Which store is this slip from?"),
    ),
    ("receipt", "receipt_no"): (
        ("What is the receipt number?", "What number does the receipt have?"),
        ("Which transaction reference is printed?", "What identifies this sale?"),
    ),
    ("receipt", "item_amount"): (
        ("What is the line amount for {item}?", "How much was charged for {item}?"),
        ("What did the {item} cost in all?", "What was paid for the {item} line?"),
    ),
    ("receipt", "item_qty"): (
        ("How many units of {item} were bought?", "What quantity of {item} was bought?"),
        ("How many {item} did the customer take?", "What multiplier is shown next to {item}?"),
    ),
    ("invoice", "invoice_no"): (
        ("What is the invoice number?", "Which invoice number is printed?"),
        ("What reference identifies this bill?", "Which document code does it carry?"),
    ),
    ("invoice", "issue_date"): (
        ("What is the issue date of the invoice?", "When was the invoice issued?"),
        ("On which day was this bill raised?", "When was this bill written out?"),
    ),
    ("invoice", "due_date"): (
        ("When is the invoice due?", "What is the due date?"),
        ("By when must it be settled?", "What is the last day to pay?"),
    ),
    ("invoice", "total"): (
        ("What is the total amount due?", "What is the invoice total?"),
        ("How much does the client owe in all?", "What must be paid, VAT included?"),
    ),
    ("invoice", "subtotal"): (
        ("What is the subtotal?", "What is the sub-total before VAT?"),
        ("What is the value of the goods without the levy?", "What do the lines add up to?"),
    ),
    ("invoice", "bill_to"): (
        ("Who is the invoice billed to?", "What is the billed customer's name?"),
        ("Who has to pay this?", "Which person receives this bill?"),
    ),
    ("invoice", "seller"): (
        ("Which company issued the invoice?", "What company sent the invoice?"),
        ("Who is the supplier?", "Which firm wants the money?"),
    ),
    ("invoice", "row_qty"): (
        ("What is the quantity for {item}?", "How many units of {item} are invoiced?"),
        ("How many {item} were supplied?", "What count is listed against {item}?"),
    ),
    ("invoice", "row_unit"): (
        ("What is the unit price of {item}?", "What does one unit of {item} cost?"),
        ("What rate is charged per {item}?", "What is the price of a single {item}?"),
    ),
    ("invoice", "row_amount"): (
        ("What is the amount for {item}?", "What is the line total for {item}?"),
        ("What is the charge for all the {item}?", "What does the {item} line come to?"),
    ),
    ("form", "applicant_name"): (
        ("What is the applicant's name?", "What is the name of the applicant?"),
        ("Who filled in this form?", "Who is applying?"),
    ),
    ("form", "contact_name"): (
        ("What is the name of the emergency contact?", "Who is the emergency contact?"),
        ("Whom should we call if something happens?", "Who is the next of kin?"),
    ),
    ("form", "applicant_phone"): (
        ("What is the applicant's phone number?", "What telephone number has the applicant?"),
        ("How can the person applying be reached?", "What is the applicant's mobile?"),
    ),
    ("form", "contact_phone"): (
        ("What is the emergency contact's phone number?", "What number has the contact?"),
        ("On what number is the next of kin reachable?", "How do we reach section B's person?"),
    ),
    ("form", "dob"): (
        ("What is the applicant's date of birth?", "When was the applicant born?"),
        ("What birthday does the person applying give?", "On which day was the applicant born?"),
    ),
    ("form", "email"): (
        ("What is the applicant's email address?", "What e-mail does the applicant give?"),
        ("Where can we write to the applicant online?", "What electronic address is given?"),
    ),
    ("form", "relationship"): (
        ("How is the emergency contact related to the applicant?", "What relationship is it?"),
        ("What is the next of kin to the person applying?", "How are the two people connected?"),
    ),
    ("form", "signed"): (
        ("On what date was the form signed?", "When was the form signed?"),
        ("When was this form completed?", "On which day was it executed?"),
    ),
    ("form", "ref"): (
        ("What is the form's reference number?", "What reference does the form have?"),
        ("Which code is printed at the top right?", "What identifier does this sheet carry?"),
    ),
    ("table", "cell"): (
        (
            "What is the {quarter} value for the {region} region?",
            "What was {region}'s figure in {quarter}?",
        ),
        ("How much did {region} record in {quarter}?", "What figure has {region} for {quarter}?"),
    ),
    ("table", "total"): (
        ("What is the total for {quarter}?", "What is the {quarter} total?"),
        ("What do all regions add up to in {quarter}?", "What is the sum overall for {quarter}?"),
    ),
    ("table", "title"): (
        ("What is the title of the table?", "What is the table's heading?"),
        ("What does this table show?", "What is written above the figures?"),
    ),
    ("table", "source"): (
        ("What source is given for the table?", "Where do the figures come from?"),
        ("Which document are these numbers taken from?", "What is cited as the origin?"),
    ),
    ("letter", "letter_date"): (
        ("What is the date of the letter?", "When was the letter written?"),
        ("On which day was this correspondence sent?", "What day is this letter from?"),
    ),
    ("letter", "meeting_date"): (
        ("On what date is the review meeting?", "When is the meeting?"),
        ("When should the reader come to the main office?", "What day is the review set for?"),
    ),
    ("letter", "recipient"): (
        ("Who is the letter addressed to?", "Who receives the letter?"),
        ("Who is being written to?", "Whom is the correspondence for?"),
    ),
    ("letter", "signer"): (
        ("Who signed the letter?", "Who is the letter from?"),
        ("Whose signature closes it?", "Who wrote this, by name?"),
    ),
    ("letter", "signer_title"): (
        ("What is the job title of the person who signed?", "What is the signer's title?"),
        ("What position does the writer hold?", "What role has the author?"),
    ),
    ("letter", "ref"): (
        ("What is the reference number of the letter?", "What reference does the letter give?"),
        ("Which file code should a reply quote?", "What code identifies this correspondence?"),
    ),
    ("letter", "sender"): (
        ("Which company sent the letter?", "What company wrote the letter?"),
        ("Which firm is the writer with?", "Whose letterhead is this?"),
    ),
}

#: doc type -> (train distractor labels, test distractor labels): printed label-value lines
#: that share words with the questions and answer none of them.
DISTRACTORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "receipt": (
        ("Total items:", "Tax ID:", "Points date:"),
        ("Items paid for:", "Customer pays tax no:", "Sale voucher:"),
    ),
    "invoice": (
        ("Order date:", "Customer No:", "Total pages:"),
        ("Order placed:", "Client account:", "Amount of pages:"),
    ),
    "form": (
        ("Office phone:", "Member No:", "Date received:"),
        ("Applicant office:", "Contact desk:", "Form received:"),
    ),
    "table": (
        ("Total rows:", "Region code:", "Updated:"),
        ("All regions listed:", "Figures for:", "Sum checked:"),
    ),
    "letter": (
        ("Date received:", "Meeting room:", "Our phone:"),
        ("Letter filed:", "Review desk:", "Office reached at:"),
    ),
}


#: How test questions name a table's quarter and region (the page prints `Q3`, `North`).
_QUARTER_WORDS = {
    "Q1": ("the first quarter", "January to March"),
    "Q2": ("the second quarter", "April to June"),
    "Q3": ("the third quarter", "July to September"),
    "Q4": ("the fourth quarter", "October to December"),
}
_REGION_WORDS = {
    "North": "the northern region",
    "South": "the southern region",
    "East": "the eastern region",
    "West": "the western region",
    "Central": "the central region",
}


@dataclass
class Wording:
    """The labels and question templates of one family, drawn with the document's rng.

    Args:
        family: `train` or `test`.
        rng: The document's random generator.
    """

    family: str
    rng: random.Random

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"wording family {self.family!r}; accepted: {', '.join(FAMILIES)}")

    @property
    def _side(self) -> int:
        return FAMILIES.index(self.family)

    def label(self, key: str, **slots: object) -> str:
        """A printed label for `key` (one of `LABELS`), its slots filled."""
        return self.rng.choice(LABELS[key][self._side]).format(**slots)

    def question(self, doc_type: str, field: str, **slots: object) -> str:
        """A question template for `field` of `doc_type`, its slots filled (test questions name
        a quarter and a region in words, not as the page prints them)."""
        chosen = self.rng.choice(QUESTIONS[(doc_type, field)][self._side])
        if self.family == "test":
            if "quarter" in slots:
                slots["quarter"] = self.rng.choice(_QUARTER_WORDS[str(slots["quarter"])])
            if "region" in slots:
                slots["region"] = _REGION_WORDS[str(slots["region"])]
        return chosen.format(**slots)

    def distractors(self, doc_type: str, count: int) -> list[str]:
        """`count` different distractor labels for a page of `doc_type`."""
        return self.rng.sample(DISTRACTORS[doc_type][self._side], count)
