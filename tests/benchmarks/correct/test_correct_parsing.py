"""Answer parsing, schema sections, agent normalisation and per-sample score values."""

from __future__ import annotations

import pytest

from docket.benchmarks.correct.dataset import load_trajectories
from docket.benchmarks.correct.prompts import (
    Localisation,
    all_at_once_prompt,
    distill_prompt,
    half_prompt,
    normalise_agent,
    parse_half,
    parse_localisation,
    parse_schema,
    parse_yes_no,
    step_prompt,
)
from docket.benchmarks.correct.reference import conversation, rule_schema
from docket.benchmarks.correct.scorer import localisation_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Agent Name: WebSurfer\nStep Number: 07\nReason for Mistake: x", ("WebSurfer", 7)),
        ("**Agent Name:** Web Surfer\n**Step Number:** 4", ("Web Surfer", 4)),
        ("Agent Name: `Coder` (the coder)\nStep Number: Step 3", ("Coder", 3)),
        ("The planner erred.", (None, None)),
        ("Agent Name: Planner", ("Planner", None)),
    ],
)
def test_parse_localisation(text: str, expected: tuple[str | None, int | None]) -> None:
    assert parse_localisation(text) == Localisation(*expected)


def test_parse_yes_no_and_half() -> None:
    assert [parse_yes_no(t) for t in ("Yes, it is", "**No**.", "Maybe")] == [True, False, None]
    assert [parse_half(t) for t in ("Lower half", "the UPPER half", "neither")] == [
        "lower",
        "upper",
        None,
    ]


@pytest.mark.parametrize(
    ("answer", "half"),
    [
        ("Upper half\nThe lower steps are fine.", "upper"),  # the first line decides
        ("The lower half contains the mistake. The upper half is fine.", "lower"),
        # an echo of the question names both halves in its first sentence: no answer
        ("Which half contains it: the lower half (steps 0-1) or the upper half", None),
        ("The decisive mistake lies in steps 0 to 3. Lower or upper half?", None),
        ("The lower half is the lower half of the upper half.", None),
        ("\n\n  lower half.", "lower"),
        ("", None),
    ],
)
def test_parse_half_needs_one_half_named_on_the_first_line(answer: str, half: str | None) -> None:
    assert parse_half(answer) == half


def test_parse_schema_sections_in_markdown() -> None:
    text = "## Error Signatures\nA\n**Context Analysis:** B\nDetection Heuristics: - C"
    assert parse_schema(text) == {
        "Error Signatures": "A",
        "Context Analysis": "B",
        "Detection Heuristics": "- C",
    }
    assert parse_schema("free text") == dict.fromkeys(parse_schema(""), "")


def test_score_values_exact() -> None:
    assert localisation_value("web surfer", 5, "WebSurfer", 4, tolerance=1) == {
        "step": 0.0,
        "agent": 1.0,
        "step_within": 1.0,
        "joint": 0.0,
        "answered": 1.0,
    }
    assert list(localisation_value("a", 1, "a", 1, 0)) == [
        "step",
        "agent",
        "step_within",
        "joint",
        "answered",
    ]


@pytest.mark.parametrize(
    ("said", "gold"),
    [
        ("The Orchestrator", "Orchestrator"),
        ("Orchestrator (thought)", "Orchestrator"),
        ("Orchestrator (-> WebSurfer)", "orchestrator"),
        ("ORCHESTRATOR agent", "Orchestrator"),
        ("Web Surfer", "WebSurfer"),
        ("web_surfer", "WebSurfer"),
        ("a Verification Expert", "Verification_Expert"),
        ("Computer terminal", "ComputerTerminal"),
        ("computer", "Computer_terminal"),
    ],
)
def test_agent_names_are_normalised(said: str, gold: str) -> None:
    assert normalise_agent(said) == normalise_agent(gold)
    assert localisation_value(said, 3, gold, 3, tolerance=0)["joint"] == 1.0


def test_different_agents_stay_different() -> None:
    assert normalise_agent("Orchestrator") != normalise_agent("WebSurfer")
    assert normalise_agent("Theodore") == "theodore"  # an article is a whole word only
    assert localisation_value(None, 4, "WebSurfer", 4, tolerance=0)["answered"] == 0.0
    assert localisation_value("Coder", 2, "WebSurfer", 4, tolerance=1)["step_within"] == 0.0


def test_prompts_render_the_numbered_log_the_policies_read() -> None:
    trajectory = load_trajectories()[0]
    steps = [(s.name, s.content.strip()) for s in trajectory.history]
    assert conversation(all_at_once_prompt(trajectory, with_gt=False)) == steps
    assert conversation(step_prompt(trajectory, 1, with_gt=False)) == steps[:2]
    assert "lower half (steps 0-2)" in half_prompt(trajectory, 0, 2, 5, with_gt=False)
    assert trajectory.ground_truth in all_at_once_prompt(trajectory, with_gt=True)
    assert "correct answer" not in all_at_once_prompt(trajectory, with_gt=False)
    schema = rule_schema(
        trajectory.question, steps, trajectory.mistake_agent, trajectory.mistake_step, "r 12"
    )
    assert all(parse_schema(schema).values())
    assert "Mistake step:" in distill_prompt(trajectory)
