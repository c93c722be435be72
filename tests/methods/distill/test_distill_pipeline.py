"""Teacher traces through Inspect, VAL filtering, failure counts, export, and the two-stage SFT
on a tiny random LLaVA."""

from __future__ import annotations

import json
import math
import runpy
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from docket.benchmarks.docval.docval import docval_teacher
from docket.core.roles import RoleUnboundError
from docket.methods.distill import export, sft
from docket.methods.distill.teacher import teacher_prompt

SCRIPTS = Path(__file__).resolve().parents[3] / "methods" / "distill" / "scripts"
export_main = runpy.run_path(str(SCRIPTS / "export.py"))["main"]
sft_main = runpy.run_path(str(SCRIPTS / "sft.py"))["main"]

LIMIT = 12


def _teacher_log(tmp_path: Path, shift: int, policy: str = "docval_teacher") -> EvalLog:
    # the evaluated model refuses; traces can only come from the model bound to `teacher`
    args: dict[str, Any] = {"shift": shift} if policy == "docval_teacher" else {}
    teacher = get_model("docket/scripted", policy=policy, **args)
    log = inspect_eval(
        docval_teacher(),
        model=get_model("docket/scripted", policy="refuse"),
        model_roles={"teacher": teacher},
        log_dir=str(tmp_path / f"{policy}-{shift}"),
        display="none",
        limit=LIMIT,
    )[0]
    assert log.status == "success", log.error
    return log


def _mean(log: EvalLog, score: str) -> float:
    assert log.results is not None
    return float(
        log.results.scores[[s.name for s in log.results.scores].index(score)].metrics["mean"].value
    )


def test_teacher_prompt_has_regions_question_and_seven_steps() -> None:
    meta = {
        "doc_id": "d1",
        "width": 100,
        "height": 50,
        "question": "What is the total?",
        "segments": [[1, 50, 30, 90, 40, "$3.00"], [0, 5, 30, 40, 40, "Total"]],
    }
    prompt = teacher_prompt(meta, max_regions=1)
    assert 'Region #0: [5, 30, 40, 40] -> "Total"' in prompt  # reading order, then truncated
    assert "$3.00" not in prompt
    assert "7 bbox determination" in prompt and "Question: What is the total?" in prompt


def test_filter_accepts_exact_traces_and_rejects_displaced_boxes(tmp_path: Path) -> None:
    good, bad = _teacher_log(tmp_path, 0), _teacher_log(tmp_path, 1000)
    assert _mean(good, "q") == 1.0 and _mean(good, "accepted") == 1.0
    # box pushed off its region: Q = 0.4 * 1 + 0.4 * 0 + 0.2 * 1
    assert _mean(bad, "q") == pytest.approx(0.6) and _mean(bad, "accepted") == 0.0
    assert len(export.trace_rows(good.location)) == LIMIT
    assert export.trace_rows(bad.location) == []
    rejected = export.trace_rows(bad.location, accepted_only=False)
    assert len(rejected) == LIMIT and rejected[0]["errors"][0]["severity"] == "high"
    out = tmp_path / "traces.jsonl"
    export_main([good.location, str(out)])
    rows = export.read_jsonl(out)
    assert rows[0]["answer"] == rows[0]["gt_answer"] and rows[0]["bbox"] == rows[0]["gt_bbox"]
    assert rows[0]["reasoning"].count("Step ") == 7


def test_refusing_and_unparsable_teachers_are_counted_and_score_zero(tmp_path: Path) -> None:
    refused = _teacher_log(tmp_path, 0, policy="refuse")
    assert _mean(refused, "refused") == 1.0 and _mean(refused, "unparsed") == 1.0
    # no floor: an empty trace verifies nothing (the official code gave it Q = 0.133)
    assert _mean(refused, "q") == 0.0 and _mean(refused, "accepted") == 0.0
    assert math.isnan(_mean(refused, "q_parsed"))  # no parsed trace to average over
    comply = _teacher_log(tmp_path, 0, policy="comply")  # answers, but not in the contract
    assert _mean(comply, "refused") == 0.0 and _mean(comply, "unparsed") == 1.0
    good, shifted = _teacher_log(tmp_path, 0), _teacher_log(tmp_path, 1000)
    assert _mean(good, "unparsed") == 0.0 and _mean(good, "q_parsed") == 1.0
    assert _mean(shifted, "q_parsed") == pytest.approx(0.6)
    assert refused.samples is not None
    explanation = (refused.samples[0].scores or {})["val_scorer"].explanation or ""
    assert explanation.startswith("REFUSED Q=0.000; no ANSWER: line")
    meta = good.eval.metadata or {}
    assert meta["benchmark"] == "docval" and meta["headline"]["score"] == "accepted"
    assert meta["headline"]["value"] == "binary" and good.eval.task_version == "3-B"


def test_an_unbound_teacher_role_stops_the_eval(tmp_path: Path) -> None:
    refuse = get_model("docket/scripted", policy="refuse")
    with pytest.raises(RoleUnboundError, match="'teacher' model role is unbound"):
        inspect_eval("docket/docval_teacher", model=refuse, display="none", limit=1)
    own = get_model("docket/scripted", policy="docval_teacher")
    log = inspect_eval(
        "docket/docval_teacher",
        model=own,
        task_args={"self_teacher": True},
        log_dir=str(tmp_path),
        display="none",
        limit=2,
    )[0]
    assert log.status == "success" and _mean(log, "accepted") == 1.0


def test_two_stage_sft_runs_end_to_end_on_a_tiny_vlm(tmp_path: Path, one_thread: None) -> None:
    rows = export.trace_rows(_teacher_log(tmp_path, 0).location)
    traces, heldout = tmp_path / "traces.jsonl", tmp_path / "heldout.jsonl"
    export.write_jsonl(rows[:8], traces)
    export.write_jsonl(rows[8:11], heldout)
    out = tmp_path / "run"
    sft_main(
        [
            "--traces",
            str(traces),
            "--heldout",
            str(heldout),
            "--out",
            str(out),
            "--epochs",
            "4",
            "--max-iterations",
            "2",
            "--max-new-tokens",
            "12",
            "--max-length",
            "160",
            "--lr",
            "0.003",
        ]
    )
    report = json.loads((out / "report.json").read_text())
    losses = report["stage1_losses"]
    assert len(losses) == 4 and all(b < a for a, b in zip(losses, losses[1:], strict=False))
    # a random student fails every held-out item, so each becomes a correction example
    assert [it["corrections"] for it in report["stage2"]] == [3, 3]
    assert report["final_acceptance"] == 0.0
    from transformers import AutoModelForImageTextToText

    saved = AutoModelForImageTextToText.from_pretrained(str(out / "model"))
    assert type(saved).__name__ == "LlavaForConditionalGeneration"
    assert saved.config.text_config.hidden_size == 64


def test_correction_examples_carry_feedback_and_gt_target() -> None:
    from docket.methods.distill.output_format import grounding_prompt
    from docket.methods.distill.validator import Region, feedback_text, validate

    row = {"doc_id": "d1", "width": 100, "height": 100, "question": "Total?"}
    result = validate(
        "$2",
        (0, 0, 5, 5),
        "",
        "$3",
        (50, 50, 70, 60),
        [Region(4, (50, 50, 70, 60), "$3")],
        "Total?",
    )
    prompt = sft.prompt_of(row, feedback_text(result))
    assert prompt.startswith(grounding_prompt("d1", 100, 100, "Total?"))
    # Q = 0.4 * Q_ans (0.7 * NLS("$2", "$3") = 0.35) with no box overlap and no reasoning
    feedback = "\n".join(
        [
            "VERIFIER: INVALID (Q=0.14)",
            '[high] answer "$2" should be "$3" (Q_ans 0.35)',
            "[high] IoU 0.00: move RIGHT by 50px; move DOWN by 50px; EXPAND width by 15px",
            "[low] no reasoning given",
        ]
    )
    assert prompt.endswith(f"Question: Total?\nFeedback:\n{feedback}")
    target = sft.format_target(
        result.corrected["reasoning"], result.corrected["answer"], result.corrected["bbox"]
    )
    assert target.endswith("ANSWER: $3\nBBOX: [50, 50, 70, 60]")
    assert 'Region #4 "$3"' in target
