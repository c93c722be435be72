"""The DocVAL validator on boxes shifted by known pixels and answers edited by known distances."""

from __future__ import annotations

import pytest

from docket.methods.distill.validator import (
    Region,
    Validation,
    bbox_correction,
    feedback_text,
    reasoning_scores,
    validate,
)

REGIONS = [
    Region(0, (10, 100, 80, 115), "Subtotal"),
    Region(1, (300, 100, 360, 115), "$20.00"),
    Region(2, (10, 130, 60, 145), "Total"),
    Region(3, (300, 130, 360, 145), "$22.00"),
]
GT = (300.0, 130.0, 360.0, 145.0)
FULL_COT = (
    "Step 1: read the text region. Step 3: locate it. Step 5: extract the value. Step 7: bbox."
)


def _run(
    answer: str, box: tuple[float, float, float, float] | None, cot: str = FULL_COT
) -> Validation:
    return validate(answer, box, cot, "$22.00", GT, REGIONS, "What is the total?")


def test_perfect_trace_scores_one_and_is_accepted() -> None:
    result = _run("$22.00", GT)
    assert (result.q, result.q_ans, result.q_bbox, result.q_reason) == (1.0, 1.0, 1.0, 1.0)
    assert result.accepted and result.decision == "ACCEPT" and result.errors == []


@pytest.mark.parametrize(
    ("shift", "iou", "severity", "accepted"),
    [(3, 57 / 63, None, True), (10, 50 / 70, "medium", True), (30, 30 / 90, "high", False)],
)
def test_box_shifted_right_by_known_pixels(
    shift: int, iou: float, severity: str | None, accepted: bool
) -> None:
    result = _run("$22.00", (300 + shift, 130, 360 + shift, 145))
    assert result.iou == pytest.approx(iou)
    assert result.q_bbox == pytest.approx(0.8 * iou + 0.2)  # still matches region 3
    assert result.q == pytest.approx(0.4 + 0.4 * (0.8 * iou + 0.2) + 0.2)
    assert result.accepted is accepted
    bbox_errors = [e for e in result.errors if e.kind == "bbox"]
    if severity is None:
        assert bbox_errors == []
    else:
        assert [e.severity for e in bbox_errors] == [severity]
        assert bbox_errors[0].delta == (-shift, 0, -shift, 0)
        assert bbox_errors[0].message.endswith(f"move LEFT by {shift}px")


def test_correction_directions() -> None:
    assert bbox_correction((305, 133, 355, 142), GT) == (
        (-5, -3, 5, 3),
        "EXPAND width by 10px; EXPAND height by 6px",
    )
    assert bbox_correction((290, 120, 380, 150), GT)[1] == (
        "move RIGHT by 10px; move DOWN by 10px; SHRINK width by 30px; SHRINK height by 15px"
    )
    assert bbox_correction((301, 130, 361, 145), GT)[1] == "box nearly correct"


def test_neighbouring_field_is_a_critical_wrong_region_error() -> None:
    result = _run("$20.00", REGIONS[1].box)
    assert result.errors[0].severity == "critical" and result.errors[0].kind == "semantic"
    assert 'Region #1 "$20.00"' in result.errors[0].message
    assert 'Region #3 "$22.00"' in result.errors[0].message
    assert result.q_ans == pytest.approx(0.7 * (1 - 1 / 6) + 0.3)
    assert result.q == pytest.approx(0.4 * (0.7 * 5 / 6 + 0.3) + 0.2)
    assert not result.accepted
    assert feedback_text(result).startswith("VERIFIER: INVALID (Q=0.55)\n[critical] wrong region")


@pytest.mark.parametrize(
    ("answer", "q_ans", "severity"),
    [
        ("$22.00", 1.0, None),
        ("$22.0", 0.7 * 5 / 6 + 0.3, "medium"),  # distance 1, still a substring of region 3
        ("$22.001", 0.7 * 6 / 7, "medium"),  # distance 1 of 7, not in any region
        ("$99.99", 0.7 * (1 - 4 / 6), "high"),  # distance 4 of 6: NLS 1/3, no 0.5 cut-off
        ("zzz", 0.0, "high"),
    ],
)
def test_answer_edits_at_known_distances(answer: str, q_ans: float, severity: str | None) -> None:
    result = _run(answer, GT)
    assert result.q_ans == pytest.approx(q_ans)
    answer_errors = [e.severity for e in result.errors if e.kind == "answer"]
    assert answer_errors == ([] if severity is None else [severity])


@pytest.mark.parametrize(
    ("cot", "expected"),
    [
        ("", (0.0, 0.0, 0.0)),  # no reasoning verifies nothing (official code: 0, 1, 1)
        ("  \n", (0.0, 0.0, 0.0)),
        ("the region", (0.25, 1.0, 1.0)),
        ("the region, where", (0.5, 1.0, 1.0)),
        ("the region, where, the value", (0.75, 1.0, 1.0)),
        (FULL_COT, (1.0, 1.0, 1.0)),
        ("box [300, 130, 360, 145]", (0.25, 1.0, 1.0)),  # within 20 px of the prediction
        ("box [0, 0, 10, 10]", (0.25, 0.5, 1.0)),
        ("at the top of the page", (0.0, 1.0, 1.0)),  # y1 = 130 < 300: consistent
        ("at the bottom of the page", (0.0, 1.0, 0.7)),  # contradiction
    ],
)
def test_reasoning_subscores(cot: str, expected: tuple[float, float, float]) -> None:
    assert reasoning_scores(cot, GT) == expected


def test_an_empty_output_scores_zero_without_a_floor() -> None:
    result = validate(None, None, "", "$22.00", GT, [], "What is the total?")
    assert (result.q, result.q_ans, result.q_bbox, result.q_reason) == (0.0, 0.0, 0.0, 0.0)
    assert [e.message for e in result.errors if e.kind == "reasoning"] == ["no reasoning given"]


def test_missing_box_is_a_high_bbox_error_with_the_gt_box() -> None:
    result = _run("$22.00", None)
    assert result.iou == 0.0 and result.q_bbox == 0.0
    assert any(
        e.kind == "bbox" and e.severity == "high" and "[300, 130, 360, 145]" in e.message
        for e in result.errors
    )
    assert result.corrected["bbox"] == [300, 130, 360, 145]
    assert 'Region #3 "$22.00"' in result.corrected["reasoning"]
