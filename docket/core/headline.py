"""A task's declared headline: which metric summarises it, its direction, its per-sample value.

Every docket task passes `**headline(...)` to `Task`. That sets Inspect's own
`Task(headline_metric=...)` (so `inspect view` and Inspect's log listing show the right number)
and records the rest in task metadata under `"headline"`, where `docket report` and
`docket regress` read it from the log (`log.eval.metadata["headline"]`):

    {"scorer": "anchor_scorer", "score": None, "metric": "compliance_at_T",
     "direction": "lower", "value": "survival", "sample_key": None,
     "time_key": "turns_observed", "event_key": "complied", "horizon": 20}

- `direction`: "higher" or "lower" is better.
- `value`: what one sample contributes, so paired tests use the right statistic:
  "binary" (0/1; McNemar / two-proportion), "continuous" (bootstrap of the mean), or
  "survival" (a (time, event) pair per sample: time = the turn of the event, or the last turn
  observed when censored; event = 1 if it happened. The headline metric is then the
  Kaplan-Meier probability that the event happened by `horizon`, 1 - S(horizon), e.g. ANCHOR's
  compliance@T; a paired bootstrap resamples samples and recomputes it).
- `sample_key`: the key of the per-sample `Score.value` dict that holds the sample's value
  (`None` when the value is a scalar); for "survival", `time_key`/`event_key` name the two keys
  and `horizon` the turn T the headline is read at.
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai.log import HeadlineMetric

Direction = Literal["higher", "lower"]
ValueKind = Literal["binary", "continuous", "survival"]

DIRECTIONS: tuple[str, ...] = ("higher", "lower")
VALUE_KINDS: tuple[str, ...] = ("binary", "continuous", "survival")


def headline(
    scorer: str,
    metric: str,
    *,
    direction: Direction,
    value: ValueKind,
    score: str | None = None,
    sample_key: str | None = None,
    time_key: str | None = None,
    event_key: str | None = None,
    horizon: int | None = None,
) -> dict[str, Any]:
    """`Task` keyword arguments declaring the headline (`headline_metric` and `metadata`).

    Merge further task metadata with `metadata={**h["metadata"], ...}` where needed.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"headline direction must be one of {DIRECTIONS}, got {direction!r}")
    if value not in VALUE_KINDS:
        raise ValueError(f"headline value must be one of {VALUE_KINDS}, got {value!r}")
    if value == "survival" and not (time_key and event_key and horizon):
        raise ValueError("a survival headline needs time_key, event_key and horizon")
    declared = {
        "scorer": scorer,
        "score": score,
        "metric": metric,
        "direction": direction,
        "value": value,
        "sample_key": sample_key,
        "time_key": time_key,
        "event_key": event_key,
        "horizon": horizon,
    }
    return {
        "headline_metric": HeadlineMetric(scorer=scorer, score=score, metric=metric),
        "metadata": {"headline": declared},
    }
