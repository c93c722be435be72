"""A task's declared headline: which metric summarises it, its direction, its per-sample value.

Every docket task passes `**headline(...)` to `Task`. That sets Inspect's own
`Task(headline_metric=...)` (so `inspect view` and Inspect's log listing show the right number)
and records the rest in task metadata under `"headline"`, where `docket report` and
`docket regress` read it from the log (`log.eval.metadata["headline"]`) with `from_metadata`,
the same code that checks it when it is written:

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

from dataclasses import asdict, dataclass
from typing import Any, Literal

from inspect_ai.log import HeadlineMetric

Direction = Literal["higher", "lower"]
ValueKind = Literal["binary", "continuous", "survival"]

DIRECTIONS: tuple[str, ...] = ("higher", "lower")
VALUE_KINDS: tuple[str, ...] = ("binary", "continuous", "survival")


class HeadlineError(ValueError):
    """A headline declaration or `--headline` flag that cannot be used (one line)."""


@dataclass(frozen=True)
class HeadlineSpec:
    """A resolved headline: where its number is, its direction and its per-sample value kind."""

    metric: str
    scorer: str | None = None
    score: str | None = None
    direction: str | None = None
    value: str | None = None
    sample_key: str | None = None
    time_key: str | None = None
    event_key: str | None = None
    horizon: int | None = None
    source: str = "inspect"

    @property
    def name(self) -> str:
        """`score/metric` (or the metric alone) as shown in tables."""
        return f"{self.score}/{self.metric}" if self.score else self.metric

    @property
    def arrow(self) -> str:
        """↑ for higher-is-better, ↓ for lower, ? when unknown."""
        return {"higher": "↑", "lower": "↓"}.get(self.direction or "", "?")

    def comparable_key(self) -> tuple[Any, ...]:
        """What must match for two runs' headlines to be compared (an inferred 0/1 vs
        continuous kind does not split them; survival does)."""
        return (self.name, self.direction, self.value == "survival", self.horizon)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields (for leaderboard.json and baselines)."""
        return asdict(self)


def _optional_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise HeadlineError(f"headline field '{key}' must be a non-empty string, got {value!r}")
    return value


def from_metadata(metadata: Any) -> HeadlineSpec | None:
    """The headline declared in task metadata.

    Args:
        metadata: A task's metadata (`log.eval.metadata`), any value.

    Returns:
        The declaration under `metadata["headline"]` (source "task"), None when absent.

    Raises:
        HeadlineError: The declaration is malformed (one line naming the field).
    """
    if not isinstance(metadata, dict) or metadata.get("headline") is None:
        return None
    data = metadata["headline"]
    if not isinstance(data, dict):
        raise HeadlineError(f"metadata 'headline' must be a mapping, got {type(data).__name__}")
    metric = _optional_str(data, "metric")
    if metric is None:
        raise HeadlineError("metadata 'headline' lacks 'metric'")
    direction = data.get("direction")
    if direction not in DIRECTIONS:
        raise HeadlineError(f"headline direction must be one of {DIRECTIONS}, got {direction!r}")
    value = data.get("value")
    if value not in VALUE_KINDS:
        raise HeadlineError(f"headline value must be one of {VALUE_KINDS}, got {value!r}")
    horizon = data.get("horizon")
    if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, int)):
        raise HeadlineError(f"headline horizon must be an int, got {horizon!r}")
    spec = HeadlineSpec(
        metric=metric,
        scorer=_optional_str(data, "scorer"),
        score=_optional_str(data, "score"),
        direction=direction,
        value=value,
        sample_key=_optional_str(data, "sample_key"),
        time_key=_optional_str(data, "time_key"),
        event_key=_optional_str(data, "event_key"),
        horizon=horizon,
        source="task",
    )
    if value == "survival" and not (spec.time_key and spec.event_key and spec.horizon):
        raise HeadlineError("a survival headline needs time_key, event_key and horizon")
    return spec


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

    Merge further task metadata with `metadata={**h["metadata"], ...}` where needed. The
    declaration is checked by `from_metadata`, the reader of the logs.

    Args:
        scorer: The scorer whose metric is the headline.
        metric: The metric's name.
        direction: Whether "higher" or "lower" is better.
        value: What one sample contributes: "binary", "continuous" or "survival".
        score: The score's name where the scorer returns several.
        sample_key: The key of the per-sample `Score.value` dict that holds the sample's value.
        time_key: For "survival", the key of the sample's time.
        event_key: For "survival", the key of the sample's event (1 if it happened).
        horizon: For "survival", the turn T the headline is read at.

    Returns:
        `{"headline_metric": HeadlineMetric(...), "metadata": {"headline": {...}}}`.

    Raises:
        HeadlineError: A `ValueError` for a bad direction or value kind, or a survival
            headline without its keys and horizon.
    """
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
    from_metadata({"headline": declared})
    return {
        "headline_metric": HeadlineMetric(scorer=scorer, score=score, metric=metric),
        "metadata": {"headline": declared},
    }
