"""Which number summarises a run, which way is better, and what one sample contributes to it.

Resolution order for each run (first that applies):

1. the task's own declaration in `log.eval.metadata["headline"]` (docket tasks write it with
   `docket.core.headline.headline` and read here by `docket.core.headline.from_metadata`, the
   same code);
2. a user's `--headline TASK=METRIC:DIRECTION` (METRIC may be `SCORE/METRIC`), for tasks of other
   packages;
3. Inspect's own headline (`log.results.headline`, else `log.eval.headline_metric`, else the
   first metric of the first score): the metric is known, the direction is not.

A run whose direction is unknown is shown without a rank and cannot be gated: nothing assumes
"higher is better".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from docket.core.headline import DIRECTIONS, HeadlineError, HeadlineSpec

#: Metrics that are the plain mean of the per-sample values, so they can be recomputed from them.
MEAN_METRICS = ("accuracy", "mean")


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
