"""The grounding check of `docval_teacher`: every reasoning step cites what the page holds.

VAL's own reasoning score (`methods/distill/validator.py`) looks for keywords and for a box
near the predicted one, so one fixed chain of thought ("Step 1: locate the region ... Step 4:
the bounding box ...") passes it on every page. `docval_teacher` adds this check before a trace
is accepted:

* the reasoning has at least `MIN_STEPS` steps (`Step N:` markers, else sentences);
* every step cites something the document holds: a quoted text (`"..."`) that is printed on the
  page (a segment's text, or whole words of one, at least 3 characters), or a box `[x1, y1, x2, y2]`
  that covers a printed segment (IoU >= `BOX_MIN_IOU` with a segment, or with the union of the
  segments it overlaps, for answers printed over several segments);
* the steps together cite at least `MIN_DISTINCT` different segments (the answer's and another,
  e.g. its label), quote the predicted answer and give the predicted box.

A fixed text cites nothing a given page holds; citing one page's values is reading that page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from docket.methods.distill.boxes import iou
from docket.methods.distill.output_format import Parsed

MIN_STEPS = 3
MIN_DISTINCT = 2
BOX_MIN_IOU = 0.5
MIN_QUOTE = 3
ANSWER_BOX_TOLERANCE_PX = 20
_STEP = re.compile(r"\bstep\s*\d+\s*[:.)]", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_QUOTE = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
_NUM = r"-?\d+(?:\.\d+)?"
_BOX = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*[\])]")

Segment = Sequence[Any]  # [id, x1, y1, x2, y2, text]


def steps_of(reasoning: str) -> list[str]:
    """The reasoning's steps: the text after each `Step N:` marker, else its sentences."""
    marks = list(_STEP.finditer(reasoning))
    if marks:
        ends = [m.start() for m in marks[1:]] + [len(reasoning)]
        return [reasoning[m.end() : end].strip() for m, end in zip(marks, ends, strict=True)]
    return [s.strip() for s in _SENTENCE.split(reasoning) if s.strip()]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _holds(text: str, quote: str) -> bool:
    """`quote` is `text`, or whole words of it (3+ characters): "Total" in "Total due", not
    "ate" in "Date"."""
    if quote == text:
        return True
    return (
        len(quote) >= MIN_QUOTE and re.search(rf"(?<!\w){re.escape(quote)}(?!\w)", text) is not None
    )


def _quoted(step: str, segments: Sequence[Segment]) -> set[int]:
    """Ids of the segments whose text a quote in `step` is, or is whole words of."""
    cited: set[int] = set()
    for match in _QUOTE.finditer(step):
        quote = _norm(match.group(1) or match.group(2) or "")
        cited |= {int(s[0]) for s in segments if quote and _holds(_norm(str(s[5])), quote)}
    return cited


def _boxed(step: str, segments: Sequence[Segment]) -> set[int]:
    """Ids of the segments a box in `step` covers (alone, or as the union it spans)."""
    cited: set[int] = set()
    for match in _BOX.finditer(step):
        box = tuple(float(v) for v in match.groups())
        touched = [s for s in segments if iou(box, s[1:5]) > 0]
        if not touched:
            continue
        union = (
            min(float(s[1]) for s in touched),
            min(float(s[2]) for s in touched),
            max(float(s[3]) for s in touched),
            max(float(s[4]) for s in touched),
        )
        if iou(box, union) >= BOX_MIN_IOU:
            cited |= {int(s[0]) for s in touched}
        else:
            cited |= {int(s[0]) for s in touched if iou(box, s[1:5]) >= BOX_MIN_IOU}
    return cited


def _gives_box(reasoning: str, box: Sequence[float]) -> bool:
    return any(
        all(
            abs(float(v) - float(b)) <= ANSWER_BOX_TOLERANCE_PX
            for v, b in zip(m.groups(), box, strict=True)
        )
        for m in _BOX.finditer(reasoning)
    )


def grounding_problems(
    reasoning: str, answer: str | None, box: Sequence[float] | None, segments: Sequence[Segment]
) -> list[str]:
    """Why a trace's reasoning is not grounded in its page ([] when it is).

    Args:
        reasoning: The trace's chain of thought.
        answer: The trace's answer.
        box: The trace's box (pixels).
        segments: The page's segments `[id, x1, y1, x2, y2, text]`.

    Returns:
        One line per problem (see the module docstring).
    """
    steps = steps_of(reasoning)
    if len(steps) < MIN_STEPS:
        return [f"reasoning has {len(steps)} steps; at least {MIN_STEPS} are needed"]
    problems: list[str] = []
    cited: set[int] = set()
    for number, step in enumerate(steps, 1):
        found = _quoted(step, segments) | _boxed(step, segments)
        if not found:
            problems.append(f"step {number} cites no text or box printed on the page")
        cited |= found
    if len(cited) < MIN_DISTINCT:
        problems.append(f"the steps cite {len(cited)} printed segments; at least {MIN_DISTINCT}")
    quotes = {_norm(m.group(1) or m.group(2) or "") for m in _QUOTE.finditer(reasoning)}
    if not answer or _norm(answer) not in quotes:
        problems.append("the reasoning does not quote the answer")
    if box is None or not _gives_box(reasoning, box):
        problems.append("the reasoning does not give the answer's box")
    return problems


def check_trace(parsed: Parsed, metadata: dict[str, Any]) -> list[str]:
    """`grounding_problems` for a parsed teacher trace and its sample metadata (`segments`).

    Args:
        parsed: The parsed trace.
        metadata: The sample's metadata.

    Returns:
        The problems ([] when grounded).
    """
    return grounding_problems(
        parsed.reasoning, parsed.answer, parsed.bbox, metadata.get("segments", [])
    )
