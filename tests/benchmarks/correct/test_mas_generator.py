"""The MAS simulator, error injection and counterfactual replay, on every error type."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest

from docket.benchmarks.correct.simulator.checks import names_in
from docket.benchmarks.correct.simulator.generate import (
    confirm,
    generate_split,
    make_trajectory,
    site_weights,
    sites_by_kind,
)
from docket.benchmarks.correct.simulator.records import parse_record, to_json
from docket.benchmarks.correct.simulator.simulator import Calc, Fault, TaskSpec, run
from docket.benchmarks.correct.simulator.tasks import FAMILIES, length_tier, make_task
from docket.benchmarks.correct.simulator.taxonomy import ERROR_TYPES, TAXONOMY
from docket.benchmarks.correct.simulator.world import REGIONS


def _task_hosting(kind: str) -> tuple[TaskSpec, list[int]]:
    """The first generated task (any family, medium length) whose clean run can host `kind`."""
    rng = random.Random(kind)
    for _ in range(200):
        task = make_task(rng, "medium")
        sites = sites_by_kind(run(task))
        if kind in sites:
            return task, sites[kind]
    raise AssertionError(f"no task hosts {kind}")


def test_taxonomy_has_at_least_eight_documented_types() -> None:
    assert len(ERROR_TYPES) >= 8 and len(set(ERROR_TYPES)) == len(ERROR_TYPES)
    assert all(e.description and e.source and e.sites for e in TAXONOMY)


@pytest.mark.parametrize("kind", ERROR_TYPES)
def test_counterfactual_replay_confirms_each_error_type(kind: str) -> None:
    task, steps = _task_hosting(kind)
    confirmed = 0
    for step in steps:
        fault = Fault(kind, step, seed=7)
        verdict = confirm(task, fault)
        if not verdict.ok:  # a manifestation may leave the answer unchanged: replay says so
            assert verdict.problems == ("the faulty run still answers correctly",)
            continue
        confirmed += 1
        clean, faulty = verdict.clean, verdict.faulty
        assert faulty.answer != clean.answer  # fails with the error ...
        assert clean.turns[:step] == faulty.turns[:step]  # ... identical before step k ...
        assert clean.turns[step] != faulty.turns[step]  # ... and step k is where it starts
        assert faulty.reason  # the injector explains the mistake
    assert confirmed >= 1


def _shape(text: str) -> list[str]:
    """The words of a turn with its values masked: numbers, names, regions, quarters, fields."""
    for name in names_in(text):
        text = text.replace(name, "NAME")
    for region in REGIONS:
        text = re.sub(rf"\b{region}\b", "REGION", text)
    text = re.sub(r"\bQ[1-4]\b", "QUARTER", text)
    text = re.sub(r"attribute='[a-z_0-9]+'", "attribute=ATTRIBUTE", text)  # a wrong call's field
    return re.findall(r"[A-Za-z_]+", re.sub(r"\d+", " ", text))


@pytest.mark.parametrize(
    "kind",
    [
        "wrong_tool_argument",
        "hallucinated_fact",
        "misread_tool_output",
        "stale_information",
        "calculation_slip",
        "ignored_feedback",
        "role_violation",  # the Orchestrator's own calculation, right in clean runs
    ],
)
def test_a_fault_is_silent_the_faulty_turn_reads_like_the_clean_one(kind: str) -> None:
    # Same template, same words: only the values (numbers, names) differ.
    task, steps = _task_hosting(kind)
    for step in steps:
        verdict = confirm(task, Fault(kind, step, seed=3))
        if verdict.ok:
            clean = verdict.clean.turns[step].content
            faulty = verdict.faulty.turns[step].content
            assert clean != faulty
            assert _shape(clean) == _shape(faulty), (clean, faulty)
            assert verdict.clean.kinds[step] == verdict.faulty.kinds[step]


def test_a_fault_that_changes_nothing_is_rejected_by_the_replay() -> None:
    # Stopping right before "add 0" answers with the right value: no failure to attribute.
    task = TaskSpec(
        "arithmetic",
        "Add 3 and 4, then add 0.",
        (Calc("x", "add", (3, 4)), Calc("x", "add", ("$x", 0))),
        "x",
        density=0.0,
    )
    assert run(task).kinds[:4] == ["plan", "dispatch", "calc", "dispatch"]
    verdict = confirm(task, Fault("premature_termination", 3))
    assert not verdict.ok
    assert verdict.problems == ("the faulty run still answers correctly",)


def test_a_fault_placed_where_it_cannot_happen_raises() -> None:
    task = TaskSpec("arithmetic", "Add 3 and 4.", (Calc("x", "add", (3, 4)),), "x", density=0.0)
    with pytest.raises(ValueError, match="calculation_slip cannot happen at step 0"):
        run(task, Fault("calculation_slip", 0))


def test_generation_is_reproducible_and_labels_point_at_the_history() -> None:
    first = [make_trajectory(11, i) for i in range(40)]
    assert first == [make_trajectory(11, i) for i in range(40)]
    for trajectory in first:
        step = trajectory.history[trajectory.mistake_step]
        assert step.name == trajectory.mistake_agent
        assert trajectory.metadata["final_answer"] != trajectory.ground_truth
        assert parse_record(to_json(trajectory), "memory", 0) == trajectory
        assert trajectory.metadata["delay"] >= 1
    assert len({t.metadata["error_type"] for t in first}) >= 7


def test_the_length_tiers_and_the_long_subset() -> None:
    # the tier asked for is the clean run's; a premature termination may end the failed run in
    # a shorter tier, and `tier` records the failed run's
    bounds = {"short": (8, 15), "medium": (16, 59), "long": (60, 10**6)}
    for tier, (low, high) in bounds.items():
        for t in generate_split(6, seed=5, length=tier):
            n = len(t.history)
            assert t.metadata["tier"] == length_tier(n) and n >= 8
            if t.metadata["error_type"] != "premature_termination":
                assert low <= n <= high, (tier, n)


def test_fault_sites_make_every_step_at_most_as_likely_as_step_zero() -> None:
    # Step 0 (the plan) always weighs 1 and no step weighs more: blaming step 0 is as good as
    # any guess made from positions and turn kinds.
    rng = random.Random(4)
    for tier in ("short", "medium", "long"):
        for _ in range(5):
            clean = run(make_task(rng, tier))
            per_step: dict[int, float] = {}
            for step, _, weight in site_weights(clean):
                per_step[step] = per_step.get(step, 0.0) + weight
            assert per_step[0] == pytest.approx(1.0)
            assert max(per_step.values()) == pytest.approx(1.0)


def test_distractors_and_self_corrected_slips_are_never_the_label() -> None:
    task = replace(make_task(random.Random(9), "long"), density=1.0)
    clean = run(task)
    assert {"recheck", "ledger", "notes", "recheck_fix"} & set(clean.kinds)
    for index, kind in enumerate(clean.kinds):
        if kind in ("recheck", "ledger", "notes", "recheck_fix", "confirm", "closing"):
            assert clean.sites[index] == []
        if kind == "recheck_fix":  # the slip just before it is corrected: not hostable
            assert clean.sites[index - 1] == []
    assert clean.answer is not None


def test_split_assignment_uses_both_halves() -> None:
    splits = {t.metadata["split"] for t in generate_split(12, seed=3)}
    assert splits == {"train", "test"}


def test_every_family_fits_the_short_tier() -> None:
    rng = random.Random(2)
    for family in FAMILIES:
        task = make_task(rng, "short", family)
        assert task.family == family and 8 <= len(run(task).turns) <= 15
