"""Which number summarises a run, which way is better, and what one sample contributes to it.

Resolution order for each run (first that applies):

1. the task's own declaration in `log.eval.metadata["headline"]` (docket tasks write it with
   `docket.benchmarks.common.headline`; parsed here as a plain dict, reports do not import
   benchmarks);
2. a user's `--headline TASK=METRIC:DIRECTION` (METRIC may be `SCORE/METRIC`), for tasks of other
   packages;
3. Inspect's own headline (`log.results.headline`, else `log.eval.headline_metric`, else the
   first metric of the first score): the metric is known, the direction is not.

A run whose direction is unknown is shown without a rank and cannot be gated: nothing assumes
"higher is better".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

DIRECTIONS = ("higher", "lower")
VALUE_KINDS = ("binary", "continuous", "survival")
#: Metrics that are the plain mean of the per-sample values, so they can be recomputed from them.
MEAN_METRICS = ("accuracy", "mean")


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
    """The declaration under `metadata["headline"]`, None when absent; `HeadlineError` if bad."""
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


def parse_flag(text: str) -> tuple[str, HeadlineSpec]:
    """`TASK=METRIC:DIRECTION` (METRIC may be `SCORE/METRIC`) -> (task, spec)."""
    task, sep, rest = text.partition("=")
    metric_part, sep2, direction = rest.rpartition(":")
    if not (sep and sep2 and task.strip() and metric_part.strip()):
        raise HeadlineError(
            f"--headline {text!r}: expected TASK=METRIC:DIRECTION, e.g. my_task=accuracy:higher"
        )
    if direction not in DIRECTIONS:
        raise HeadlineError(f"--headline {text!r}: direction must be 'higher' or 'lower'")
    score, slash, metric = metric_part.strip().rpartition("/")
    return task.strip(), HeadlineSpec(
        metric=metric,
        score=score if slash else None,
        sample_key=score if slash else None,
        direction=direction,
        source="--headline",
    )


def parse_flags(texts: list[str] | None) -> dict[str, HeadlineSpec]:
    """Every `--headline` flag by task name."""
    return dict(parse_flag(text) for text in texts or [])


def flag_for(task: str, flags: dict[str, HeadlineSpec]) -> HeadlineSpec | None:
    """The flag naming `task` exactly, or by its name without the package (`pkg/name`)."""
    if task in flags:
        return flags[task]
    short = task.rsplit("/", 1)[-1]
    return flags.get(short)


def from_inspect(declared: Any, resolved: Any) -> HeadlineSpec | None:
    """Inspect's headline (a `HeadlineMetric`-shaped dict); its direction is unknown."""
    for source in (resolved, declared):
        if isinstance(source, dict) and source.get("metric"):
            return HeadlineSpec(
                metric=str(source["metric"]),
                scorer=source.get("scorer"),
                score=source.get("score"),
                source="inspect",
            )
    return None


def with_kind(spec: HeadlineSpec, values: list[float]) -> HeadlineSpec:
    """Fill an undeclared value kind from the data: binary when every value is 0 or 1."""
    if spec.value is not None:
        return spec
    binary = bool(values) and all(v in (0.0, 1.0) for v in values)
    return replace(spec, value="binary" if binary else "continuous")
