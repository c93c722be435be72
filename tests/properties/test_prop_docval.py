"""DocVAL parsers under adversarial input: model outputs, boxes, data rows, the validator."""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from docket.benchmarks.docval.consistency import check_document
from docket.benchmarks.docval.dataset import (
    SHIPPED,
    DocvalDataError,
    load_documents,
    load_docvqa,
    to_samples,
)
from docket.benchmarks.docval.layouts import DOC_TYPES
from docket.benchmarks.docval.ocr import simulate_ocr
from docket.benchmarks.docval.parse import Parsed, apply_box_rule, parse_box, parse_output
from docket.benchmarks.docval.scorer import KEYS, docval_grounding_scorer, grade
from docket.methods.distill.validator import Region, validate
from tests.properties.prop_strategies import HOSTILE_NUMBERS, JSON_VALUES, JSONL_LINES, one_line

_SHIPPED_DOC = load_documents(SHIPPED)[1]
FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
BOXES = st.tuples(FINITE, FINITE, FINITE, FINITE)
ANY_BOX = st.tuples(HOSTILE_NUMBERS, HOSTILE_NUMBERS, HOSTILE_NUMBERS, HOSTILE_NUMBERS).map(
    lambda t: tuple(float(v) if not isinstance(v, int) or abs(v) < 10**300 else math.inf for v in t)
)
GOOD_BOX = st.tuples(
    st.floats(0, 400), st.floats(0, 400), st.floats(1, 100), st.floats(1, 100)
).map(lambda b: (b[0], b[1], b[0] + b[2], b[1] + b[3]))
FRAGMENTS = st.sampled_from(
    [
        "ANSWER:",
        "answer :",
        "**Answer**:",
        "BBOX:",
        "box:",
        "REASONING:",
        "the answer is",
        "[",
        "]",
        "(",
        ",",
        "{",
        "}",
        '"answer"',
        '"bbox"',
        "```json",
        "```",
        "\n",
        " ",
        "1e999",
        "9" * 400,
        "-3",
        "NaN",
        "12.5",
    ]
)
OUTPUTS = st.one_of(
    st.text(max_size=200),
    st.lists(st.one_of(FRAGMENTS, st.text(max_size=8)), max_size=25).map("".join),
    st.builds(lambda a, b: json.dumps({"answer": a, "bbox": b}), JSON_VALUES, JSON_VALUES),
)


def _check_parsed(parsed: Parsed) -> None:
    assert parsed.answer is None or isinstance(parsed.answer, str)
    if parsed.bbox is not None:
        assert len(parsed.bbox) == 4 and all(isinstance(v, float) for v in parsed.bbox)
    if parsed.answer is None or parsed.bbox is None:
        assert parsed.problems, "a missing answer or box must come with a reason"
    assert all(isinstance(p, str) and p for p in parsed.problems)


@settings(max_examples=150)
@given(OUTPUTS)
@example('{"answer": "x", "bbox": [' + "1" * 400 + ", 0, 1, 1]}")
@example('{"answer": "x", "bbox": [' + "1" * 5000 + ", 0, 1, 1]}")
@example('{"answer": "x", "bbox": ' + "[" * 5000 + "]" * 5000 + "}")
@example("ANSWER: x\nBBOX: [" + "9" * 400 + ", 0, 1, 1]")
def test_parse_output_returns_a_parsed_result_or_says_why_not(text: str) -> None:
    _check_parsed(parse_output(text))


@given(JSON_VALUES)
@example([10**400, 0, 1, 1])
def test_parse_box_gives_four_floats_or_none(value: object) -> None:
    box = parse_box(value)
    assert box is None or (len(box) == 4 and all(isinstance(v, float) for v in box))


@settings(max_examples=150)
@given(ANY_BOX, st.floats(1, 5000), st.floats(1, 5000))
@example((math.nan, 0.0, 10.0, 10.0), 100.0, 100.0)
@example((0.0, 0.0, math.nan, 10.0), 100.0, 100.0)
@example((-math.inf, -math.inf, math.inf, math.inf), 100.0, 100.0)
def test_box_rule_keeps_a_box_inside_the_page_or_rejects_it(
    box: tuple[float, float, float, float], width: float, height: float
) -> None:
    kept, rule = apply_box_rule(box, width, height)
    if any(math.isnan(v) for v in box):
        assert kept is None and rule == "rejected: a coordinate is NaN"
    if kept is None:
        assert rule.startswith("rejected: ")
        return
    x1, y1, x2, y2 = kept
    assert all(math.isfinite(v) for v in kept)
    assert 0.0 <= x1 < x2 <= width and 0.0 <= y1 < y2 <= height
    assert rule in ("", "clipped")
    assert (rule == "") == (kept == box)


@settings(max_examples=100)
@given(
    OUTPUTS,
    st.lists(st.text(max_size=20), min_size=1, max_size=3),
    st.one_of(st.none(), GOOD_BOX),
    st.floats(1, 2000),
    st.floats(1, 2000),
)
def test_grade_counts_every_failure_and_never_raises(
    output: str,
    answers: list[str],
    gt_box: tuple[float, float, float, float] | None,
    width: float,
    height: float,
) -> None:
    value, explanation, fields = grade(output, answers, gt_box, width, height)
    assert set(value) == set(KEYS)
    box_keys = {"iou", "map", "hit50", "joint", "answer_right_box_wrong"}
    for key, v in value.items():
        if gt_box is None and key in box_keys:
            assert math.isnan(v)
        else:
            assert 0.0 <= v <= 1.0, (key, v)
    parsed = parse_output(output)
    assert value["unparsed"] == float(parsed.answer is None or parsed.bbox is None)
    if value["unparsed"] or value["box_rejected"]:
        assert "problems:" in explanation
    assert fields["answer"] == parsed.answer


async def test_scorer_returns_a_score_for_an_unparsable_output() -> None:
    state = TaskState(
        model=ModelName("docket/scripted"),
        sample_id="q0",
        epoch=1,
        input="",
        messages=[],
        output=ModelOutput.from_content("docket/scripted", "BBOX: [5, 5, 1, 1]"),
        metadata={"answers": ["42"], "bbox": [0, 0, 10, 10], "width": 100, "height": 100},
    )
    score = await docval_grounding_scorer()(state, Target(["42"]))
    assert score is not None and isinstance(score.value, dict)
    assert score.value["unparsed"] == 1.0 and score.value["box_rejected"] == 1.0
    assert score.value["anls"] == 0.0 and score.value["iou"] == 0.0
    assert "no ANSWER: line" in str(score.explanation)


def _write(tmp: Path, lines: list[str]) -> Path:
    path = tmp / "split.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


DOC_ROWS = st.fixed_dictionaries(
    {
        "doc_id": st.one_of(st.text(max_size=5), JSON_VALUES),
        "image": st.one_of(st.text(max_size=5), JSON_VALUES),
        "width": st.one_of(st.integers(1, 999), JSON_VALUES),
        "height": st.one_of(st.integers(1, 999), JSON_VALUES),
        "questions": st.one_of(
            st.lists(
                st.one_of(
                    JSON_VALUES,
                    st.fixed_dictionaries(
                        {
                            "question": st.one_of(st.text(max_size=5), JSON_VALUES),
                            "answers": st.one_of(st.lists(st.text(max_size=5)), JSON_VALUES),
                        },
                        optional={"bbox": st.one_of(ANY_BOX.map(list), JSON_VALUES)},
                    ),
                ),
                max_size=3,
            ),
            JSON_VALUES,
        ),
    },
    optional={"words": JSON_VALUES, "segments": JSON_VALUES, "ocr": JSON_VALUES},
).map(json.dumps)


@settings(max_examples=100)
@given(st.lists(st.one_of(DOC_ROWS, JSONL_LINES), min_size=1, max_size=3))
@example(["1"])
@example(['"doc_id image width height questions"'])
@example([json.dumps({"doc_id": "d", "image": "i", "width": 1, "height": 1, "questions": [7]})])
@example(["[" * 5000])
@example([json.dumps({"doc_id": "d", "image": "i", "width": 9, "height": 9, "questions": []})])
@example(
    [
        json.dumps(
            {
                "doc_id": "d",
                "image": "i",
                "width": 9,
                "height": 9,
                "segments": [[0, 1, 2, 3, 4]],
                "questions": [{"question": "q", "answers": ["a"]}],
            }
        )
    ]
)
@example(['{"n": ' + "1" * 5000 + "}"])
def test_load_documents_returns_documents_or_one_error_naming_the_row(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = _write(tmp_path_factory.mktemp("docval"), lines)
    try:
        docs = load_documents(path)
    except DocvalDataError as ex:
        one_line(str(ex), str(path))
        return
    for mode in ("vision", "layout_text"):
        try:
            samples = to_samples(docs, mode)
        except DocvalDataError as ex:
            one_line(str(ex), "document")
            continue
        assert len(samples) == sum(len(d["questions"]) for d in docs)


def test_load_documents_names_a_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "split.jsonl"
    path.write_bytes(b'{"doc_id": "\xff"}\n')
    with pytest.raises(DocvalDataError) as info:
        load_documents(path)
    one_line(str(info.value), str(path))


DOCVQA_ROWS = st.fixed_dictionaries(
    {
        "image": st.one_of(st.text(max_size=8), JSON_VALUES),
        "question": st.one_of(st.text(max_size=5), JSON_VALUES),
        "answers": st.one_of(st.lists(st.text(max_size=5)), JSON_VALUES),
    },
    optional={"bbox": JSON_VALUES, "questionId": JSON_VALUES},
)


@settings(max_examples=150)
@given(
    st.one_of(
        JSON_VALUES,
        st.fixed_dictionaries({"data": st.one_of(JSON_VALUES, st.lists(DOCVQA_ROWS, max_size=3))}),
    )
)
@example({"data": 5})
@example({"data": [1]})
@example({"data": [{"image": "a\x00b", "question": "q", "answers": ["a"]}]})
def test_load_docvqa_returns_documents_or_one_error_naming_the_file(
    tmp_path_factory: pytest.TempPathFactory, content: object
) -> None:
    path = tmp_path_factory.mktemp("docvqa") / "val.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    try:
        docs = load_docvqa(path)
    except DocvalDataError as ex:
        one_line(str(ex), str(path))
        return
    assert docs == []  # no image exists here, so only an empty data list can load


REGIONS = st.lists(
    st.builds(Region, id=st.integers(0, 50), box=GOOD_BOX, text=st.text(max_size=10)), max_size=4
)


@settings(max_examples=100)
@given(
    st.one_of(st.none(), st.text(max_size=20)),
    st.one_of(st.none(), ANY_BOX),
    st.text(max_size=80),
    st.text(max_size=20),
    GOOD_BOX,
    REGIONS,
)
@example(None, (math.nan,) * 4, "", "x", (0.0, 0.0, 10.0, 10.0), [])
@example("x", (-math.inf, 0.0, math.inf, 10.0), "top [1, 2, 3, 4]", "x", (0.0, 0.0, 10.0, 10.0), [])
def test_validator_scores_any_trace_between_zero_and_one(
    answer: str | None,
    box: tuple[float, float, float, float] | None,
    reasoning: str,
    gt_answer: str,
    gt_box: tuple[float, float, float, float],
    regions: list[Region],
) -> None:
    result = validate(answer, box, reasoning, gt_answer, gt_box, regions, "q?")
    for part in (result.q, result.q_ans, result.q_bbox, result.q_reason, result.iou):
        assert 0.0 <= part <= 1.0, result
    assert result.accepted == (result.q >= 0.85)
    if not result.accepted:
        assert result.errors


WORD_ROWS = st.lists(
    st.tuples(
        st.text(alphabet="abcXYZ019-/.,:$", min_size=1, max_size=12),
        st.integers(0, 380),
        st.integers(0, 180),
        st.integers(1, 60),
        st.integers(1, 20),
    ).map(lambda w: [w[0], w[1], w[2], w[1] + w[3], w[2] + w[4], 0]),
    max_size=12,
)


@settings(max_examples=150)
@given(WORD_ROWS, st.integers(0, 10**6), st.floats(0, 1), st.floats(0, 1))
def test_simulated_ocr_keeps_every_character_in_a_valid_box(
    words: list[list[object]], seed: int, merge_rate: float, split_rate: float
) -> None:
    tokens = simulate_ocr(words, 400, 200, random.Random(seed), merge_rate, split_rate)
    for text, x1, y1, x2, y2 in tokens:
        assert text and 0 <= x1 < x2 <= 400 and 0 <= y1 < y2 <= 200
    # merges join words with a space and splits cut inside a word: no character is lost
    assert sorted("".join(t[0] for t in tokens).replace(" ", "")) == sorted(
        "".join(str(w[0]) for w in words)
    )


@settings(max_examples=100)
@given(st.sampled_from(DOC_TYPES), JSON_VALUES, st.dictionaries(st.text(max_size=8), JSON_VALUES))
def test_consistency_check_reports_hostile_facts_without_raising(
    doc_type: str, value: object, facts: dict[str, object]
) -> None:
    doc = copy.deepcopy(_SHIPPED_DOC)
    doc["doc_type"] = doc_type
    doc["facts"] = {**facts, **{key: value for key in list(doc["facts"])[:2]}}
    problems = check_document(doc)
    assert all(isinstance(p, str) and p.startswith(f"{doc['doc_id']}: ") for p in problems)
    for problem in problems:
        one_line(problem)
