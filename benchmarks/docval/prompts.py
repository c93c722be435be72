"""Prompts for `docket/docval_grounding`: the output contract and the two input modes.

`vision` sends the page image with `grounding_prompt` (shared with the SFT student, see
`methods/distill/output_format.py`); `layout_text` sends the page's word-level OCR tokens with
their pixel boxes as text instead of the image, for text-only models.
"""

from __future__ import annotations

from typing import Any

from docket.methods.distill.output_format import grounding_instructions, grounding_prompt

LAYOUT_TEXT = """\
Document {doc_id}. Word-level OCR tokens of the page (they may be a few pixels off and may
join or cut words), one per line as
Token #id: [x1, y1, x2, y2] -> "text":
{layout}

{instructions}
An answer printed over several tokens has the box enclosing all of them.

Question: {question}"""


def ocr_tokens(doc: dict[str, Any]) -> list[list[Any]]:
    """The document's OCR tokens `[text, x1, y1, x2, y2]`: its simulated OCR (`ocr`), else its
    real OCR words (`words`), else its regions (`segments`)."""
    if doc.get("ocr"):
        return [list(t[:5]) for t in doc["ocr"]]
    if doc.get("words"):
        return [list(w[:5]) for w in doc["words"]]
    return [[s[5], *s[1:5]] for s in doc.get("segments", [])]


def layout_lines(doc: dict[str, Any]) -> str:
    """Serialise a document's OCR tokens as `Token #id: [x1, y1, x2, y2] -> "text"` lines."""
    return "\n".join(
        f'Token #{i}: [{", ".join(str(round(v)) for v in token[1:5])}] -> "{token[0]}"'
        for i, token in enumerate(ocr_tokens(doc))
    )


def question_prompt(doc: dict[str, Any], question: str, mode: str) -> str:
    """The user text for one question in `mode` (`vision` or `layout_text`)."""
    if mode == "vision":
        return grounding_prompt(doc["doc_id"], doc["width"], doc["height"], question)
    return LAYOUT_TEXT.format(
        doc_id=doc["doc_id"],
        layout=layout_lines(doc),
        instructions=grounding_instructions(doc["width"], doc["height"]),
        question=question,
    )
