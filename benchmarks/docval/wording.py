"""Printed labels and question paraphrases of the DocVAL layouts, in two disjoint families.

A learned surface attacker trained on generated documents must not meet the test split's
wording: every printed label and every question template exists in a `train` and a `test`
variant set that share no entry. The shipped split and `docket generate` splits use `test`;
`generate_split(..., family="train")` (and attackers, SFT data) use `train`. Test questions are
also worded away from their labels ("Tell me the sum the customer paid altogether." for the
label "Amount paid"), so matching words is not reading them, and they open with one of
`TEST_OPENERS` drawn apart from the field, so their first words do not say what is asked.

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

#: (doc type, field) -> (train question templates, test subjects): a train template is a whole
#: question; a test subject is a noun phrase that `TEST_OPENERS` turn into a question (so the
#: question's first words are the same for every field). Slots: `{item}`, `{quarter}`, `{region}`.
QUESTIONS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("receipt", "total"): (
        ("What is the total amount paid?", "What is the receipt total?"),
        ("the sum the customer paid altogether", "the money that left the buyer's pocket"),
    ),
    ("receipt", "subtotal"): (
        ("What is the subtotal before tax?", "What is the sub-total?"),
        ("the cost of the goods before the levy", "the pre-tax sum of the items"),
    ),
    ("receipt", "tax"): (
        ("How much tax was charged?", "What is the sales tax amount?"),
        ("the part of the payment that went to the government", "the levy that was added"),
    ),
    ("receipt", "date"): (
        ("What is the date on the receipt?", "On what date was the receipt issued?"),
        ("the day this purchase happened", "the day the sale was made"),
    ),
    ("receipt", "shop"): (
        ("What is the name of the shop?", "Which shop issued the receipt?"),
        ("the store this slip is from", "the place where this was bought"),
    ),
    ("receipt", "receipt_no"): (
        ("What is the receipt number?", "What number does the receipt have?"),
        ("the transaction reference on the slip", "the code that identifies this sale"),
    ),
    ("receipt", "item_amount"): (
        ("What is the line amount for {item}?", "How much was charged for {item}?"),
        ("the cost of the {item} in all", "the sum paid for the {item} line"),
    ),
    ("receipt", "item_qty"): (
        ("How many units of {item} were bought?", "What quantity of {item} was bought?"),
        ("the number of {item} the customer took", "the multiplier shown next to {item}"),
    ),
    ("invoice", "invoice_no"): (
        ("What is the invoice number?", "Which invoice number is printed?"),
        ("the reference that identifies this bill", "the document code this bill carries"),
    ),
    ("invoice", "issue_date"): (
        ("What is the issue date of the invoice?", "When was the invoice issued?"),
        ("the day this bill was raised", "the day this bill was written out"),
    ),
    ("invoice", "due_date"): (
        ("When is the invoice due?", "What is the due date?"),
        ("the day by which it must be settled", "the last day to pay"),
    ),
    ("invoice", "total"): (
        ("What is the total amount due?", "What is the invoice total?"),
        ("the sum the client owes in all", "the figure to be paid, VAT included"),
    ),
    ("invoice", "subtotal"): (
        ("What is the subtotal?", "What is the sub-total before VAT?"),
        ("the value of the goods without the levy", "the figure the lines add up to"),
    ),
    ("invoice", "bill_to"): (
        ("Who is the invoice billed to?", "What is the billed customer's name?"),
        ("the person who has to pay this", "the person who receives this bill"),
    ),
    ("invoice", "seller"): (
        ("Which company issued the invoice?", "What company sent the invoice?"),
        ("the supplier of these services", "the firm that wants the money"),
    ),
    ("invoice", "row_qty"): (
        ("What is the quantity for {item}?", "How many units of {item} are invoiced?"),
        ("the number of {item} supplied", "the count listed against {item}"),
    ),
    ("invoice", "row_unit"): (
        ("What is the unit price of {item}?", "What does one unit of {item} cost?"),
        ("the rate charged per {item}", "the price of a single {item}"),
    ),
    ("invoice", "row_amount"): (
        ("What is the amount for {item}?", "What is the line total for {item}?"),
        ("the charge for all the {item}", "the figure the {item} line comes to"),
    ),
    ("form", "applicant_name"): (
        ("What is the applicant's name?", "What is the name of the applicant?"),
        ("the person who filled in this form", "the name of the person applying"),
    ),
    ("form", "contact_name"): (
        ("What is the name of the emergency contact?", "Who is the emergency contact?"),
        ("the person to call if something happens", "the next of kin"),
    ),
    ("form", "applicant_phone"): (
        ("What is the applicant's phone number?", "What telephone number has the applicant?"),
        ("the way the person applying can be reached", "the applicant's mobile"),
    ),
    ("form", "contact_phone"): (
        ("What is the emergency contact's phone number?", "What number has the contact?"),
        ("the number the next of kin is reachable on", "the way to reach section B's person"),
    ),
    ("form", "dob"): (
        ("What is the applicant's date of birth?", "When was the applicant born?"),
        ("the birthday the person applying gives", "the day the applicant was born"),
    ),
    ("form", "email"): (
        ("What is the applicant's email address?", "What e-mail does the applicant give?"),
        ("the place to write to the applicant online", "the electronic address given"),
    ),
    ("form", "relationship"): (
        ("How is the emergency contact related to the applicant?", "What relationship is it?"),
        ("the next of kin's tie to the person applying", "the way the two people are connected"),
    ),
    ("form", "signed"): (
        ("On what date was the form signed?", "When was the form signed?"),
        ("the day this form was completed", "the day it was executed"),
    ),
    ("form", "ref"): (
        ("What is the form's reference number?", "What reference does the form have?"),
        ("the code printed at the top right", "the identifier this sheet carries"),
    ),
    ("table", "cell"): (
        (
            "What is the {quarter} value for the {region} region?",
            "What was {region}'s figure in {quarter}?",
        ),
        ("the amount {region} recorded in {quarter}", "the figure {region} has for {quarter}"),
    ),
    ("table", "total"): (
        ("What is the total for {quarter}?", "What is the {quarter} total?"),
        ("the figure all regions add up to in {quarter}", "the sum overall for {quarter}"),
    ),
    ("table", "title"): (
        ("What is the title of the table?", "What is the table's heading?"),
        ("the subject of this table", "the text written above the figures"),
    ),
    ("table", "source"): (
        ("What source is given for the table?", "Where do the figures come from?"),
        ("the document these numbers are taken from", "the origin cited for the figures"),
    ),
    ("letter", "letter_date"): (
        ("What is the date of the letter?", "When was the letter written?"),
        ("the day this correspondence was sent", "the day this letter is from"),
    ),
    ("letter", "meeting_date"): (
        ("On what date is the review meeting?", "When is the meeting?"),
        ("the day the reader should come to the main office", "the day the review is set for"),
    ),
    ("letter", "recipient"): (
        ("Who is the letter addressed to?", "Who receives the letter?"),
        ("the person being written to", "the person the correspondence is for"),
    ),
    ("letter", "signer"): (
        ("Who signed the letter?", "Who is the letter from?"),
        ("the writer, by name", "the person whose signature closes it"),
    ),
    ("letter", "signer_title"): (
        ("What is the job title of the person who signed?", "What is the signer's title?"),
        ("the position the writer holds", "the role of the author"),
    ),
    ("letter", "ref"): (
        ("What is the reference number of the letter?", "What reference does the letter give?"),
        ("the file code a reply should quote", "the code that identifies this correspondence"),
    ),
    ("letter", "sender"): (
        ("Which company sent the letter?", "What company wrote the letter?"),
        ("the firm the writer is with", "the company whose letterhead this is"),
    ),
}

#: How a test subject becomes a question; drawn apart from the field, so the first words of a
#: test question say nothing about what it asks (version 3 began dates with "When", people
#: with "Who": a layout model told the first word scored half again as much as one told nothing).
TEST_OPENERS = ("What is {}?", "Please state {}.", "Tell me {}.", "Name {}.")


def question_templates(doc_type: str, field: str) -> list[str]:
    """Every whole test question template of a field (each opener with each subject)."""
    return [
        o.replace("{}", subject)
        for subject in QUESTIONS[(doc_type, field)][1]
        for o in TEST_OPENERS
    ]


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
        openers: The generator that draws test questions' openers (default `rng`); a separate
            one leaves the page and its values as they were drawn before openers existed.
    """

    family: str
    rng: random.Random
    openers: random.Random | None = None

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
            chosen = (self.openers or self.rng).choice(TEST_OPENERS).replace("{}", chosen)
            if "quarter" in slots:
                slots["quarter"] = self.rng.choice(_QUARTER_WORDS[str(slots["quarter"])])
            if "region" in slots:
                slots["region"] = _REGION_WORDS[str(slots["region"])]
        return chosen.format(**slots)

    def distractors(self, doc_type: str, count: int) -> list[str]:
        """`count` different distractor labels for a page of `doc_type`."""
        return self.rng.sample(DISTRACTORS[doc_type][self._side], count)
