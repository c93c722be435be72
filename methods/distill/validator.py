"""The DocVAL rule-based validator (VAL), as the official code defines it.

Q = 0.4 * Q_ans + 0.4 * Q_bbox + 0.2 * Q_reason, with
  Q_ans    = 0.7 * NLS(pred, gt) + 0.3 * [pred is a substring of some region's OCR text]
  Q_bbox   = 0.8 * IoU(pred, gt) + 0.2 * [pred and gt match the same OCR region]
  Q_reason = (S_struct + S_coord + S_spatial) / 3
Filter mode accepts a trace iff Q >= 0.85; verifier mode adds typed errors with severities,
priority-ordered fixes with pixel-level corrections, and a corrected output. All boxes are in
pixels of the page image.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from docket.methods.distill.boxes import BoxLike, iou, nls

Q_MIN = 0.85
REGION_MIN_IOU = 0.1
ANSWER_MESSAGE_BELOW = 0.9
BBOX_ERROR_BELOW = 0.75
NEARLY_CORRECT_IOU = 0.9
DELTA_PX = 5
COORD_TOLERANCE_PX = 20
TOP_BOTTOM_SPLIT_PX = 300
KEYWORD_GROUPS: tuple[tuple[str, ...], ...] = (
    ("region", "area", "section", "text"),
    ("locate", "position", "spatial", "where"),
    ("answer", "extract", "found", "value"),
    ("bbox", "bounding", "coordinates", "box"),
)
SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}
_NUM = r"-?\d+(?:\.\d+)?"
_TUPLE = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*[\])]")


@dataclass(frozen=True)
class Region:
    """An OCR region: id, pixel box and text."""

    id: int
    box: tuple[float, float, float, float]
    text: str


@dataclass(frozen=True)
class ValError:
    """One verifier finding."""

    kind: str  # answer | bbox | semantic | reasoning
    severity: str  # critical | high | medium | low
    message: str
    delta: tuple[float, float, float, float] | None = None


@dataclass
class Validation:
    """The validator's scores, decision and (verifier mode) feedback."""

    q: float
    q_ans: float
    q_bbox: float
    q_reason: float
    iou: float
    pred_region: Region | None
    gt_region: Region | None
    accepted: bool
    errors: list[ValError] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    corrected: dict[str, Any] = field(default_factory=dict)

    @property
    def decision(self) -> str:
        """ACCEPT/REJECT in filter mode (VALID/INVALID in verifier mode mean the same)."""
        return "ACCEPT" if self.accepted else "REJECT"


def match_region(box: BoxLike | None, regions: list[Region]) -> Region | None:
    """The region with the highest IoU with `box`, kept only if that IoU > 0.1."""
    if box is None or not regions:
        return None
    best = max(regions, key=lambda r: iou(box, r.box))
    return best if iou(box, best.box) > REGION_MIN_IOU else None


def answer_quality(pred: str, gt: str, regions: list[Region]) -> float:
    """Q_ans = 0.7 * NLS (no threshold) + 0.3 * [pred occurs in some region's text]."""
    needle = pred.strip().lower()
    grounded = bool(needle) and any(needle in r.text.lower() for r in regions)
    return 0.7 * nls(pred, gt) + 0.3 * float(grounded)


def bbox_correction(pred: BoxLike, gt: BoxLike) -> tuple[tuple[float, float, float, float], str]:
    """Pixel deltas (gt - pred) and the corrective instruction DocVAL gives for them."""
    delta = (gt[0] - pred[0], gt[1] - pred[1], gt[2] - pred[2], gt[3] - pred[3])
    if iou(pred, gt) > NEARLY_CORRECT_IOU:
        return delta, "box nearly correct"
    dx1, dy1, dx2, dy2 = delta
    steps: list[str] = []
    if abs(dx1) > DELTA_PX:
        steps.append(f"move {'RIGHT' if dx1 > 0 else 'LEFT'} by {abs(dx1):.0f}px")
    if abs(dy1) > DELTA_PX:
        steps.append(f"move {'DOWN' if dy1 > 0 else 'UP'} by {abs(dy1):.0f}px")
    if abs(dx2 - dx1) > DELTA_PX:
        steps.append(f"{'EXPAND' if dx2 - dx1 > 0 else 'SHRINK'} width by {abs(dx2 - dx1):.0f}px")
    if abs(dy2 - dy1) > DELTA_PX:
        steps.append(f"{'EXPAND' if dy2 - dy1 > 0 else 'SHRINK'} height by {abs(dy2 - dy1):.0f}px")
    return delta, "; ".join(steps) or "box within 5px on every side"


def reasoning_scores(reasoning: str, pred: BoxLike | None) -> tuple[float, float, float]:
    """(S_struct, S_coord, S_spatial) of a chain of thought; (0, 0, 0) when there is none.

    The official code gives an empty reasoning S_coord = S_spatial = 1 (nothing cited, nothing
    contradicted), a floor of Q = 0.133 for an empty or refusing output; here a missing chain
    of thought verifies nothing and scores 0.
    """
    if not reasoning.strip():
        return 0.0, 0.0, 0.0
    text = reasoning.lower()
    s_struct = sum(any(k in text for k in group) for group in KEYWORD_GROUPS) / len(KEYWORD_GROUPS)
    tuples = [tuple(float(v) for v in m.groups()) for m in _TUPLE.finditer(reasoning)]
    if not tuples:
        s_coord = 1.0
    elif pred is not None and any(
        all(abs(t[i] - pred[i]) <= COORD_TOLERANCE_PX for i in range(4)) for t in tuples
    ):
        s_coord = 1.0
    else:
        s_coord = 0.5
    contradictions = 0
    if pred is not None:
        contradictions += "top" in text and pred[1] > TOP_BOTTOM_SPLIT_PX
        contradictions += "bottom" in text and pred[1] < TOP_BOTTOM_SPLIT_PX
    return s_struct, s_coord, max(0.0, 1.0 - 0.3 * contradictions)


def _reasoning_errors(reasoning: str, s_coord: float, s_spatial: float) -> list[ValError]:
    """Low-severity findings about the chain of thought."""
    if not reasoning.strip():
        return [ValError("reasoning", "low", "no reasoning given")]
    errors: list[ValError] = []
    missing = [g[0] for g in KEYWORD_GROUPS if not any(k in reasoning.lower() for k in g)]
    if missing:
        errors.append(
            ValError("reasoning", "low", f"reasoning lacks steps about: {', '.join(missing)}")
        )
    if s_coord < 1.0:
        errors.append(
            ValError("reasoning", "low", "coordinates in the reasoning disagree with the box")
        )
    if s_spatial < 1.0:
        errors.append(
            ValError("reasoning", "low", "top/bottom wording contradicts the box position")
        )
    return errors


def suggested_cot(question: str, gt_answer: str, gt_box: BoxLike, region: Region | None) -> str:
    """The 4-step corrective chain of thought that names the ground-truth region."""
    where = f'Region #{region.id} "{region.text}"' if region else "the answer's text region"
    box = [round(v) for v in gt_box]
    return (
        f"Step 1: The question asks: {question}\n"
        f"Step 2: Locate the relevant text: {where}.\n"
        f'Step 3: Extract the answer value from that region: "{gt_answer}".\n'
        f"Step 4: The bounding box coordinates of the answer are {box}."
    )


def validate(
    pred_answer: str | None,
    pred_box: BoxLike | None,
    reasoning: str,
    gt_answer: str,
    gt_box: BoxLike,
    regions: list[Region],
    question: str = "",
) -> Validation:
    """Run all four modules; return scores, the filter decision and verifier feedback."""
    answer = pred_answer or ""
    pred_region, gt_region = match_region(pred_box, regions), match_region(gt_box, regions)
    same_region = (
        pred_region is not None and gt_region is not None and pred_region.id == gt_region.id
    )
    q_ans = answer_quality(answer, gt_answer, regions)
    overlap = iou(pred_box, gt_box) if pred_box is not None else 0.0
    q_bbox = 0.8 * overlap + 0.2 * float(same_region)
    s_struct, s_coord, s_spatial = reasoning_scores(reasoning, pred_box)
    q_reason = (s_struct + s_coord + s_spatial) / 3
    q = 0.4 * q_ans + 0.4 * q_bbox + 0.2 * q_reason
    errors: list[ValError] = []
    if pred_region is not None and gt_region is not None and not same_region:
        errors.append(
            ValError(
                "semantic",
                "critical",
                f'wrong region: predicted Region #{pred_region.id} "{pred_region.text}" but the '
                f'answer is in Region #{gt_region.id} "{gt_region.text}"',
            )
        )
    if q_ans < ANSWER_MESSAGE_BELOW:
        errors.append(
            ValError(
                "answer",
                "high" if q_ans < 0.5 else "medium",
                f'answer "{answer}" should be "{gt_answer}" (Q_ans {q_ans:.2f})',
            )
        )
    if overlap < BBOX_ERROR_BELOW:
        if pred_box is None:
            errors.append(
                ValError("bbox", "high", f"no box given; use {[round(v) for v in gt_box]}")
            )
        else:
            delta, text = bbox_correction(pred_box, gt_box)
            errors.append(
                ValError(
                    "bbox",
                    "high" if overlap < 0.5 else "medium",
                    f"IoU {overlap:.2f}: {text}",
                    delta,
                )
            )
    errors += _reasoning_errors(reasoning, s_coord, s_spatial)
    errors.sort(key=lambda e: SEVERITY_ORDER[e.severity])
    return Validation(
        q=q,
        q_ans=q_ans,
        q_bbox=q_bbox,
        q_reason=q_reason,
        iou=overlap,
        pred_region=pred_region,
        gt_region=gt_region,
        accepted=q >= Q_MIN,
        errors=errors,
        fixes=[f"[{e.severity}] {e.message}" for e in errors],
        corrected={
            "answer": gt_answer,
            "bbox": [round(v) for v in gt_box],
            "reasoning": suggested_cot(question, gt_answer, gt_box, gt_region),
        },
    )


def feedback_text(result: Validation) -> str:
    """Verifier feedback as the student sees it in stage-2 correction examples."""
    status = "VALID" if result.accepted else "INVALID"
    lines = [f"VERIFIER: {status} (Q={result.q:.2f})", *result.fixes]
    return "\n".join(lines)
