"""Typed access to what the scorers of a finished eval gave its samples, for assertions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from inspect_ai.log import EvalSample
from inspect_ai.scorer import Metric, MetricProtocol, SampleScore, Score, Value


def sample_score(sample: EvalSample, scorer: str) -> Score:
    """The score one scorer gave a sample that was scored.

    Args:
        sample: A sample of an eval log.
        scorer: The scorer's name.

    Returns:
        The sample's score from that scorer.
    """
    assert sample.scores is not None, f"sample {sample.id} has no scores"
    return sample.scores[scorer]


def score_fields(sample: EvalSample, scorer: str) -> dict[str, Any]:
    """The fields of a sample's dict-valued score, as the scorer wrote them.

    Args:
        sample: A sample of an eval log.
        scorer: The name of a scorer whose value is a dict.

    Returns:
        A copy of the score's value.
    """
    value = sample_score(sample, scorer).value
    assert isinstance(value, Mapping), f"{scorer} gave {value!r}, not a dict"
    return dict(value)


def metric_value(metric: Metric, scores: list[SampleScore]) -> Value:
    """A metric computed over sample scores, as a finished eval would.

    Args:
        metric: A metric built by one of docket's `@metric` factories.
        scores: The sample scores to reduce.

    Returns:
        The metric's value.
    """
    # inspect_ai types every `@metric` as either signature, the pre-0.3.64 one on `list[Score]`
    # included; docket's metrics all take the current `list[SampleScore]`.
    return cast(MetricProtocol, metric)(scores)
