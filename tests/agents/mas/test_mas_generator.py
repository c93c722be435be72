"""The MAS simulator, error injection and counterfactual replay, on every error type."""

from __future__ import annotations

import random

import pytest
from docket.agents.mas.generate import confirm, generate_split, make_trajectory, sites_by_kind
from docket.agents.mas.records import parse_record, to_json
from docket.agents.mas.simulator import Calc, Fault, TaskSpec, run
from docket.agents.mas.tasks import FAMILIES
from docket.agents.mas.taxonomy import ERROR_TYPES, TAXONOMY


def _task_hosting(kind: str) -> tuple[TaskSpec, list[int]]:
    """The first generated task (any family) whose clean run can host `kind`."""
    rng = random.Random(kind)
    for _ in range(200):
        for family in FAMILIES.values():
            task = family(rng)
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


def test_a_fault_that_changes_nothing_is_rejected_by_the_replay() -> None:
    # Stopping right before "add 0" answers with the right value: no failure to attribute.
    task = TaskSpec(
        "arithmetic",
        "Add 3 and 4, then add 0.",
        (Calc("x", "add", (3, 4)), Calc("x", "add", ("$x", 0))),
        "x",
    )
    dispatch_of_second_op = 3
    verdict = confirm(task, Fault("premature_termination", dispatch_of_second_op))
    assert not verdict.ok
    assert verdict.problems == ("the faulty run still answers correctly",)


def test_a_fault_placed_where_it_cannot_happen_raises() -> None:
    task = TaskSpec("arithmetic", "Add 3 and 4.", (Calc("x", "add", (3, 4)),), "x")
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
    assert {t.metadata["error_type"] for t in first} == set(ERROR_TYPES)


def test_split_assignment_uses_both_halves() -> None:
    splits = {t.metadata["split"] for t in generate_split(12, seed=3)}
    assert splits == {"train", "test"}
