"""Rule-written schemata: distil from a labelled failure, merge two, refine a hot one by replay."""

from __future__ import annotations

from docket.benchmarks.correct.simulator.schema import (
    Labelled,
    earliest,
    merge_schemata,
    replay_schema,
    rule_schema,
    schema_checks,
)

QUESTION = "A shop sold 12 boxes of 5 pens. How many pens?"
STEPS = (
    ("Planner", "Plan:\n1. Calculator: pens = 12 * 5"),
    ("Orchestrator", "Next speaker: Calculator. Compute 12 * 5, store as pens."),
    ("Calculator", "calculate('12 * 5')\n= 61"),
    ("Orchestrator", "All items done. Verifier: confirm answer 61."),
)


def test_rule_schema_names_the_checks_that_expose_the_labelled_step() -> None:
    text = rule_schema(QUESTION, STEPS, "Calculator", 2, "12 * 5 is 60")
    lines = text.splitlines()
    assert lines[0] == (
        "Error Signatures: Calculator in a calculation at step 2 of 4: \"calculate('N * N')\". "
        "Exposed by: arithmetic."
    )
    assert lines[1].startswith("Context Analysis: It follows Orchestrator (a dispatch)")
    assert lines[2].endswith("Checks: arithmetic (1).")
    assert lines[3] == "Label: Agent Name: Calculator; Step Number: 2; Reason: 12 * 5 is 60"
    assert schema_checks(text) == {"arithmetic": 1.0}
    plan = rule_schema(QUESTION, STEPS, "Planner", 0, "fine plan")
    assert "Exposed by: no rule check" in plan and schema_checks(plan) == {}


def test_merging_keeps_both_signatures_checks_and_labels() -> None:
    one = rule_schema(QUESTION, STEPS, "Calculator", 2, "slip")
    two = one.replace("arithmetic (1)", "tool_value (1)").replace(
        "Step Number: 2", "Step Number: 7"
    )
    merged = merge_schemata(one, two)
    assert schema_checks(merged) == {"arithmetic": 1.0, "tool_value": 1.0}
    assert "Seen in 2 failures." in merged
    assert "Label: Agent Name: Calculator; Step Number: 2" in merged
    assert "Also labelled: Agent Name: Calculator; Step Number: 7" in merged
    again = merge_schemata(merged, one)
    assert schema_checks(again) == {"arithmetic": 2.0, "tool_value": 1.0}
    assert "Seen in 3 failures." in again


def test_replay_scores_checks_on_their_failures_and_drops_misleading_ones() -> None:
    # Both failures have their slip at step 2. In the second, the plan also asks for a number
    # the problem does not mention (7), so plan_vs_question flags an innocent step 0: it
    # misleads once and never finds the label.
    good = Labelled(QUESTION, STEPS, 2)
    misleading = (("Planner", "Plan:\n1. Calculator: pens = 12 * 7"), *STEPS[1:])
    bad = Labelled(QUESTION, misleading, 2)
    assert earliest(QUESTION, misleading, ["plan_vs_question"]) == 0
    text = merge_schemata(
        rule_schema(QUESTION, STEPS, "Calculator", 2, "slip"),
        rule_schema(QUESTION, STEPS, "Calculator", 2, "slip").replace(
            "arithmetic (1)", "plan_vs_question (1)"
        ),
    )
    assert schema_checks(text) == {"arithmetic": 1.0, "plan_vs_question": 1.0}
    refined = replay_schema(text, [good, bad])
    assert "Checks: arithmetic (replay 2/2). Dropped after replay (misleading): " in refined
    assert "plan_vs_question." in refined
    assert schema_checks(refined) == {"arithmetic": 1.0}
    assert replay_schema(text, []) == text
