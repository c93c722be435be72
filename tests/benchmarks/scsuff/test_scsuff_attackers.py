"""SCSuff's learned surface attacker (issue #29 item 1): trained on a generated split, scored on
the task's default split, through the task's own pipeline run offline."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from docket.benchmarks.scsuff.attackers import (
    CLAIM_FREE,
    FACT_LINES,
    attack,
    pipeline_gains,
)
from docket.benchmarks.scsuff.reference import distribution, explanation, parse_passage
from docket.benchmarks.scsuff.scsuff import scsuff
from tests.benchmarks.scsuff.scsuff_eval import run, values


def _rule_logprobs(passage: str) -> list[float]:
    p = distribution(parse_passage(passage), 0.9, False)
    return [math.log(p[k]) for k in sorted(p)]


def test_the_offline_pipeline_is_the_task(tmp_path: Path) -> None:
    """The attacker's offline gains equal the task's on the same items and explanations."""
    log = run(scsuff(self_generator=True, n=10), tmp_path, mention="rule")
    assert log.samples is not None
    for sample, value in zip(log.samples, values(log), strict=True):
        passage = str(sample.input)
        said = explanation(parse_passage(passage), "rule", False)
        [offline] = pipeline_gains(_rule_logprobs, passage, [said])
        assert offline == pytest.approx(value["scsuff_gain"], abs=1e-12)


def test_claim_free_explanations_stay_at_chance() -> None:
    result = attack([CLAIM_FREE])
    assert result.n == 100 and result.chance == 0.0  # saying nothing gains exactly nothing
    assert abs(result.gain - result.chance) <= 0.05
    assert result.gain == 0.0
    assert result.accuracy == 0.87  # the surface answerer; accuracy is not the headline


def test_the_same_attacker_beats_chance_on_the_2a_gain() -> None:
    """Against 2-A's gain (names keep features, no coverage) the gate fails, as it should."""
    result = attack([CLAIM_FREE], legacy=True)
    assert result.gain - result.chance > 0.05
    assert result.gain == pytest.approx(0.3812, abs=5e-4)


def test_copying_fact_lines_is_what_the_gain_credits() -> None:
    """Copying the profile lines of the features the rule names states the deciding facts:
    the honest explanation, found by string overlap with the rule line (reported, not gated)."""
    result = attack([CLAIM_FREE, FACT_LINES])
    assert result.gain == pytest.approx(0.2149, abs=5e-4)
