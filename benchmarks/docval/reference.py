"""Scripted policies for `docket/docval_grounding` (see `agents/scripted/README.md`).

* `docval_oracle`: looks the question up in the DocVAL data file (by the `Document <id>.` line
  and the question text) and answers with the gold answer and box; `shift` moves the box right
  by that many pixels (a known IoU), `format=json` answers as a JSON object, `box=tokens`
  answers with the union of the prompt's OCR tokens that lie mostly inside the gold box (the
  best box a reader of `layout_text` tokens can give).
* `docval_label_right`: a non-oracle baseline for `mode=layout_text`: finds the OCR token that
  best matches the question's words and answers with the nearest token to its right (or below).
"""

from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy
from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.core.jsonl import JsonlLineError, parse_lines
from docket.methods.distill.boxes import iou

_DOC = re.compile(r"^Document (\S+)\.", re.MULTILINE)
_QUESTION = re.compile(r"^Question: (.*)$", re.MULTILINE)
_REGION = re.compile(r'^(?:Region|Word|Token) #(\d+): \[([\d., -]+)\] -> "(.*)"$', re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = {
    "what",
    "is",
    "the",
    "of",
    "a",
    "an",
    "for",
    "on",
    "was",
    "who",
    "which",
    "how",
    "to",
    "in",
    "when",
    "by",
    "this",
    "that",
    "were",
    "does",
    "did",
    "many",
    "much",
    "value",
    "name",
    "number",
    "date",
    "amount",
}


@lru_cache(maxsize=4)
def _segments(path: str) -> dict[str, list[list[Any]]]:
    """Each document's segments `[id, x1, y1, x2, y2, text]`, by document id."""
    return {doc["doc_id"]: doc["segments"] for doc in load_documents(Path(path))}


@lru_cache(maxsize=4)
def _gold(path: str) -> dict[tuple[str, str], tuple[str, list[float]]]:
    opener = gzip.open if path.endswith(".gz") else open
    table: dict[tuple[str, str], tuple[str, list[float]]] = {}

    def bad(number: int, ex: Exception) -> ValueError:
        cause = ex.cause if isinstance(ex, JsonlLineError) else ex
        return ValueError(f"{path}:{number}: not a DocVAL document row ({cause})")

    with opener(path, "rt", encoding="utf-8") as handle:
        for number, doc in parse_lines(handle, bad):
            try:
                for q in doc["questions"]:
                    table[(doc["doc_id"], q["question"])] = (q["answers"][0], q["bbox"])
            except (KeyError, IndexError, TypeError) as ex:
                raise bad(number, ex) from None
    return table


def _reply(answer: str, box: list[float] | None, form: str) -> PolicyReply:
    coords = None if box is None else [round(v) for v in box]
    if form == "json":
        return PolicyReply(text=json.dumps({"answer": answer, "bbox": coords}))
    return PolicyReply(text=f"ANSWER: {answer}\nBBOX: {coords if coords else 'none'}")


def _regions(text: str) -> list[tuple[int, list[float], str]]:
    return [
        (int(m.group(1)), [float(v) for v in m.group(2).split(",")], m.group(3))
        for m in _REGION.finditer(text)
    ]


def _token_union(box: list[float], text: str) -> list[float] | None:
    """Union of the prompt's tokens with at least half their area inside `box`."""

    def inside(token: list[float]) -> bool:
        w = max(0.0, min(box[2], token[2]) - max(box[0], token[0]))
        h = max(0.0, min(box[3], token[3]) - max(box[1], token[1]))
        area = (token[2] - token[0]) * (token[3] - token[1])
        return area > 0 and w * h >= 0.5 * area

    picked = [t[1] for t in _regions(text) if inside(t[1])]
    if not picked:
        return None
    return [min(b[0] for b in picked), min(b[1] for b in picked)] + [
        max(b[2] for b in picked),
        max(b[3] for b in picked),
    ]


@policy("docval_oracle", args={"data": str, "format": str, "shift": int, "box": str})
def docval_oracle(state: PolicyInput) -> PolicyReply:
    """Answers with the gold answer and box from the data file (box shifted right by `shift`,
    or rebuilt from the prompt's OCR tokens with `box=tokens`)."""
    text = state.last_user_text
    doc, question = _DOC.search(text), _QUESTION.search(text)
    form = str(state.args.get("format", "lines"))
    if form not in ("lines", "json"):
        raise ValueError(f"policy=docval_oracle: -M format={form!r}; accepted: lines, json")
    source = str(state.args.get("box", "gold"))
    if source not in ("gold", "tokens"):
        raise ValueError(f"policy=docval_oracle: -M box={source!r}; accepted: gold, tokens")
    if not doc or not question:
        return _reply("unknown", None, form)
    gold = _gold(str(state.args.get("data") or SHIPPED)).get((doc.group(1), question.group(1)))
    if gold is None:
        return _reply("unknown", None, form)
    answer, box = gold
    if source == "tokens":
        return _reply(answer, _token_union(box, text), form)
    shift = int(state.args.get("shift", 0))
    return _reply(answer, [box[0] + shift, box[1], box[2] + shift, box[3]], form)


@policy("docval_teacher", args={"data": str, "shift": int})
def docval_teacher(state: PolicyInput) -> PolicyReply:
    """A 7-step DocVAL teacher trace with the gold answer and box (box shifted by `shift`) whose
    every step cites a text or box printed on the page (`grounded_steps`)."""
    text = state.last_user_text
    doc, question = _DOC.search(text), _QUESTION.search(text)
    gold = None
    if doc and question:
        gold = _gold(str(state.args.get("data") or SHIPPED)).get((doc.group(1), question.group(1)))
    if gold is None:
        return PolicyReply(
            text="REASONING: I cannot find the document.\nANSWER: unknown\nBBOX: none"
        )
    answer, box = gold
    shift = int(state.args.get("shift", 0))
    coords = [round(box[0]) + shift, round(box[1]), round(box[2]) + shift, round(box[3])]
    pages = _segments(str(state.args.get("data") or SHIPPED))
    segments = pages.get(doc.group(1) if doc else "", [])
    steps = grounded_steps(question.group(1) if question else "", answer, box, coords, segments)
    return PolicyReply(
        text="REASONING: " + "\n".join(steps) + f"\nANSWER: {answer}\nBBOX: {coords}"
    )


def grounded_steps(
    question: str, answer: str, box: list[float], coords: list[int], segments: list[list[Any]]
) -> list[str]:
    """Seven reasoning steps that each cite the page: its first segment, the segment nearest
    the answer (its label, usually), the answer's text and its box `coords`."""

    def centre(s: list[Any]) -> tuple[float, float]:
        return ((s[1] + s[3]) / 2, (s[2] + s[4]) / 2)

    def at(s: list[Any]) -> str:
        return f'"{s[5]}" at {[round(v) for v in s[1:5]]}'

    own = [s for s in segments if iou(s[1:5], box) > 0]
    others = [s for s in segments if s not in own]
    if not own or not others:
        return [f'Step 1: The answer "{answer}" is printed at {coords}.']
    cx, cy = centre(own[0])
    label = min(others, key=lambda s: abs(centre(s)[0] - cx) + 3 * abs(centre(s)[1] - cy))
    return [
        f"Step 1: The page opens with {at(segments[0])}.",
        f'Step 2: The question asks: {question} The nearest printed text is "{label[5]}".',
        f"Step 3: Locate the field: {at(label)}.",
        f'Step 4: The value next to it reads "{own[0][5]}".',
        f'Step 5: Extract the answer value "{answer}".',
        f'Step 6: Spatial check: "{answer}" lies at {coords}, beside "{label[5]}".',
        f"Step 7: The bounding box coordinates are {coords}.",
    ]


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


@policy("docval_label_right")
def docval_label_right(state: PolicyInput) -> PolicyReply:
    """Layout heuristic: the token right of (else below) the best label match for the question."""
    text = state.last_user_text
    question = _QUESTION.search(text)
    regions = _regions(text)
    if not question or not regions:
        return _reply("unknown", None, "lines")
    wanted = _tokens(question.group(1))
    label = max(regions, key=lambda r: (len(wanted & _tokens(r[2])), -r[0]))
    _, lbox, _ = label
    mid = (lbox[1] + lbox[3]) / 2

    def right_gap(r: tuple[int, list[float], str]) -> float:
        same_line = r[1][1] <= mid <= r[1][3]
        return r[1][0] - lbox[2] if same_line and r[1][0] >= lbox[2] - 2 else float("inf")

    def below_gap(r: tuple[int, list[float], str]) -> float:
        return r[1][1] - lbox[3] if r[1][1] >= lbox[3] - 2 and r is not label else float("inf")

    others = [r for r in regions if r is not label]
    if not others:
        return _reply(label[2], label[1], "lines")
    best = min(others, key=right_gap)
    if right_gap(best) == float("inf"):
        best = min(others, key=below_gap)
    return _reply(best[2], best[1], "lines")
