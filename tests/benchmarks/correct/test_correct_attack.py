"""The learned surface attacker: it finds a planted give-away, and stays near chance on the data."""

from __future__ import annotations

from dataclasses import replace

import pytest

from docket.benchmarks.correct.attack import (
    StackedAttacker,
    SurfaceAttacker,
    chance,
    evaluate,
    step_features,
)
from docket.benchmarks.correct.dataset import load_trajectories, select
from docket.benchmarks.correct.simulator.records import Step, Trajectory

#: How far above chance (the best position policy on the test split) the attacker may score:
#: issue 29's 0.05. On 3-C it is 0.021 above chance (0.173 vs 0.152, 100 or 200 rounds;
#: listing.yaml), down from 0.064 on 3-B and 0.086 on 3-A.
MARGIN = 0.05


def _planted(trajectory: Trajectory) -> Trajectory:
    """The trajectory with a number that no other step holds appended to its mistake step."""
    history = list(trajectory.history)
    mistake = history[trajectory.mistake_step]
    history[trajectory.mistake_step] = Step(mistake.name, mistake.role, mistake.content + " 31337")
    return replace(trajectory, history=tuple(history))


def test_chance_is_the_best_position_policy_on_the_split() -> None:
    test = select(load_trajectories(), "test")[:200]
    base = chance(test)
    first = sum(t.mistake_step == 0 for t in test) / len(test)
    last = sum(t.mistake_step == len(t.history) - 1 for t in test) / len(test)
    assert base["step"] >= max(first, last)
    assert base["step"] < 0.3  # no position gives the mistake away


def test_the_attacker_finds_a_planted_number_identity_leak() -> None:
    # the control: a mistake step that alone holds a new, never reused number is found
    everything = load_trajectories()
    train = [_planted(t) for t in select(everything, "train")[:150]]
    test = [_planted(t) for t in select(everything, "test")[:150]]
    scored = evaluate(SurfaceAttacker(max_iter=50).fit(train).predict_all(test), test)
    assert scored["step"] >= 0.9 and scored["agent"] >= 0.9


def test_the_attacker_trained_on_the_full_train_split_stays_near_chance() -> None:
    """Issue 29 item 1: surface features (number identity included) do not find the mistake.

    Trained on every train trajectory, scored on every test trajectory (100 boosting rounds
    instead of 200 to keep the test fast; 200 rounds score the same on 3-C).
    """
    everything = load_trajectories()
    train, test = select(everything, "train"), select(everything, "test")
    attacker = SurfaceAttacker(max_iter=100).fit(train)
    scored, base = evaluate(attacker.predict_all(test), test), chance(test)
    assert scored["step"] <= base["step"] + MARGIN, (scored, base)
    assert scored["agent"] <= base["agent"] + 0.15, (scored, base)


def test_features_never_read_the_labels() -> None:
    trajectory = select(load_trajectories(), "test")[0]
    moved = replace(trajectory, mistake_step=0, mistake_agent="Nobody", mistake_reason="x")
    assert step_features(moved) == step_features(trajectory)


def test_bad_input_gets_one_clear_line() -> None:
    with pytest.raises(ValueError, match="at least one training trajectory"):
        SurfaceAttacker().fit([])
    with pytest.raises(ValueError, match="fit the surface attacker first"):
        SurfaceAttacker().predict(select(load_trajectories(), "test")[0])


def test_a_stack_of_tfidf_and_surface_features_stays_near_chance() -> None:
    """The TF-IDF baseline's scores (cross-fitted on three folds of the train split) fed into
    the gradient-boosted surface attacker (`attack.StackedAttacker`); the README's attacker
    table (`results/attackers.json`) gives its score on the whole split."""
    everything = load_trajectories()
    train, test = select(everything, "train"), select(everything, "test")
    attacker = StackedAttacker(max_iter=100).fit(train)
    scored, base = evaluate(attacker.predict_all(test), test), chance(test)
    assert scored["step"] <= base["step"] + MARGIN, (scored, base)
