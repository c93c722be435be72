"""docval_teacher's grounding check: one fixed chain of thought is rejected on every page, an
honest chain that cites each page passes (issue #29 item 5)."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from docket.benchmarks.docval.dataset import SHIPPED, load_documents, to_samples
from docket.benchmarks.docval.grounding import check_trace, grounding_problems, steps_of
from docket.benchmarks.docval.reference import grounded_steps
from docket.methods.distill.teacher import val_scorer

FIXED_COT = (
    "Step 1: Locate the text region that holds the requested field. "
    "Step 2: The field label sits next to its value in that area. "
    "Step 3: Extract the answer value found there. "
    "Step 4: The bounding box coordinates enclose the answer."
)
SEGMENTS: list[list[Any]] = [
    [0, 10, 10, 50, 22, "Total"],
    [1, 60, 10, 120, 22, "$1,234.50"],
    [2, 10, 40, 70, 52, "Tax 5%"],
]


@pytest.fixture(scope="module")
def metadata() -> list[dict[str, Any]]:
    return [dict(s.metadata or {}) for s in to_samples(load_documents(SHIPPED), "layout_text")]


def _trace(reasoning: str, answer: str, box: list[int]) -> str:
    return f"REASONING: {reasoning}\nANSWER: {answer}\nBBOX: {box}"


async def _score(meta: dict[str, Any], text: str) -> dict[str, float]:
    state = TaskState(
        model=ModelName("docket/scripted"),
        sample_id="q",
        epoch=1,
        input="",
        messages=[],
        output=ModelOutput.from_content("docket/scripted", text),
        metadata=meta,
    )
    score = await val_scorer(check=check_trace)(state, Target(meta["answers"]))
    assert score is not None and isinstance(score.value, dict)
    return {k: float(v) for k, v in score.value.items()}


def _gold(meta: dict[str, Any]) -> tuple[str, list[int]]:
    return str(meta["answers"][0]), [round(v) for v in meta["bbox"]]


async def test_the_fixed_chain_with_the_right_answer_and_box_is_rejected_on_every_page(
    metadata: list[dict[str, Any]],
) -> None:
    """The issue's attack with the gold answer and box (stronger than the tagger's): VAL alone
    accepts it on every page; the grounding check rejects it on every page."""
    values = [await _score(m, _trace(FIXED_COT, *_gold(m))) for m in metadata]
    assert len(values) == 1050
    assert sum(v["accepted_val"] for v in values) == 1050
    assert sum(v["grounded"] for v in values) == 0
    assert sum(v["accepted"] for v in values) == 0


async def test_an_honest_grounded_chain_passes_on_every_page(
    metadata: list[dict[str, Any]],
) -> None:
    values = []
    for m in metadata:
        answer, box = _gold(m)
        steps = grounded_steps(m["question"], answer, m["bbox"], box, m["segments"])
        values.append(await _score(m, _trace("\n".join(steps), answer, box)))
    assert sum(v["grounded"] for v in values) == 1050
    assert sum(v["accepted"] for v in values) == 1050


def test_each_rule_of_the_check() -> None:
    box = [60, 10, 120, 22]
    honest = (
        'Step 1: The label "Total" is printed at [10, 10, 50, 22]. '
        'Step 2: The value right of it reads "$1,234.50". '
        "Step 3: Its box is [60, 10, 120, 22]."
    )
    assert steps_of(honest)[1] == 'The value right of it reads "$1,234.50".'
    assert grounding_problems(honest, "$1,234.50", box, SEGMENTS) == []
    assert grounding_problems("Step 1: It is there.", "$1,234.50", box, SEGMENTS) == [
        "reasoning has 1 steps; at least 3 are needed"
    ]
    # quotes the page does not print ("Invoice"), or too short to cite ("To", part of "Total")
    vague = honest.replace('"$1,234.50"', '"Invoice"').replace('"Total" is printed at', '"To"')
    vague = vague.replace("[10, 10, 50, 22]", "")
    assert grounding_problems(vague, "$1,234.50", box, SEGMENTS) == [
        "step 1 cites no text or box printed on the page",
        "step 2 cites no text or box printed on the page",
        "the steps cite 1 printed segments; at least 2",
        "the reasoning does not quote the answer",
    ]
    # one segment cited in every step: the answer alone does not ground a chain
    parrot = " ".join(f'Step {i}: "$1,234.50" at [60, 10, 120, 22].' for i in (1, 2, 3))
    assert grounding_problems(parrot, "$1,234.50", box, SEGMENTS) == [
        "the steps cite 1 printed segments; at least 2"
    ]
    # a template that quotes letters of common words ("ota" and "Tot" of "Total")
    template = (
        'Step 1: Note "ota". Step 2: Note "Tot". Step 3: The answer "$1,234.50" is at '
        "[60, 10, 120, 22]."
    )
    assert grounding_problems(template, "$1,234.50", box, SEGMENTS) == [
        "step 1 cites no text or box printed on the page",
        "step 2 cites no text or box printed on the page",
        "the steps cite 1 printed segments; at least 2",
    ]
    # a box that covers no printed segment, and a different final box
    moved = honest.replace("[60, 10, 120, 22]", "[300, 300, 340, 320]")
    assert grounding_problems(moved, "$1,234.50", box, SEGMENTS) == [
        "step 3 cites no text or box printed on the page",
        "the reasoning does not give the answer's box",
    ]
