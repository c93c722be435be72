"""Known-answer tests of the report statistics: CIs, McNemar, Holm, pairwise ranks, survival."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from docket.reports import survival
from docket.reports.stats import (
    Z95,
    holm,
    mcnemar_p,
    mean_interval,
    paired_bootstrap_p,
    paired_mean_test,
    pairwise_ranks,
    wilson_interval,
)


def test_wilson_all_successes_has_closed_form_lower_bound() -> None:
    ci = wilson_interval(3, 3)
    assert ci.low == pytest.approx(3 / (3 + Z95**2))
    assert ci.high == pytest.approx(1.0)


def test_wilson_half_matches_textbook_value() -> None:
    z = Z95
    half = z * math.sqrt(0.0025 + z * z / 40000) / (1 + z * z / 100)
    ci = wilson_interval(50, 100)
    assert (ci.low, ci.high) == pytest.approx((0.5 - half, 0.5 + half))


def test_no_ci_for_one_sample_or_constant_continuous_scores() -> None:
    assert mean_interval([1.0]) is None
    assert mean_interval([0.4, 0.4, 0.4]) is None  # a bootstrap would claim zero width
    constant_binary = mean_interval([1.0, 1.0, 1.0])  # Wilson stays honest at 3/3
    assert constant_binary is not None and constant_binary.method == "wilson"
    assert constant_binary.low == pytest.approx(3 / (3 + Z95**2))


def test_bootstrap_ci_of_a_large_continuous_sample_matches_the_normal_interval() -> None:
    values = list(np.random.default_rng(1).uniform(0, 1, 400))
    ci = mean_interval(values)
    assert ci is not None and ci.method == "bootstrap"
    mean, se = float(np.mean(values)), float(np.std(values, ddof=1)) / math.sqrt(400)
    assert ci.low == pytest.approx(mean - Z95 * se, abs=0.004)
    assert ci.high == pytest.approx(mean + Z95 * se, abs=0.004)


def test_mcnemar_exact_values() -> None:
    ones = {str(i): 1.0 for i in range(5)}
    zeros = {str(i): 0.0 for i in range(5)}
    assert mcnemar_p(ones, zeros, "greater") == pytest.approx(1 / 32)
    assert mcnemar_p(ones, zeros, "two-sided") == pytest.approx(1 / 16)
    three = {k: ones[k] for k in "012"}
    assert mcnemar_p(three, {k: 0.0 for k in three}, "two-sided") == pytest.approx(0.25)
    assert mcnemar_p(ones, dict(ones)) == 1.0  # no discordant pair
    ten = {str(i): 1.0 for i in range(10)}
    assert mcnemar_p(ten, {k: 0.0 for k in ten}, "two-sided") == pytest.approx(2 * 0.5**10)


def test_paired_test_picks_mcnemar_for_binary_and_bootstrap_otherwise() -> None:
    a = {str(i): 1.0 for i in range(20)}
    b = {**a, "0": 0.0}
    assert paired_mean_test(a, b) == ("McNemar exact", 0.5, 20)  # one flip: p = 1/2
    name, p, n = paired_mean_test({**a, "1": 0.5}, b)
    assert (name, n) == ("paired bootstrap", 20)
    assert p == pytest.approx(paired_bootstrap_p({**a, "1": 0.5}, b)[0])


def test_paired_bootstrap_extremes() -> None:
    ids = {str(i): 1.0 for i in range(10)}
    assert paired_bootstrap_p(ids, {k: 0.0 for k in ids}) == (0.0, 10)
    assert paired_bootstrap_p(ids, dict(ids)) == (1.0, 10)
    assert paired_bootstrap_p(ids, dict(ids), "two-sided") == (1.0, 10)


def test_holm_adjusts_step_down_and_stays_monotone() -> None:
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_small_n_row_is_never_ranked_above_a_row_it_does_not_beat() -> None:
    # rows: oracle 1.0 (n=20), comply 0.0 (n=20), smollm2 0.0 (n=1). Oracle beats comply;
    # smollm2 beats no one and no one can beat it: it still ranks level with comply, not "=1".
    ranks = pairwise_ranks(3, {(0, 1)}, [False, False, True])
    assert ranks == ["1", "=2", "=2"]
    # without the small-n rule it would have been first with the oracle
    assert pairwise_ranks(3, {(0, 1)}, [False, False, False]) == ["=1", "2", "=1"]


def test_small_rows_raised_together_share_the_first_place() -> None:
    # 0 beats 2 and 3, 1 beats nobody, nobody beats 1: all small, so 0 may not sit above 1 and 1
    # may not sit above 2 or 3 -- everyone ties, and the tie is "=1", not "=2"
    beats = {(0, 2), (0, 3)}
    assert pairwise_ranks(4, beats, [True] * 4) == ["=1", "=1", "=1", "=1"]
    assert pairwise_ranks(4, beats, [False] * 4) == ["=1", "=1", "=2", "=2"]


def test_ranks_without_significant_pairs_tie() -> None:
    assert pairwise_ranks(2, set(), [True, True]) == ["=1", "=1"]
    assert pairwise_ranks(3, {(0, 1), (0, 2), (1, 2)}, [False] * 3) == ["1", "2", "3"]


OBS = {"1": [(1, 1)], "2": [(3, 0)], "3": [(2, 1)], "4": [(3, 0)], "5": [(2, 1)]}


def test_kaplan_meier_by_hand_and_against_scipy() -> None:
    # at risk 5, 1 event at t=1: S=0.8; at risk 4, 2 events at t=2: S=0.8*0.5=0.4
    assert survival.headline_value(OBS, 3) == pytest.approx(0.6)
    assert survival.headline_value(OBS, 1) == pytest.approx(0.2)
    curve = survival.curve(OBS, 3)
    assert curve is not None and curve.survival == pytest.approx([1.0, 0.8, 0.4, 0.4])
    scipy_sf = sps.ecdf(sps.CensoredData(uncensored=[1, 2, 2], right=[3, 3])).sf
    band = scipy_sf.confidence_interval(method="log-log")
    assert curve.low[2] == pytest.approx(float(band.low.evaluate(2)))
    assert curve.high[2] == pytest.approx(float(band.high.evaluate(2)))


def test_survival_band_without_events_is_the_wilson_interval() -> None:
    never = {str(i): [(3.0, 0)] for i in range(5)}
    curve = survival.curve(never, 3)
    assert curve is not None and curve.survival == [1.0] * 4
    assert (curve.low[3], curve.high[3]) == pytest.approx((5 / (5 + Z95**2), 1.0))
    ci = survival.headline_interval(never, 3)
    assert ci is not None and (ci.low, ci.high) == pytest.approx((0.0, Z95**2 / (5 + Z95**2)))
    assert survival.headline_interval({"1": [(3.0, 0)]}, 3) is None  # n < 2


def test_survival_paired_bootstrap_detects_more_compliance() -> None:
    never = {k: [(3.0, 0)] for k in OBS}
    p, n = survival.paired_bootstrap_p(OBS, never, 3)
    assert n == 5 and p < 0.05
    assert survival.paired_bootstrap_p(never, OBS, 3)[0] == 1.0
    assert survival.paired_bootstrap_p(OBS, OBS, 3, "two-sided")[0] == 1.0


def test_underpowered_pair_holds_a_row_down_to_the_row_it_does_not_beat() -> None:
    # 0 beats 2; 1 beats nobody, and 1-2 is underpowered: 1 may not sit above 2
    assert pairwise_ranks(3, {(0, 2)}, [False] * 3) == ["=1", "=1", "2"]
    assert pairwise_ranks(3, {(0, 2)}, [False] * 3, {frozenset({1, 2})}) == ["1", "=2", "=2"]
    # a separated pair is never held: 0 beats 2 even though 0-2 is listed as weak
    assert pairwise_ranks(2, {(0, 1)}, [False] * 2, {frozenset({0, 1})}) == ["1", "2"]
