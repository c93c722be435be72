"""Reading a chat model's final answer out of a free-form reply, with the reason when none is.

A chat model states a number in a few ordinary ways: `\\boxed{781}`, a final `ANSWER: 781`
(or `Answer: 781`, `The answer is 781`), an equation `779 + 2 = 781`, or a sentence whose last
number is the result. `extract_number` reads them in that order of strength (the strongest form
present wins; within a form the last occurrence, so a worked chain's final line counts) and
refuses the ordinary wrong ones:

- a reply with no number, or one that only repeats the problem's numbers (`779 + 2`): no answer;
- a reply whose answer is a list of several different numbers (`780, 781 or 782`,
  `ANSWER: 780 781`): no answer, so listing every candidate never wins.

`extract_text` does the same for short text answers (a marker line, a `\\boxed{}` value, else
the whole first line as a bare answer). Both return an `Extraction` that says which form was
read, or why nothing was, for the score's metadata (`parse_metadata`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, metric

#: A number as a model writes it: optional sign, digits, optional decimals (`-3`, `2.5`).
#: Digits glued to letters (`x2`, `3rd`) are not numbers; `340-5` is 340 and 5. Thousands
#: commas are not read (`780,781` is a list of two numbers, not one).
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_MARKER = re.compile(
    r"(?:^|[\s*#>(\[])(?:final\s+answer|answer)\s*[*`]*\s*(?:is\b|:|=)\s*[*`]*:?[*`]*(.*)",
    re.IGNORECASE,
)
_EQUALS = re.compile(r"=\s*[*`]*(.*)")
#: Numbers joined only by separators: a list of candidates, not one answer.
_LIST_JOIN = re.compile(r"^\s*(?:,|;|/|\||\bor\b|\band\b|\s)\s*$", re.IGNORECASE)
#: Longest reply line read as a bare text answer.
BARE_LIMIT = 80


@dataclass(frozen=True)
class Extraction:
    """What was read from a reply.

    Attributes:
        value: The answer as text , None when none parsed.
        form: How it was stated: boxed, answer, equals, last_number, bare, or '' when unparsed.
        reason: Why nothing was read ('' when `value` is set).
    """

    value: str | None
    form: str = ""
    reason: str = ""

    @property
    def parsed(self) -> bool:
        """Whether an answer was read."""
        return self.value is not None


def _numbers(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in NUMBER.finditer(text)]


def _canonical(number: str) -> str:
    """`781`, `781.0` and `0781` agree; other decimals stay as written."""
    try:
        value = float(number)
    except ValueError:
        return number
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return number


def _listed(text: str, numbers: list[tuple[str, int, int]], index: int) -> list[str]:
    """The distinct numbers of the separator-joined run that `numbers[index]` belongs to."""
    start = end = index
    while start > 0 and _LIST_JOIN.match(text[numbers[start - 1][2] : numbers[start][1]]):
        start -= 1
    while end + 1 < len(numbers) and _LIST_JOIN.match(text[numbers[end][2] : numbers[end + 1][1]]):
        end += 1
    return sorted({_canonical(n[0]) for n in numbers[start : end + 1]})


def _first_number(segment: str, form: str) -> Extraction | None:
    """The first number of the text after a marker, up to the line's end (None when there is
    none); a worked equation there (`779 + 2 = 781`) gives the value after its last `=`."""
    segment = segment.split("\n", 1)[0].rsplit("=", 1)[-1]
    numbers = _numbers(segment)
    if not numbers:
        return None
    candidates = _listed(segment, numbers, 0)
    if len(candidates) > 1:
        return Extraction(None, reason=f"lists several answers ({', '.join(candidates)})")
    return Extraction(_canonical(numbers[0][0]), form)


def _last_marked(pattern: re.Pattern[str], text: str, form: str) -> Extraction | None:
    for match in reversed(list(pattern.finditer(text))):
        found = _first_number(match.group(1), form)
        if found is not None:
            return found
    return None


def extract_number(reply: str, echoed: Iterable[str | int] = ()) -> Extraction:
    """The number a reply gives as its answer.

    Args:
        reply: The model's completion.
        echoed: The problem's own numbers (operands): a reply that only repeats them gives no
            answer, and the last-number reading skips them.

    Returns:
        The extraction: the value and its form, or the reason nothing was read.
    """
    text = reply.strip()
    if not text:
        return Extraction(None, reason="empty reply")
    boxed = [b for b in _BOXED.findall(text) if _numbers(b)]
    if boxed:
        return _first_number(boxed[-1], "boxed") or Extraction(None, reason="unreachable")
    for pattern, form in ((_MARKER, "answer"), (_EQUALS, "equals")):
        found = _last_marked(pattern, text, form)
        if found is not None:
            return found
    numbers = _numbers(text)
    if not numbers:
        return Extraction(None, reason="no number in the reply")
    own = {_canonical(str(n)) for n in echoed}
    fresh = [i for i, n in enumerate(numbers) if _canonical(n[0]) not in own]
    if not fresh:
        if len(numbers) > 1:
            return Extraction(None, reason="only repeats the problem's numbers")
        fresh = [0]
    last = fresh[-1]
    candidates = [c for c in _listed(text, numbers, last) if c not in own] or [
        _canonical(numbers[last][0])
    ]
    if len(candidates) > 1:
        return Extraction(None, reason=f"lists several answers ({', '.join(candidates)})")
    return Extraction(_canonical(numbers[last][0]), "last_number")


def same_number(extraction: Extraction, target: str | int) -> bool:
    """Whether an extracted number equals `target` (False when nothing was read)."""
    return extraction.value is not None and extraction.value == _canonical(str(target).strip())


_TEXT_MARKER = re.compile(
    r"(?:^|\n)[\s*#>-]*(?:final\s+answer|answer)\s*[*`]*\s*(?::|is)\s*[*`]*\s*([^\n]*)",
    re.IGNORECASE,
)
_LEAD_IN = re.compile(r"^(?:the\s+)?(?:final\s+)?answer\s+is\s*:?\s*", re.IGNORECASE)


def _clean(value: str) -> str:
    return value.strip().strip("*`\"' ").rstrip(".!").strip()


def extract_text(reply: str) -> Extraction:
    """A short text answer: `\\boxed{x}`, the last `ANSWER: x` line, else a bare first line.

    Args:
        reply: The model's completion.

    Returns:
        The extraction: form boxed, answer or bare; unparsed for an empty reply or a bare
        first line longer than `BARE_LIMIT` characters (a paragraph is not an answer).
    """
    text = reply.strip()
    if not text:
        return Extraction(None, reason="empty reply")
    boxed = [_clean(b) for b in _BOXED.findall(text) if _clean(b)]
    if boxed:
        return Extraction(boxed[-1], "boxed")
    marked = [_clean(m) for m in _TEXT_MARKER.findall(text) if _clean(m)]
    if marked:
        return Extraction(marked[-1], "answer")
    line = _clean(_LEAD_IN.sub("", next(r for r in text.splitlines() if r.strip())))
    if not line:
        return Extraction(None, reason="no answer on the first line")
    if len(line) > BARE_LIMIT:
        return Extraction(None, reason=f"no ANSWER: line and the first line is {len(line)} chars")
    return Extraction(line, "bare")


def parse_metadata(extraction: Extraction) -> dict[str, Any]:
    """The score metadata of an extraction: `parsed`, and `form` or `reason`.

    Args:
        extraction: What was read.

    Returns:
        `{"parsed": True, "form": ...}` or `{"parsed": False, "reason": ...}`.
    """
    if extraction.parsed:
        return {"parsed": True, "form": extraction.form}
    return {"parsed": False, "reason": extraction.reason}


@metric
def unparsed() -> Metric:
    """The share of samples whose score metadata says `parsed: false` (a reply with no
    readable answer, scored wrong): read beside accuracy, it tells "could not parse" from "wrong".

    Returns:
        A metric over the samples' score metadata (a sample without `parsed` counts as parsed).
    """

    def compute(scores: list[SampleScore]) -> float:
        if not scores:
            return math.nan
        missing = [(s.score.metadata or {}).get("parsed") is False for s in scores]
        return sum(missing) / len(missing)

    return compute
