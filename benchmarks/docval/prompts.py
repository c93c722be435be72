"""Prompts for `docket/docval_grounding`: the output contract and the two input modes."""

from __future__ import annotations

from typing import Any

INSTRUCTIONS = """\
You answer a question about a document page and point to where the answer is printed.
Coordinates are pixels of the page image ({width} x {height}), origin at the top-left corner.
Copy the answer exactly as printed. Reply in exactly this format:
ANSWER: <answer text>
BBOX: [x1, y1, x2, y2]
A JSON object {{"answer": "<answer text>", "bbox": [x1, y1, x2, y2]}} is also accepted."""

VISION = "Document {doc_id}.\n{instructions}\n\nQuestion: {question}"

LAYOUT_TEXT = """\
Document {doc_id}. OCR {unit}s of the page, one per line as
{unit_title} #id: [x1, y1, x2, y2] -> "text":
{layout}

{instructions}

Question: {question}"""


def layout_lines(doc: dict[str, Any], granularity: str) -> str:
    """Serialise a document's OCR as `Region #id: [x1, y1, x2, y2] -> "text"` lines."""
    if granularity == "word":
        rows = [(i, w[1:5], w[0]) for i, w in enumerate(doc["words"])]
        title = "Word"
    else:
        rows = [(s[0], s[1:5], s[5]) for s in doc["segments"]]
        title = "Region"
    return "\n".join(
        f'{title} #{i}: [{", ".join(str(round(v)) for v in box)}] -> "{text}"'
        for i, box, text in rows
    )


def question_prompt(doc: dict[str, Any], question: str, mode: str, granularity: str) -> str:
    """The user text for one question in `mode` (`vision` or `layout_text`)."""
    instructions = INSTRUCTIONS.format(width=doc["width"], height=doc["height"])
    if mode == "vision":
        return VISION.format(doc_id=doc["doc_id"], instructions=instructions, question=question)
    unit = "word" if granularity == "word" else "region"
    return LAYOUT_TEXT.format(
        doc_id=doc["doc_id"],
        unit=unit,
        unit_title=unit.title(),
        layout=layout_lines(doc, granularity),
        instructions=instructions,
        question=question,
    )
