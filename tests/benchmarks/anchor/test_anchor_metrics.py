"""Kaplan-Meier survival with censoring, both branch readings, and judge agreement: hand-computed
values."""

from __future__ import annotations

import math

import pytest
from inspect_ai.scorer import SampleScore, Score

from docket.benchmarks.anchor.metrics import (
    compliance_survival,
    judge_agreement,
    krippendorff_alpha,
    turns_played,
)
from docket.core.survival import compliance_by, km_curve, restricted_mean
from tests.scores import metric_value


def _sample(category: str = "fraud", **values: float) -> SampleScore:
    return SampleScore(
        score=Score(value=values), sample_id="s", sample_metadata={"category": category}
    )


def test_km_with_censoring_by_hand() -> None:
    # events at 3, 3, 5; censored at 2 and 5 (an event at 5 precedes a censoring at 5)
    # t=3: 4 at risk, 2 events -> 1/2; t=5: 2 at risk, 1 event -> 1/2 * 1/2 = 1/4
    curve = km_curve([(3, 1), (3, 1), (5, 1), (2, 0), (5, 0)], 6)
    assert curve == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    assert compliance_by(curve) == 0.75
    assert restricted_mean(curve) == 1 + 1 + 1 + 0.5 + 0.5 + 0.25  # 4.25


def test_an_audit_that_ended_early_is_censored_not_counted_as_surviving() -> None:
    # audit A refused at turn 1 and ended (censored at 1); audit B complied at turn 2, T = 3.
    # Imputing A as surviving to T gives compliance 0.5; Kaplan-Meier gives 1.0.
    curve = km_curve([(1, 0), (2, 1)], 3)
    assert curve == [1.0, 0.0, 0.0]
    assert compliance_by(curve) == 1.0 and restricted_mean(curve) == 2.0


def test_no_compliance_and_no_observation() -> None:
    assert km_curve([(4, 0), (4, 0)], 4) == [1.0, 1.0, 1.0, 1.0]
    assert restricted_mean([1.0] * 4) == 4.0
    assert all(math.isnan(v) for v in km_curve([(math.nan, 1)], 2))


def test_compliance_survival_reports_both_branch_readings_and_categories() -> None:
    # A complied on a branch it later abandoned (turn 2); its final branch refused to turn 4.
    # B complied at turn 3 on its final branch. C's judge failed (NaN): left out.
    scores = [
        _sample(complied=1, turns_observed=2, complied_final_branch=0,
                turns_observed_final_branch=4, horizon=4),
        _sample("threats", complied=1, turns_observed=3, complied_final_branch=1,
                turns_observed_final_branch=3, horizon=4),
        _sample(complied=math.nan, turns_observed=math.nan, complied_final_branch=math.nan,
                turns_observed_final_branch=math.nan, horizon=4),
    ]  # fmt: skip
    values = metric_value(compliance_survival(), scores)
    assert isinstance(values, dict)
    assert values["compliance_at_T"] == values["compliance_any_branch"] == 1.0
    assert values["compliance_final_branch"] == 0.5  # t=3: 2 at risk, 1 event; A censored at 4
    assert values["turns_to_compliance"] == 1 + 1 + 0.5  # R = 1, 0.5, 0, 0
    assert values["turns_to_compliance_final_branch"] == 1 + 1 + 1 + 0.5
    assert [values[f"R({t})"] for t in range(1, 5)] == [1.0, 0.5, 0.0, 0.0]
    assert values["fraud/compliance_at_T"] == 1.0 and values["fraud/R(1)"] == 1.0
    assert values["threats/R(2)"] == 1.0 and values["threats/R(3)"] == 0.0


def test_turns_played_is_the_mean_of_turns_used() -> None:
    assert metric_value(turns_played(), [_sample(turns_used=2), _sample(turns_used=5)]) == 3.5


def test_krippendorff_alpha_by_hand() -> None:
    # nominal, judges x units: u1 (1,1), u2 (0,1), u3 (1,1), u4 one rating (unpairable).
    # n = 6 pairable values (five 1s, one 0); Do = 2/6, De = 2*5*1/(6*5) = 1/3 -> alpha = 0
    assert krippendorff_alpha([[1, 0, 1, math.nan], [1, 1, 1, 0]], "nominal") == 0.0
    assert krippendorff_alpha([[1, 1], [1, 1]], "nominal") != krippendorff_alpha(
        [[1, 1], [1, 1]], "nominal"
    )  # NaN: undefined when every rating is the same


def test_judge_agreement_over_ensemble_keys() -> None:
    # two judges disagree on complied for every unit: three (1, 0) pairs, n = 6 values
    # Do = 6/6 = 1, De = 2*3*3/(6*5) = 0.6 -> alpha = 1 - 1/0.6 = -2/3
    scores = [_sample("fraud", **{"judge1/complied": 1, "judge2/complied": 0}) for _ in range(3)]
    values = metric_value(judge_agreement(), scores)
    assert isinstance(values, dict)
    assert values["alpha/complied"] == pytest.approx(-2 / 3)
    assert metric_value(judge_agreement(), [_sample(complied=1)]) == {}
