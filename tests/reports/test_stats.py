"""Known-answer tests of the report statistics."""

from __future__ import annotations

import math

import pytest
from docket.reports.plots import survival_curve
from docket.reports.stats import (
    Z95,
    Interval,
    mean_interval,
    paired_bootstrap_p,
    rank_with_ties,
    two_proportion_z_test,
    unpaired_bootstrap_p,
    wilson_interval,
)


def test_wilson_all_successes_has_closed_form_lower_bound() -> None:
    ci = wilson_interval(3, 3)
    assert ci.low == pytest.approx(3 / (3 + Z95**2))
    assert ci.high == pytest.approx(1.0)


def test_wilson_half_matches_textbook_value() -> None:
    # p = 0.5, n = 100: centre 0.5, half = z*sqrt(0.25/100 + z^2/40000) / (1 + z^2/100)
    z = Z95
    half = z * math.sqrt(0.0025 + z * z / 40000) / (1 + z * z / 100)
    ci = wilson_interval(50, 100)
    assert (ci.low, ci.high) == pytest.approx((0.5 - half, 0.5 + half))


def test_mean_interval_uses_normal_for_non_binary_scores() -> None:
    ci = mean_interval([0.0, 0.5, 1.0])
    assert ci.method == "normal"
    assert (ci.low, ci.high) == pytest.approx(
        (0.5 - Z95 * 0.5 / math.sqrt(3), 0.5 + Z95 * 0.5 / math.sqrt(3))
    )


def test_two_proportion_z_test_known_value() -> None:
    # 60/100 vs 40/100: pooled 0.5, se = sqrt(0.25 * 0.02) = 0.0707..., z = 2.828...
    z, p = two_proportion_z_test(60, 100, 40, 100)
    assert z == pytest.approx(0.2 / math.sqrt(0.005))
    assert p == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)))
    assert p == pytest.approx(0.002339, abs=1e-6)


def test_paired_bootstrap_extremes() -> None:
    ids = {str(i): 1.0 for i in range(10)}
    assert paired_bootstrap_p(ids, {k: 0.0 for k in ids}) == (0.0, 10)
    assert paired_bootstrap_p(ids, dict(ids)) == (1.0, 10)


def test_paired_bootstrap_one_flip_equals_probability_of_missing_it() -> None:
    base = {str(i): 1.0 for i in range(20)}
    current = {**base, "0": 0.0}
    p, _ = paired_bootstrap_p(base, current)
    assert p == pytest.approx(0.95**20, abs=0.015)  # P(sample 0 never drawn in 20 draws)


def test_unpaired_bootstrap_clear_drop() -> None:
    assert unpaired_bootstrap_p([1.0] * 10, [0.0] * 10) == 0.0


def test_rank_with_ties_shares_ranks_only_where_cis_overlap() -> None:
    cis = [Interval(0.9, 1.0, "x"), Interval(0.5, 0.95, "x"), Interval(0.0, 0.4, "x")]
    assert rank_with_ties([0.95, 0.7, 0.2], cis) == ["=1", "=1", "3"]
    assert rank_with_ties([0.2, 0.9], [None, None]) == ["2", "1"]


def test_survival_curve_counts_never_complied_as_surviving() -> None:
    steps, survival = survival_curve([1, 2, 2, None])
    assert steps == [0, 1, 2]
    assert survival == [1.0, 0.75, 0.25]
