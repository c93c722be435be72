"""DocVAL grounding metrics: ANLS (tau = 0.5), IoU, mAP@IoU[.50:.05:.95] as DLaVA defines it.

ANLS boundary (the paper's rule): a prediction at normalised Levenshtein distance NL scores
1 - NL when NL < 0.5 and 0 otherwise, so NL = 0.5 exactly scores 0 (not 0.5).

mAP (DLaVA, one box per question, no confidence ranking): for each threshold t,
precision_t = #(IoU >= t) / #questions; mAP = mean over the 10 thresholds. Per sample we store
`map` = the fraction of thresholds the box clears, whose mean over questions equals that mAP.
IoU is invariant to DLaVA's normalisation by page width and height, so pixels are used directly.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, grouped, mean, scorer, stderr
from inspect_ai.solver import TaskState

from docket.benchmarks.docval.parse import apply_box_rule, parse_output
from docket.methods.distill.boxes import BoxLike, iou

TAU = 0.5
THRESHOLDS = tuple(round(0.50 + 0.05 * i, 2) for i in range(10))
KEYS = (
    "anls",
    "iou",
    "map",
    "hit50",
    "joint",
    "answer_right_box_wrong",
    "unparsed",
    "box_clipped",
    "box_rejected",
)


def _normalise(text: str) -> str:
    return " ".join(text.strip().lower().split())


def anls(prediction: str | None, answers: list[str], tau: float = TAU) -> float:
    """Max over `answers` of 1 - NL if NL < tau else 0 (DocVQA's ANLS for one question)."""
    import Levenshtein

    if prediction is None:
        return 0.0
    pred = _normalise(prediction)
    best = 0.0
    for answer in answers:
        truth = _normalise(answer)
        longest = max(len(pred), len(truth))
        distance = Levenshtein.distance(pred, truth) / longest if longest else 0.0
        best = max(best, 1.0 - distance if distance < tau else 0.0)
    return best


def map_fraction(overlap: float) -> float:
    """Fraction of the thresholds 0.50, 0.55, ..., 0.95 that `overlap` reaches."""
    return sum(overlap >= t for t in THRESHOLDS) / len(THRESHOLDS)


def mean_average_precision(ious: list[float]) -> float:
    """DLaVA mAP over questions: mean over thresholds of the fraction of IoUs >= threshold."""
    if not ious:
        raise ValueError("mAP of no questions")
    return sum(sum(v >= t for v in ious) / len(ious) for t in THRESHOLDS) / len(THRESHOLDS)


def grade(
    output: str, answers: list[str], gt_box: BoxLike | None, width: float, height: float
) -> tuple[dict[str, float], str, dict[str, Any]]:
    """Score one output; return (value dict, explanation, parsed fields)."""
    parsed = parse_output(output)
    problems = list(parsed.problems)
    box, rule = (None, "")
    if parsed.bbox is not None:
        box, rule = apply_box_rule(parsed.bbox, width, height)
        if rule:
            problems.append(f"box {list(parsed.bbox)} {rule}")
    answer_score = anls(parsed.answer, answers)
    value: dict[str, float] = {
        "anls": answer_score,
        "unparsed": float(parsed.answer is None or parsed.bbox is None),
        "box_clipped": float(rule == "clipped"),
        "box_rejected": float(rule.startswith("rejected")),
    }
    if gt_box is None:
        for key in ("iou", "map", "hit50", "joint", "answer_right_box_wrong"):
            value[key] = math.nan
        problems.append("no ground-truth box: box metrics skipped")
        overlap = math.nan
    else:
        overlap = iou(box, gt_box) if box is not None else 0.0
        value |= {
            "iou": overlap,
            "map": map_fraction(overlap),
            "hit50": float(overlap >= 0.5),
            "joint": float(answer_score >= TAU and overlap >= 0.5),
            "answer_right_box_wrong": float(answer_score >= TAU and overlap < 0.5),
        }
    explanation = (
        f"answer {parsed.answer!r} vs {answers} -> ANLS {answer_score:.3f}; "
        f"box {list(box) if box else None} vs {list(gt_box) if gt_box else None} -> "
        f"IoU {overlap:.3f}" + (f"; problems: {'; '.join(problems)}" if problems else "")
    )
    fields = {
        "answer": parsed.answer,
        "bbox": list(box) if box else None,
        "reasoning": parsed.reasoning,
    }
    return value, explanation, fields


def _metrics() -> dict[str, list[Any]]:
    """Mean, stderr clustered by document (questions share a page), mean per document type."""
    return {
        key: [mean(), stderr(cluster="doc_id"), grouped(mean(), "doc_type", all=False)]
        for key in KEYS
    }


@scorer(metrics=_metrics())
def docval_grounding_scorer() -> Scorer:
    """ANLS, IoU, mAP@[.5:.95], hit@0.5, joint and answer-right-box-wrong, grouped by doc type.

    Unparsable answers or boxes score 0 with the reason in the explanation (`unparsed` = 1);
    boxes are clipped or rejected per `parse.apply_box_rule` (`box_clipped`, `box_rejected`).

    Returns:
        A scorer with one value per measure.
    """

    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata
        gt_box = meta.get("bbox")
        value, explanation, fields = grade(
            state.output.completion,
            list(meta["answers"]),
            gt_box,
            float(meta["width"]),
            float(meta["height"]),
        )
        return Score(
            value=value,
            answer=fields["answer"],
            explanation=explanation,
            metadata={"bbox": fields["bbox"]},
        )

    return score
