"""A task's chance row (task metadata `chance`) reaches the leaderboard as a line and a sentence."""

from __future__ import annotations

import math

from docket.reports.leaderboard import chance_text
from docket.reports.plots import headline_plot
from docket.reports.runs import chance_of


def test_chance_is_read_from_task_metadata_and_bad_values_are_dropped() -> None:
    entry = {"value": 0.132, "attacker": "field_prior", "source": "results/x.json"}
    assert chance_of({"chance": entry}) == entry
    assert chance_of({"chance": {"value": 0.2}}) == {"value": 0.2, "attacker": ""}
    assert chance_of({"chance": {"value": math.nan}}) is None
    assert chance_of({"chance": {"value": "high"}}) is None
    assert chance_of({"chance": {"attack": "training-majority label"}}) is None  # no value
    assert chance_of({}) is None


def test_the_leaderboard_names_the_chance_row_and_draws_it() -> None:
    chance = {"value": 0.132, "attacker": "field_prior", "source": "results/x.json"}
    assert chance_text(chance) == (
        "Chance row (field_prior): 0.132, from `results/x.json`; rank rows against it, "
        "not against 0."
    )
    drawn = headline_plot("t", ["a"], [0.5], [0.4], [0.6], "higher", chance=0.132)
    assert 'id="data-chance"' in drawn
    assert 'id="data-chance"' not in headline_plot("t", ["a"], [0.5], [0.4], [0.6], "higher")
