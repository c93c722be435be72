"""`docket/toy_math` and `docket/toy_math_sar` end to end on the scripted student and teacher."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from docket.benchmarks.toy_math.dataset import split_chains
from docket.benchmarks.toy_math.reference import parse_question, question
from docket.benchmarks.toy_math.scorer import final_answer
from docket.benchmarks.toy_math.toy_math import toy_math, toy_math_sar
from docket.core.inspect_private import PrerequisiteError
from tests.scores import sample_score, score_fields


def _run(tmp_path: Path, task: Any, policy: str, roles: dict[str, Any] | None = None,
         **args: Any) -> EvalLog:  # fmt: skip
    model = get_model("docket/scripted", policy=policy, memoize=False, **args)
    [log] = inspect_eval(
        task, model=model, model_roles=roles, log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success", log.error
    return log


def _metric(log: EvalLog, score: str, name: str) -> float:
    assert log.results is not None
    return next(s for s in log.results.scores if s.name == score).metrics[name].value


def test_problems_are_deterministic_parseable_and_test_is_held_out() -> None:
    test, train = split_chains("test", 50), split_chains("train", 50)
    assert test == split_chains("test", 50) and not set(test) & set(train)
    assert all(parse_question(question(c)) == c for c in test)
    assert all(c.answer >= 0 for c in [*test, *train])
    assert final_answer("x\nANSWER: 3\nANSWER: -12") == -12 and final_answer("none") is None


def test_exact_student_scores_one_and_the_constant_baseline_its_share(tmp_path: Path) -> None:
    log = _run(tmp_path, toy_math(size=20), "toy_math_student", error_rate=0.0)
    assert _metric(log, "answer_match", "accuracy") == 1.0
    zeros = sum(c.answer == 0 for c in split_chains("test", 20)) / 20
    log = _run(tmp_path, toy_math(size=20), "toy_math_constant")
    assert _metric(log, "answer_match", "accuracy") == pytest.approx(zeros)
    assert zeros < 0.1


def test_sar_keeps_correct_samples_and_the_teachers_minimal_repairs(tmp_path: Path) -> None:
    teacher = {"teacher": get_model("docket/scripted", policy="toy_math_teacher")}
    log = _run(tmp_path, toy_math_sar(size=10, k=4), "toy_math_student", teacher, error_rate=0.5)
    assert log.samples
    yields, accepted, tried = [], 0, 0
    for sample in log.samples:
        score = sample_score(sample, "sar_collection")
        assert score.metadata is not None
        sources = score.metadata["sources"]
        value = score_fields(sample, "sar_collection")
        yields.append(len(sources["rs"]) / 4)
        assert value["rs_yield"] == len(sources["rs"]) / 4
        failed = 4 - len(sources["rs"])
        assert len(score.metadata["verdicts"]) == failed
        verdicts = score.metadata["verdicts"]
        for verdict in verdicts:  # the scripted teacher always repairs; the budget decides
            assert verdict["verified"]
            assert verdict["accepted"] == (verdict["edit_ratio"] <= 0.3)
        assert len(sources["repairs"]) == sum(v["accepted"] for v in verdicts)
        if failed:
            assert value["repair_accepted"] == len(sources["repairs"]) / failed
            accepted += len(sources["repairs"])
            tried += failed
        else:
            assert math.isnan(value["repair_accepted"])
        assert value["rewrite_ok"] == 1.0 and value["synth_ok"] == 1.0
        assert all(t.startswith("We begin with") for t in sources["rewrite"])
    assert _metric(log, "rs_yield", "mean") == pytest.approx(sum(yields) / len(yields))
    assert 0 < sum(yields) / len(yields) < 1
    assert tried and accepted / tried > 0.5  # most slips cost few characters to repair


def test_a_tight_budget_rejects_repairs_and_an_unbound_teacher_is_one_line(tmp_path: Path) -> None:
    teacher = {"teacher": get_model("docket/scripted", policy="toy_math_teacher")}
    log = _run(tmp_path, toy_math_sar(size=6, k=4, budget=0.01, sources="rs,sar"),
               "toy_math_student", teacher, error_rate=1.0)  # fmt: skip
    assert _metric(log, "repair_accepted", "mean") == 0.0
    assert _metric(log, "rs_yield", "mean") == 0.0
    with pytest.raises(PrerequisiteError, match="'teacher' model role is unbound"):
        inspect_eval(
            "docket/toy_math_sar",
            model=get_model("docket/scripted", policy="toy_math_student"),
            log_dir=str(tmp_path),
            display="none",
        )
