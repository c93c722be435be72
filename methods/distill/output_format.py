"""The grounded-answer contract: the prompt that states it and the parser that reads it.

`grounding_instructions` / `grounding_prompt` are the words `docket/docval_grounding` sends in
vision mode; the SFT student trains on the same prompt, so a saved student is scored on what it
learnt. Accepted outputs (first match wins):
1. a JSON object, bare or in a ```json fence, with `answer` and `bbox` (or `box`);
2. lines `ANSWER: ...` and `BBOX: [x1, y1, x2, y2]` (case-insensitive, optional `REASONING:`);
3. without an ANSWER line, a sentence "the answer is X" gives the answer (noted in `problems`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

Box = tuple[float, float, float, float]

INSTRUCTIONS = """\
You answer a question about a document page and point to where the answer is printed.
Coordinates are pixels of the page image ({width} x {height}), origin at the top-left corner.
Copy the answer exactly as printed. Reply in exactly this format:
ANSWER: <answer text>
BBOX: [x1, y1, x2, y2]
A JSON object {{"answer": "<answer text>", "bbox": [x1, y1, x2, y2]}} is also accepted."""

VISION_PROMPT = "Document {doc_id}.\n{instructions}\n\nQuestion: {question}"


def grounding_instructions(width: int, height: int) -> str:
    """The output contract for a page of `width` x `height` pixels."""
    return INSTRUCTIONS.format(width=width, height=height)


def grounding_prompt(doc_id: str, width: int, height: int, question: str) -> str:
    """The text that goes with the page image (vision mode and the SFT student's input)."""
    return VISION_PROMPT.format(
        doc_id=doc_id, instructions=grounding_instructions(width, height), question=question
    )


_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_BOX = re.compile(
    rf"[\[(]\s*({_NUMBER})\s*,?\s*({_NUMBER})\s*,?\s*({_NUMBER})\s*,?\s*({_NUMBER})\s*[\])]"
)
_ANSWER = re.compile(r"^\s*\**\s*answer\s*\**\s*:\s*\**\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_BBOX_LINE = re.compile(
    r"^\s*\**\s*(?:bbox|box)\s*\**\s*:\s*\**\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE
)
_REASONING = re.compile(
    r"reasoning\s*:\s*(.*?)(?=^\s*answer\s*:|\Z)", re.IGNORECASE | re.DOTALL | re.MULTILINE
)
_SENTENCE = re.compile(
    r"\bthe answer(?: text)? is:?\s*(.+?)\s*\.?\s*$", re.IGNORECASE | re.MULTILINE
)
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)


@dataclass
class Parsed:
    """What could be read from an output; `problems` says what could not and why."""

    answer: str | None = None
    bbox: Box | None = None
    reasoning: str = ""
    problems: list[str] = field(default_factory=list)


def parse_box(value: object) -> Box | None:
    """Four numbers from a list or a `[x1, y1, x2, y2]` string, else None."""
    if isinstance(value, (list, tuple)) and len(value) == 4:
        try:
            x1, y1, x2, y2 = (float(v) for v in value)
        except (TypeError, ValueError, OverflowError):
            return None
        return (x1, y1, x2, y2)
    if isinstance(value, str):
        found = _BOX.search(value)
        if found:
            x1, y1, x2, y2 = (float(g) for g in found.groups())
            return (x1, y1, x2, y2)
    return None


def _from_json(text: str) -> Parsed | None:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + _OBJECT.findall(text)
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except (ValueError, RecursionError):  # bad JSON, over-long ints, deep nesting
            continue
        if not isinstance(data, dict) or "answer" not in data:
            continue
        parsed = Parsed(reasoning=str(data.get("reasoning", "")))
        parsed.answer = None if data["answer"] is None else str(data["answer"]).strip()
        raw = data.get("bbox", data.get("box"))
        parsed.bbox = parse_box(raw)
        if parsed.bbox is None:
            parsed.problems.append(f"unparsable bbox {raw!r}")
        return parsed
    return None


def parse_output(text: str) -> Parsed:
    """Read answer, box and reasoning from a model output (see module docstring)."""
    from_json = _from_json(text)
    if from_json is not None:
        return from_json
    parsed = Parsed()
    answers = _ANSWER.findall(text)
    sentence = _SENTENCE.search(text)
    if answers:
        parsed.answer = answers[-1].strip().strip("\"'`").strip()
    elif sentence:
        parsed.answer = sentence.group(1).strip("\"'`")
        parsed.problems.append("no ANSWER: line; answer taken from 'the answer is ...'")
    else:
        parsed.problems.append("no ANSWER: line or JSON object with 'answer'")
    boxes = _BBOX_LINE.findall(text)
    if boxes:
        parsed.bbox = parse_box(boxes[-1])
        if parsed.bbox is None:
            parsed.problems.append(f"unparsable BBOX {boxes[-1][:60]!r}")
    else:
        parsed.problems.append("no BBOX: line")
    reasoning = _REASONING.search(text)
    parsed.reasoning = reasoning.group(1).strip() if reasoning else ""
    return parsed
