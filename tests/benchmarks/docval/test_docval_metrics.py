"""Known-answer tests for ANLS, IoU, mAP, the output parser and the box rule."""

from __future__ import annotations

import math

import pytest

from docket.benchmarks.docval.parse import apply_box_rule, parse_output
from docket.benchmarks.docval.scorer import anls, grade, map_fraction, mean_average_precision
from docket.methods.distill.boxes import iou


@pytest.mark.parametrize(
    ("prediction", "answers", "expected"),
    [
        ("$12.50", ["$12.50"], 1.0),
        ("  Total  DUE ", ["total due"], 1.0),  # case and whitespace are normalised
        ("abcdefghiX", ["abcdefghij"], 0.9),  # NL 0.1
        ("abcdefWXYZ", ["abcdefghij"], 0.6),  # NL 0.4 < tau
        ("abcdeVWXYZ", ["abcdefghij"], 0.0),  # NL 0.5 is not < tau 0.5: cut to 0
        ("ab", ["ac"], 0.0),  # NL exactly 0.5
        ("abc", ["abd"], 1 - 1 / 3),  # NL 1/3
        ("abcdefghiX", ["zzz", "abcdefghij"], 0.9),  # max over ground-truth answers
        ("", ["abc"], 0.0),  # empty prediction
        (None, ["abc"], 0.0),  # no prediction parsed
    ],
)
def test_anls_known_values(prediction: str | None, answers: list[str], expected: float) -> None:
    assert anls(prediction, answers) == pytest.approx(expected)


def test_iou_known_values() -> None:
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(1 / 3)
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    assert iou((0, 0, 10, 10), (10, 0, 5, 10)) == 0.0  # inverted box has no area


def test_map_dlava_definition() -> None:
    # thresholds .50..:.95: IoU 1.0 clears 10, 0.5 clears 1, 0.74 clears 5 (.50-.70), 0 clears 0
    assert [map_fraction(v) for v in (1.0, 0.5, 0.74, 0.0)] == [1.0, 0.1, 0.5, 0.0]
    # precision per threshold: .50 -> 3/4, .55-.70 -> 2/4, .75-.95 -> 1/4; mean = 4.0 / 10
    assert mean_average_precision([1.0, 0.5, 0.74, 0.0]) == pytest.approx(0.4)
    assert mean_average_precision([0.0]) == 0.0
    with pytest.raises(ValueError):
        mean_average_precision([])


def test_parse_lines_json_and_garbage() -> None:
    lines = parse_output("REASONING: Step 1 ...\n**ANSWER:** $4.00\nBBOX: [10, 20, 30, 40]")
    assert (lines.answer, lines.bbox, lines.problems) == ("$4.00", (10, 20, 30, 40), [])
    fenced = parse_output('Sure.\n```json\n{"answer": "Oak", "bbox": [1, 2, 3.5, 4]}\n```')
    assert (fenced.answer, fenced.bbox) == ("Oak", (1, 2, 3.5, 4))
    spaces = parse_output("ANSWER: x\nBBOX: (1 2 3 4)")
    assert spaces.bbox == (1, 2, 3, 4)
    bad = parse_output("ANSWER: x\nBBOX: somewhere at the top")
    assert bad.answer == "x" and bad.bbox is None
    assert bad.problems == ["unparsable BBOX 'somewhere at the top'"]
    sentence = parse_output("The answer is: $131.62.")
    assert sentence.answer == "$131.62" and sentence.bbox is None
    assert sentence.problems[0] == "no ANSWER: line; answer taken from 'the answer is ...'"
    nothing = parse_output("I don't know")
    assert nothing.answer is None and nothing.bbox is None and len(nothing.problems) == 2
    json_bad_box = parse_output('{"answer": "a", "bbox": "left"}')
    assert json_bad_box.bbox is None and json_bad_box.problems == ["unparsable bbox 'left'"]


def test_box_rule_clip_and_reject() -> None:
    assert apply_box_rule((10, 10, 20, 20), 100, 100) == ((10, 10, 20, 20), "")
    assert apply_box_rule((-5, 10, 120, 20), 100, 100) == ((0, 10, 100, 20), "clipped")
    assert apply_box_rule((20, 10, 10, 20), 100, 100) == (None, "rejected: x2 <= x1 or y2 <= y1")
    assert apply_box_rule((150, 10, 160, 20), 100, 100) == (None, "rejected: outside the image")


def test_grade_values_and_reasons() -> None:
    value, explanation, _ = grade(
        "ANSWER: 42\nBBOX: [0, 0, 10, 10]", ["42"], [5, 0, 15, 10], 100, 100
    )
    assert value["anls"] == 1.0 and value["iou"] == pytest.approx(1 / 3)
    assert value["map"] == 0.0 and value["answer_right_box_wrong"] == 1.0 and value["joint"] == 0.0
    value, explanation, _ = grade("no idea", ["42"], [0, 0, 10, 10], 100, 100)
    assert value["unparsed"] == 1.0 and value["anls"] == 0.0 and value["iou"] == 0.0
    assert "no ANSWER: line" in explanation
    value, explanation, _ = grade(
        "ANSWER: 42\nBBOX: [-10, 0, 10, 10]", ["42"], [0, 0, 10, 10], 100, 100
    )
    assert value["box_clipped"] == 1.0 and value["iou"] == 1.0 and "clipped" in explanation
    value, explanation, _ = grade(
        "ANSWER: 42\nBBOX: [10, 0, 0, 10]", ["42"], [0, 0, 10, 10], 100, 100
    )
    assert value["box_rejected"] == 1.0 and value["iou"] == 0.0 and "rejected" in explanation
    value, explanation, _ = grade("ANSWER: 42\nBBOX: [0, 0, 10, 10]", ["42"], None, 100, 100)
    assert (
        value["anls"] == 1.0 and math.isnan(value["iou"]) and "no ground-truth box" in explanation
    )
