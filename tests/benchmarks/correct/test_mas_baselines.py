"""The no-reasoning baselines learn what they can see: words and positions."""

from __future__ import annotations

import random

import pytest

from docket.benchmarks.correct.simulator.baselines import KeywordRule, SurfaceBaseline


def _toy(rng: random.Random, giveaway: bool) -> tuple[list[tuple[str, str]], int]:
    length = rng.randint(6, 12)
    steps = [
        (rng.choice(["A", "B", "C"]), f"step about {rng.choice(['x', 'y', 'z'])} things")
        for _ in range(length)
    ]
    mistake = rng.randrange(length)
    if giveaway:
        steps[mistake] = (steps[mistake][0], "oops wrong value here")
    return steps, mistake


def test_the_surface_baseline_finds_a_give_away_phrase_and_a_position_rule() -> None:
    rng = random.Random(0)
    train = [_toy(rng, True) for _ in range(200)]
    test = [_toy(rng, True) for _ in range(50)]
    model = SurfaceBaseline().fit([s for s, _ in train], [m for _, m in train])
    assert sum(model.predict(s) == m for s, m in test) == 50
    rule = KeywordRule().fit([s for s, _ in train], [m for _, m in train])
    assert "oops" in rule.phrases
    assert sum(rule.predict(s) == m for s, m in test) == 50
    # the mistake is always the last step: positions alone give it away
    last = [(s, len(s) - 1) for s, _ in (_toy(rng, False) for _ in range(200))]
    model = SurfaceBaseline().fit([s for s, _ in last], [m for _, m in last])
    assert model.predict([("A", "step about x things")] * 9) == 8


def test_without_signal_the_keyword_rule_blames_step_zero() -> None:
    rng = random.Random(1)
    train = [_toy(rng, False) for _ in range(100)]
    rule = KeywordRule().fit([s for s, _ in train], [m for _, m in train])
    assert rule.phrases == ()
    assert rule.predict([("A", "step about x things")] * 5) == 0


def test_bad_training_input_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="at least one training trajectory"):
        SurfaceBaseline().fit([], [])
    with pytest.raises(ValueError, match="with and without a mistake"):
        SurfaceBaseline().fit([[("A", "x")]], [0])
    with pytest.raises(ValueError, match="fit the surface baseline first"):
        SurfaceBaseline().predict([("A", "x")])
