"""SAR's verifier reads every step: an ANSWER-only "repair" is rejected, a real one kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.toy_math.reference import (
    Chain,
    answer_only,
    repair_a,
    style_a,
    style_b,
    style_c,
)
from docket.benchmarks.toy_math.scorer import trace_problem, trace_verifier, verifier
from docket.benchmarks.toy_math.toy_math import toy_math_sar
from docket.methods.distill.style_refine import judge_repair
from tests.scores import sample_score

CHAIN = Chain(7, (("+", 5), ("*", 3)))  # 7+5=12, 12*3=36


def test_every_style_of_a_right_solution_verifies_and_each_wrong_step_is_named() -> None:
    for text in (style_a(CHAIN), style_b(CHAIN), style_c(CHAIN)):
        assert trace_problem(CHAIN, text) is None, text
    assert trace_problem(CHAIN, "7+5=13\n13*3=39\nANSWER: 36") == (
        "step 1 gives 13, it should give 12"
    )
    assert trace_problem(CHAIN, "7+5=12\n13*3=36\nANSWER: 36") == (
        "step 2 starts from 13, the running value is 12"
    )
    assert trace_problem(CHAIN, "7+6=12\n12*3=36\nANSWER: 36") == (
        "step 1 is +6, the problem says +5"
    )
    assert trace_problem(CHAIN, "ANSWER: 36") == "states 0 steps, the problem has 2"
    assert trace_problem(CHAIN, "7+5=12\n12*3=36\nANSWER: 35") == (
        "ANSWER 35 is not the last step's result 36"
    )
    assert trace_problem(CHAIN, "We begin with 7. Adding 5 gives 12. Multiplying 12 by 3 gives "
                         "30.\nANSWER: 36") == "step 2 gives 30, it should give 36"  # fmt: skip


def test_an_answer_only_repair_is_rejected_and_a_real_repair_accepted() -> None:
    slipped = style_a(CHAIN, slip=(0, 1))  # 7+5=13 / 13*3=39 / ANSWER: 39
    attack, real = answer_only(CHAIN, slipped), repair_a(CHAIN, slipped)
    assert attack == "7+5=13\n13*3=39\nANSWER: 36" and real == style_a(CHAIN)
    assert verifier("36")(attack)  # the version-1 check (final answer only) took it
    verdict = judge_repair(slipped, attack, trace_verifier(CHAIN), budget=0.3)
    assert not verdict.accepted and not verdict.verified
    verdict = judge_repair(slipped, real, trace_verifier(CHAIN), budget=0.3)
    assert verdict.accepted and verdict.edit_ratio == 4 / 25  # 3->2, 13->12, 39->36 twice


def _verdicts(tmp_path: Path, teacher: str) -> list[dict[str, Any]]:
    roles = {"teacher": get_model("docket/scripted", policy=teacher)}
    student = get_model("docket/scripted", policy="toy_math_student", error_rate=1.0)
    [log] = inspect_eval(toy_math_sar(size=10, k=2, sources="rs,sar"), model=student,
                         model_roles=roles, log_dir=str(tmp_path), display="none")  # fmt: skip
    assert log.status == "success" and log.samples and log.eval.task_version == "2-B"
    return [
        v
        for s in log.samples
        for v in (sample_score(s, "sar_collection").metadata or {})["verdicts"]
    ]


def test_sar_keeps_no_answer_only_repair_and_the_real_teachers_within_budget(
    tmp_path: Path,
) -> None:
    attacked = _verdicts(tmp_path, "toy_math_answer_only_teacher")
    assert len(attacked) == 20 and not any(v["verified"] or v["accepted"] for v in attacked)
    assert {v["check"].split(",")[0].split(" gives")[0] for v in attacked} <= {
        "step 1",
        "step 2",
        "step 3",
    }
    repaired = _verdicts(tmp_path, "toy_math_teacher")
    assert len(repaired) == 20 and all(v["verified"] for v in repaired)
    assert all(v["check"] == "every step verified" for v in repaired)
    assert all(v["accepted"] == (v["edit_ratio"] <= 0.3) for v in repaired)
    assert sum(v["accepted"] for v in repaired) == 16  # 4 cost more than the budget
