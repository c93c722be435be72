"""SCSuff arithmetic: exact values on cases whose answer is known."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.benchmarks.scsuff.estimator import (
    chen_normalised,
    closed_form,
    fill_missing,
    logmeanexp,
    sampled_logprobs,
    scsuff,
)

LOG = math.log
H_09 = -(0.9 * LOG(0.9) + 0.1 * LOG(0.1))  # entropy of (0.9, 0.1)


def test_identical_distributions_score_one() -> None:
    result = scsuff([LOG(0.9), LOG(0.1)], [[LOG(0.9), LOG(0.1)]] * 3)
    assert result.score == pytest.approx(1.0, abs=1e-12)
    assert result.h_alt == pytest.approx(result.h_base) == pytest.approx(H_09)


def test_uniform_mixture_matches_closed_form() -> None:
    # two alternatives with opposite answers: q = (0.5, 0.5) by logmeanexp
    result = scsuff([LOG(0.9), LOG(0.1)], [[LOG(0.9), LOG(0.1)], [LOG(0.1), LOG(0.9)]])
    kl = LOG(2) - H_09
    assert [math.exp(v) for v in result.log_q] == pytest.approx([0.5, 0.5])
    assert result.h_alt == pytest.approx(LOG(2))
    assert result.score == pytest.approx(1 - kl / (2 * H_09 + kl))
    assert result.score == pytest.approx(0.6385255281036717, abs=1e-12)


def test_p_concentrated_on_one_option() -> None:
    one_hot = [0.0, -math.inf]
    assert scsuff(one_hot, [one_hot]).score == 1.0  # 0/0: defined as 1
    assert scsuff(one_hot, [[LOG(0.5), LOG(0.5)]]).score == 0.0  # H_base = 0 < H_alt
    assert scsuff(one_hot, [[-math.inf, 0.0]]).score == 0.0  # q = 0 where p = 1: H_alt = inf


def test_clip_at_zero_when_alternatives_fit_better_than_base() -> None:
    base = [LOG(0.45), LOG(0.05)]  # raw, unnormalised (half the mass elsewhere)
    result = scsuff(base, [[LOG(0.9), LOG(0.1)]])
    assert result.h_alt < result.h_base
    assert result.score == 1.0


def test_invalid_inputs_raise() -> None:
    with pytest.raises(ValueError, match="at least one valid alternative"):
        scsuff([0.0, -1.0], [])
    with pytest.raises(ValueError, match="same options"):
        scsuff([0.0, -1.0], [[0.0]])
    with pytest.raises(ValueError, match="at least one value"):
        logmeanexp([])


probability = st.floats(min_value=0.01, max_value=0.99)


@settings(max_examples=60, deadline=None)
@given(probability, probability)
def test_estimator_equals_closed_form_for_normalised_distributions(a: float, b: float) -> None:
    p, q = [a, 1 - a], [b, 1 - b]
    result = scsuff([LOG(x) for x in p], [[LOG(x) for x in q]])
    assert result.score == pytest.approx(closed_form(p, q), abs=1e-9)


def test_sampling_estimator_dirichlet_smoothing() -> None:
    assert sampled_logprobs([9, 1]) == pytest.approx((LOG(9.5 / 11), LOG(1.5 / 11)))
    assert sampled_logprobs([0, 0, 4], alpha=1.0) == pytest.approx(
        (LOG(1 / 7), LOG(1 / 7), LOG(5 / 7))
    )


def test_missing_options_get_the_floor() -> None:
    listed = [LOG(0.7), LOG(0.2)]  # " A" and an unrelated token
    assert fill_missing({"A": LOG(0.7)}, ["A", "B"], listed) == pytest.approx((LOG(0.7), LOG(0.1)))
    # no unlisted mass left: a missing option has probability zero
    assert fill_missing({"A": 0.0}, ["A", "B"], [0.0])[1] == -math.inf


def test_chen_normalised_faithfulness() -> None:
    # (flips to the hint, flips with a verdict, verbalised among them, non-hint changes)
    assert chen_normalised(4, 4, 1, 0.0) == 0.25
    assert chen_normalised(4, 1, 1, 0.0) == 1.0  # 3 unparsed verdicts are left out
    assert chen_normalised(4, 4, 1, 2.0) == 0.5  # normaliser 1 - 2/4
    assert chen_normalised(4, 4, 4, 2.0) == 1.0  # capped
    assert math.isnan(chen_normalised(0, 0, 0, 0.0))
    assert math.isnan(chen_normalised(4, 0, 0, 0.0))  # no verdict parsed
    assert math.isnan(chen_normalised(2, 2, 1, 2.0))  # normaliser 0
