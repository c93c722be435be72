"""Oracle-free step checks: each error type is caught at its step, clean runs are not flagged."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from docket.benchmarks.correct.simulator.checks import CHECKS, QUESTIONS, flags, names_in, safe_eval
from docket.benchmarks.correct.simulator.generate import confirm, make_trajectory, sites_by_kind
from docket.benchmarks.correct.simulator.simulator import Fault, run
from docket.benchmarks.correct.simulator.tasks import make_task
from docket.benchmarks.correct.simulator.taxonomy import ERROR_TYPES

#: The checks that expose each error type at its own step.
EXPOSED_BY = {
    "wrong_tool_argument": {"tool_entity"},
    "hallucinated_fact": {"tool_value"},
    "misread_tool_output": {"tool_value"},
    "stale_information": {"tool_value"},
    "calculation_slip": {"arithmetic"},
    "ignored_feedback": {"forwarded_value", "final_value"},
    "dropped_plan_step": {"plan_coverage", "plan_vs_question"},
    "misread_instruction": {"plan_vs_question", "plan_coverage"},
    "premature_termination": {"completion"},
    "role_violation": {"delegation"},
}


def _steps(turns: list) -> list[tuple[str, str]]:
    return [(t.name, t.content) for t in turns]


def test_every_check_has_a_question() -> None:
    assert set(QUESTIONS) == set(CHECKS) and set(EXPOSED_BY) == set(ERROR_TYPES)


@pytest.mark.parametrize("kind", ERROR_TYPES)
def test_each_error_type_is_flagged_at_its_step_and_nothing_before(kind: str) -> None:
    rng = random.Random(f"checks:{kind}")
    caught = tried = 0
    while tried < 12:
        task = make_task(rng, "medium")
        sites = sites_by_kind(run(task)).get(kind, [])
        if not sites:
            continue
        verdict = confirm(task, Fault(kind, rng.choice(sites), seed=rng.randrange(1000)))
        if not verdict.ok:
            continue
        tried += 1
        found = flags(task.question, _steps(verdict.faulty.turns))
        step = next(
            i
            for i, (a, b) in enumerate(zip(verdict.clean.turns, verdict.faulty.turns, strict=False))
            if a != b
        )
        assert not any(found[:step]), (kind, found[:step])
        caught += bool(found[step] & EXPOSED_BY[kind])
    # misread plans that swap + and - or a literal for another of the problem's numbers (the
    # "has 3 parts" count included), a role violation that reassigns a variable
    # and a dropped item whose number the plan still mentions elsewhere are beyond these rules
    assert caught >= {"misread_instruction": 4, "role_violation": 6, "dropped_plan_step": 10}.get(
        kind, 12
    )


def test_clean_runs_are_not_flagged_even_with_self_corrected_slips() -> None:
    rng = random.Random(1)
    for tier in ("short", "medium", "long"):
        for _ in range(4):
            task = replace(make_task(rng, tier), density=1.0)
            clean = run(task)
            assert not any(flags(task.question, _steps(clean.turns))), tier


def test_the_checks_find_most_generated_mistakes_first() -> None:
    # The reasoning ceiling: reading values finds nearly every mistake (the surface baseline,
    # which does not read them, stays near blaming step 0).
    rows = [make_trajectory(17, i) for i in range(60)]
    first = 0
    for t in rows:
        found = flags(t.question, [(s.name, s.content) for s in t.history])
        first += next((i for i, f in enumerate(found) if f), 0) == t.mistake_step
    assert first / len(rows) >= 0.85


def test_safe_eval_and_names() -> None:
    assert safe_eval("12 * 5 - abs(3 - 10)") == 53
    assert safe_eval("3 + 4 + 5") == 12
    assert safe_eval("__import__('os')") is None
    assert safe_eval("2 ** 3") is None
    assert names_in("Ada Brennan was born in Ashford, not Ashton.") == [
        "Ada Brennan",
        "Ashford",
        "Ashton",
    ]


@pytest.mark.parametrize(
    "steps",
    [
        [],
        [("Planner", "")],
        [("WebSurfer", "search_kb(entity='x', attribute='y')\n{not json\nvalue 3")],
        [("FileSurfer", "read_table('sales.csv', region='North')\nyear,region\n2024")],
        [("Calculator", "calculate('1 +')\n= 2")],
        [("Orchestrator", "Next speaker: Calculator. x = 5"), ("Orchestrator", "Progress: x = 6.")],
        [("Orchestrator", "FINAL ANSWER: 3"), ("Verifier", "I confirm 4.")],
    ],
)
def test_malformed_conversations_are_read_without_errors(steps: list[tuple[str, str]]) -> None:
    found = flags("What is 2 + 3?", steps)
    assert len(found) == len(steps) and all(f <= set(CHECKS) for f in found)
