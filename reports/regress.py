"""`docket regress`: gate a run on a stored baseline of declared headlines.

A baseline (`docket-baseline/3`, written by `write_baseline`) keeps, per leaderboard row (task,
version, task args, model + args, solver, non-default generation config, epochs, model roles),
the headline declaration (metric, direction, per-sample value kind), its value, every sample's
value ((time, event) pairs for survival headlines), the data split's hash and, where the task
declares clusters, each sample's cluster. `compare` pairs each entry with the current run of the
same row. Rows that cannot be compared are exit 2: no current run; the setup, the version's N
(of "N-X"), the task args, the split or the headline declaration differ; no score; an unknown
direction; less than `min_coverage` of the baseline's samples; no per-sample values. The others
get one of three verdicts from the paired samples they share:

- regression (exit 1): the headline moved the wrong way by more than `tolerance` (strictly;
  absolute, on the metric's scale) AND a one-sided paired test is significant at `alpha` after
  Holm's correction across the rows: exact McNemar for 0/1 values, else a paired bootstrap of
  the mean, or of the Kaplan-Meier event probability by the horizon for survival headlines
  (10 000 resamples of sample ids, seed 0).
- pass (exit 0): the one-sided upper confidence bound of the drop at `alpha` is at most
  `tolerance` (a non-inferiority test): exact bounds from the discordant pairs for 0/1 values
  (`stats.paired_binary_bounds`), bootstrap percentiles otherwise; with no changed sample, the
  exact bound of a change nobody saw (`stats.no_change_bound`); rows with declared clusters
  resample whole clusters. Every row must pass on its own (an intersection-union test needs no
  multiplicity correction).
- cannot decide (exit 2): anything else, printed with the drop, its 1 - 2 alpha interval and the
  paired samples that would decide a drop of the tolerance's size (`power.needed_n`).

A regression anywhere wins (exit 1); else any row that did not pass, an unreadable log, a log
left out or in doubt (`docket.reports.trust`: future-dated, a disputed eval id, two logs claiming
one run), or more errored samples than `--max-errors` is exit 2; exit 0 only when every row
passed. Model-free rows are stored and matched as `(model-free)`, whatever model ran them.
Every comparison lists the samples that flipped.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docket.core.headline import HeadlineSpec
from docket.core.text import printable
from docket.reports import survival
from docket.reports.headline import flag_for
from docket.reports.health import errored_text
from docket.reports.logs import LogError
from docket.reports.power import design_effect, needed_n, power_values, value_scale
from docket.reports.runs import MODEL_FREE, Run
from docket.reports.stats import (
    Interval,
    bootstrap_bounds,
    bootstrap_p,
    holm,
    no_change_bound,
    paired_binary_bounds,
    paired_bootstrap_means,
    paired_mean_test,
)
from docket.reports.trust import LogWarning

BASELINE_FORMAT = "docket-baseline/3"
#: The previous format: read, with one line saying what is assumed about what it lacks.
BASELINE_FORMAT_V2 = "docket-baseline/2"
ENTRY_FIELDS = (
    "task",
    "version",
    "task_args",
    "model",
    "setup",
    "headline",
    "value",
    "samples",
)
HEADLINE_FIELDS = ("metric", "direction", "value")
EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2
#: Verdicts that are neither a pass nor a regression: exit 2.
BLOCKING = ("missing", "not comparable", "untestable", "coverage", "cannot decide")
#: Flipped samples printed per comparison (all of them are in the JSON).
FLIPS_SHOWN = 20
#: Differences below this are float noise (0.95 - 1.0 is not "more than 0.05").
EPSILON = 1e-9


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file and field."""


@dataclass
class Comparison:
    """One baseline entry against the current run."""

    task: str
    model: str
    #: pass | regression | cannot decide | missing | not comparable | untestable | coverage
    verdict: str
    detail: str
    setup: dict[str, str] = field(default_factory=dict)
    headline: str = ""
    direction: str | None = None
    baseline_value: float | None = None
    current_value: float | None = None
    drop: float | None = None
    test: str | None = None
    p_value: float | None = None
    p_holm: float | None = None
    n: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None
    #: Paired samples that would decide a drop of the tolerance's size at this run's variance.
    n_needed: int | None = None
    second_moment: float | None = None
    #: Design effect applied to `n_needed` (samples clustered, e.g. by document), and by what.
    design_effect: float = 1.0
    cluster_field: str | None = None
    coverage: float | None = None
    worse: list[str] = field(default_factory=list)
    better: list[str] = field(default_factory=list)

    @property
    def blocking(self) -> bool:
        """True when the gate cannot pass this row (exit 2 unless a regression wins)."""
        return self.verdict in BLOCKING

    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields (for the report's baseline section)."""
        return dict(self.__dict__)


def _samples_json(run: Run) -> dict[str, Any]:
    if run.value_kind == "survival":
        return {k: [list(pair) for pair in v] for k, v in run.observations.items()}
    return dict(run.samples)


def baseline_entry(run: Run) -> dict[str, Any]:
    """One scored run as a baseline entry."""
    assert run.headline is not None
    return {
        "task": run.task,
        "version": run.version,
        "task_args": run.task_args,
        "model": run.row_model,
        "setup": run.setup,
        "headline": run.headline.to_json(),
        "value": run.headline_value,
        "n": run.n,
        "samples": _samples_json(run),
        "log": run.log,
        "split": run.split,
        "clusters": {"field": run.cluster_field, "ids": dict(run.clusters)}
        if run.cluster_field and run.clusters
        else None,
    }


def baseline_data(runs: list[Run]) -> dict[str, Any]:
    """The baseline document for every scored run."""
    commits = sorted({r.commit for r in runs if r.commit})
    return {
        "format": BASELINE_FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": ",".join(commits) or None,
        "entries": [baseline_entry(run) for run in runs if run.scored],
    }


def left_out(runs: list[Run]) -> list[str]:
    """`task / model: why` for every run a baseline leaves out (it has no score).

    Args:
        runs: The runs a baseline is written from.

    Returns:
        One line per unscored run, in the runs' order.
    """
    return [f"{r.task} / {r.row_model}: {r.unscored_reason}" for r in runs if not r.scored]


def errored_runs(runs: list[Run]) -> list[str]:
    """`task / model: 2/2 errored: no successful model call (...)` for runs with errored samples.

    Args:
        runs: The current runs.

    Returns:
        One line per run with errored samples (excluded from its metrics).
    """
    return [f"{r.task} / {r.row_model}: {errored_text(r.health)}" for r in runs if r.health.errored]


def errored_count(runs: list[Run]) -> int:
    """Errored sample epochs over every run (what `--max-errors` bounds)."""
    return sum(r.errored_samples for r in runs)


def write_baseline(runs: list[Run], path: str | Path) -> int:
    """Write the baseline JSON; return how many entries it holds.

    Args:
        runs: The runs whose headlines become the baseline's entries.
        path: File written (its folder is created when missing).

    Returns:
        The number of entries written.
    """
    data = baseline_data(runs)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return len(data["entries"])


def _is_number(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _check_sample(value: object, survival_kind: bool) -> bool:
    if not survival_kind:
        return _is_number(value)
    return isinstance(value, list) and all(
        isinstance(p, list) and len(p) == 2 and all(_is_number(x) for x in p) for p in value
    )


def _check_entry(source: Path, index: int, entry: object) -> None:
    where = f"{source}: entries[{index}]"
    if not isinstance(entry, dict):
        raise BaselineError(f"{where} must be an object")
    missing = [f for f in ENTRY_FIELDS if f not in entry]
    if missing:
        raise BaselineError(f"{where} lacks field '{missing[0]}'")
    headline = entry["headline"]
    if not isinstance(headline, dict) or any(f not in headline for f in HEADLINE_FIELDS):
        raise BaselineError(f"{where} field 'headline' needs {', '.join(HEADLINE_FIELDS)}")
    if not isinstance(entry["setup"], dict) or not isinstance(entry["task_args"], dict):
        raise BaselineError(f"{where} fields 'setup' and 'task_args' must be objects")
    samples = entry["samples"]
    if not _is_number(entry["value"]) or not isinstance(samples, dict):
        raise BaselineError(f"{where} field 'value' or 'samples' malformed")
    survival_kind = headline.get("value") == "survival"
    if not all(_check_sample(v, survival_kind) for v in samples.values()):
        shape = "[[time, event], ...]" if survival_kind else "numbers"
        raise BaselineError(f"{where} 'samples' must map ids to {shape}")
    if entry.get("split") is not None and not isinstance(entry["split"], str):
        raise BaselineError(f"{where} field 'split' must be a sha256 string or null")
    clusters = entry.get("clusters")
    if clusters is not None and not (
        isinstance(clusters, dict)
        and isinstance(clusters.get("field"), str)
        and isinstance(clusters.get("ids"), dict)
        and all(isinstance(v, str) for v in clusters["ids"].values())
    ):
        raise BaselineError(f"{where} field 'clusters' must be {{field, ids: {{id: cluster}}}}")


@dataclass(frozen=True)
class Baseline:
    """A validated baseline file: its entries and, for an older format, what is assumed."""

    entries: list[dict[str, Any]]
    assumed: str | None = None


def read_baseline_file(path: str | Path) -> Baseline:
    """A baseline file, validated; `BaselineError` names the file and the field.

    Args:
        path: The baseline JSON written by `write_baseline` (`docket-baseline/3`, or `/2`).

    Returns:
        The entries, and for a `/2` file one line saying what is assumed about the split and
        the clusters it does not record.

    Raises:
        BaselineError: The file is missing, not JSON, of another format, or has a bad field.
    """
    source = Path(path)
    try:
        data = json.loads(source.read_text())
    except FileNotFoundError:
        raise BaselineError(f"{source}: baseline file not found") from None
    except (ValueError, RecursionError) as ex:  # bad JSON or UTF-8, huge ints, deep nesting
        raise BaselineError(f"{source}: not valid JSON ({type(ex).__name__})") from None
    if isinstance(data, dict) and data.get("format") == "docket-baseline/1":
        raise BaselineError(
            f"{source}: format docket-baseline/1 has no headline directions; "
            "write it again with --write-baseline"
        )
    formats = (BASELINE_FORMAT, BASELINE_FORMAT_V2)
    if not isinstance(data, dict) or data.get("format") not in formats:
        raise BaselineError(f"{source}: field 'format' must be {BASELINE_FORMAT!r}")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise BaselineError(f"{source}: field 'entries' must be a list")
    for index, entry in enumerate(entries):
        _check_entry(source, index, entry)
    assumed = None
    if data["format"] == BASELINE_FORMAT_V2:
        assumed = (
            f"{source}: {BASELINE_FORMAT_V2} records no data split and no clusters: assuming "
            "every entry ran on the current run's split, with independent samples "
            "(--write-baseline writes /3)"
        )
    return Baseline(entries, assumed)


def read_baseline(path: str | Path) -> list[dict[str, Any]]:
    """Entries of a baseline file, validated (`read_baseline_file` without the assumption).

    Args:
        path: The baseline JSON written by `write_baseline`.

    Returns:
        The validated entries, one per row.

    Raises:
        BaselineError: The file is missing, not JSON, of another format, or has a bad field.
    """
    return read_baseline_file(path).entries


def version_major(version: str) -> str:
    """N of a task version "N-X" (the part that changes when scores change meaning)."""
    return str(version).split("-", 1)[0]


def _fmt(value: float) -> str:
    """Numbers as written in verdicts: up to 4 decimals, no trailing zeros (0.05, 0.1234)."""
    return f"{value:.4f}".rstrip("0").rstrip(".") if math.isfinite(value) else str(value)


def _differences(base: dict[str, str], now: dict[str, str]) -> str:
    keys = sorted(set(base) | set(now))
    parts = [
        f"{k}: {base.get(k, '(unset)')} in baseline, {now.get(k, '(unset)')} now"
        for k in keys
        if base.get(k) != now.get(k)
    ]
    return "; ".join(parts)


def _entry_spec(entry: dict[str, Any]) -> HeadlineSpec:
    h = entry["headline"]
    return HeadlineSpec(
        metric=str(h["metric"]),
        scorer=h.get("scorer"),
        score=h.get("score"),
        direction=h.get("direction"),
        value=h.get("value"),
        sample_key=h.get("sample_key"),
        time_key=h.get("time_key"),
        event_key=h.get("event_key"),
        horizon=h.get("horizon"),
        source=str(h.get("source") or "baseline"),
    )


def flips(
    base: dict[str, Any], now: dict[str, Any], kind: str, direction: str
) -> tuple[list[str], list[str]]:
    """(worse, better) sample ids between two runs' per-sample values, worst first.

    0/1 and continuous values: a change in the headline's direction; survival: whether the event
    happened in any epoch (the event is the bad outcome when lower is better).
    """
    sign = 1.0 if direction == "higher" else -1.0
    changes: list[tuple[float, str]] = []
    for key in sorted(set(base) & set(now)):
        if kind == "survival":
            delta = float(any(e for _, e in now[key])) - float(any(e for _, e in base[key]))
        else:
            delta = float(now[key]) - float(base[key])
        if abs(delta) > EPSILON:
            changes.append((sign * delta, key))
    worse = [k for d, k in sorted(changes) if d < 0]
    better = [k for d, k in sorted(changes, reverse=True) if d > 0]
    return worse, better


@dataclass(frozen=True)
class DropStatistics:
    """The paired statistics of one drop: the regression test and the drop's bounds."""

    test: str
    p_value: float
    n: int
    bounds: Interval
    second_moment: float
    scale: float
    kind: str


def _bootstrap_or_unseen(
    replicates: Any, estimate: float, n: int, alpha: float, scale: float
) -> Interval:
    """Bootstrap bounds of a drop whose upper end is at least the drop plus the bound of a
    change no sample showed (`no_change_bound`): a bootstrap of few samples sees only what
    changed, so one small change in 3 samples must not pass where no change cannot.
    `replicates` None: no sample changed.
    """
    unseen = no_change_bound(n, alpha, scale)
    if replicates is None:
        return unseen
    found = bootstrap_bounds(replicates, alpha)
    if found.high >= estimate + unseen.high:
        return found
    return Interval(found.low, estimate + unseen.high, "paired bootstrap, plus an unseen change")


def cluster_bootstrap_means(
    diffs: dict[str, float], clusters: dict[str, str], resamples: int = 10_000, seed: int = 0
) -> tuple[np.ndarray, int]:
    """Bootstrap of the mean paired difference that resamples whole clusters (seed 0).

    Args:
        diffs: Paired difference per sample.
        clusters: Cluster id per sample (samples without one are their own cluster).
        resamples: Bootstrap resamples.
        seed: Random seed.

    Returns:
        (means of the resampled samples' differences, number of clusters).
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for key, value in diffs.items():
        cluster = clusters.get(key, f"sample {key}")
        sums[cluster] = sums.get(cluster, 0.0) + value
        counts[cluster] = counts.get(cluster, 0) + 1
    order = sorted(sums)
    total = np.asarray([sums[c] for c in order])
    size = np.asarray([counts[c] for c in order], dtype=float)
    draws = np.random.default_rng(seed).integers(0, len(order), size=(resamples, len(order)))
    return total[draws].sum(axis=1) / size[draws].sum(axis=1), len(order)


def _clustered_bounds(
    diffs: dict[str, float], clusters: dict[str, str], alpha: float, scale: float
) -> Interval:
    """Bounds of a clustered drop: the cluster bootstrap, its upper end at least the drop plus
    the bound of a change no *cluster* showed (k clusters, not n samples, are independent)."""
    replicates, k = cluster_bootstrap_means(diffs, clusters)
    estimate = sum(diffs.values()) / len(diffs)
    unseen = no_change_bound(k, alpha, scale)
    if not any(abs(d) > EPSILON for d in diffs.values()):
        return Interval(unseen.low, unseen.high, f"no sample changed ({k} clusters)")
    found = bootstrap_bounds(replicates, alpha)
    high = max(found.high, estimate + unseen.high)
    return Interval(found.low, high, f"cluster bootstrap ({k} clusters)")


def _statistics(
    spec: HeadlineSpec,
    base: dict[str, Any],
    now: dict[str, Any],
    alpha: float,
    clusters: dict[str, str] | None = None,
) -> DropStatistics:
    """Test of H1 "the baseline is better" and bounds of the drop on the shared samples; with
    clusters (0/1 and continuous headlines), the bounds come from a cluster bootstrap."""
    ids = sorted(set(base) & set(now))
    if spec.value == "survival":
        base_obs = {k: [(float(t), int(e)) for t, e in base[k]] for k in ids}
        now_obs = {k: [(float(t), int(e)) for t, e in now[k]] for k in ids}
        first, second = (now_obs, base_obs) if spec.direction == "lower" else (base_obs, now_obs)
        horizon = float(spec.horizon or 0)
        replicates, n = survival.paired_bootstrap_differences(first, second, horizon)
        changed = sum(sorted(first[k]) != sorted(second[k]) for k in ids)
        estimate = float(survival.headline_value(first, horizon) or 0.0) - float(
            survival.headline_value(second, horizon) or 0.0
        )
        bounds = _bootstrap_or_unseen(replicates if changed else None, estimate, n, alpha, 1.0)
        diffs = [
            survival.event_by(first[k], horizon) - survival.event_by(second[k], horizon)
            for k in ids
        ]
        moment = sum(d * d for d in diffs) / n
        return DropStatistics(
            "paired bootstrap (Kaplan-Meier)",
            bootstrap_p(replicates, "greater"),
            n,
            bounds,
            moment,
            1.0,
            "survival",
        )
    first_m, second_m = (now, base) if spec.direction == "lower" else (base, now)
    test, p, n = paired_mean_test(first_m, second_m, "greater")
    diffs = [float(first_m[k]) - float(second_m[k]) for k in ids]
    moment = sum(d * d for d in diffs) / n
    values = [float(v) for k in ids for v in (base[k], now[k])]
    binary = test == "McNemar exact"
    scale = 1.0 if binary else value_scale(values)
    if clusters and len({clusters.get(k, k) for k in ids}) < n:
        bounds = _clustered_bounds(dict(zip(ids, diffs, strict=True)), clusters, alpha, scale)
        return DropStatistics(
            test, p, n, bounds, moment, scale, "binary" if binary else "continuous"
        )
    if binary:
        worse = sum(d > 0 for d in diffs)
        better = sum(d < 0 for d in diffs)
        return DropStatistics(
            test, p, n, paired_binary_bounds(worse, better, n, alpha), moment, 1.0, "binary"
        )
    changed = any(abs(d) > EPSILON for d in diffs)
    bounds = _bootstrap_or_unseen(
        paired_bootstrap_means(diffs) if changed else None, sum(diffs) / n, n, alpha, scale
    )
    return DropStatistics(test, p, n, bounds, moment, scale, "continuous")


def _current_samples(run: Run) -> dict[str, Any]:
    if run.value_kind == "survival":
        return {k: [list(p) for p in v] for k, v in run.observations.items()}
    return dict(run.samples)


def _resolved_spec(entry: dict[str, Any], flags: dict[str, HeadlineSpec]) -> HeadlineSpec:
    """The baseline's headline, its direction taken from `--headline` when the entry lacks one."""
    spec = _entry_spec(entry)
    if spec.direction is None:
        flag = flag_for(str(entry["task"]), flags)
        if flag is not None and flag.name == spec.name:
            spec = HeadlineSpec(**{**spec.__dict__, "direction": flag.direction})
    return spec


def _same_setup_and_version(entry: dict[str, Any], candidates: list[Run]) -> tuple[list[Run], str]:
    """The candidates with the baseline's setup and major version, or why there are none."""
    same_setup = [r for r in candidates if r.setup == entry["setup"]]
    if not same_setup:
        return [], "setup differs: " + _differences(entry["setup"], candidates[0].setup)
    major = [r for r in same_setup if version_major(r.version) == version_major(entry["version"])]
    if not major:
        found = ", ".join(sorted({r.version for r in same_setup}))
        return [], f"version {entry['version']} in baseline, {found} now (N changed)"
    return major, ""


def _same_args_and_split(entry: dict[str, Any], major: list[Run]) -> tuple[list[Run], str]:
    """The runs with the baseline's task args and data split, or why there are none."""
    same_args = [r for r in major if r.task_args == entry["task_args"]]
    if not same_args:
        return [], f"task args {entry['task_args']} in baseline, {major[0].task_args} now"
    base_split = entry.get("split")
    same_split = [r for r in same_args if not (base_split and r.split and r.split != base_split)]
    if not same_split:
        now_split = str(same_args[0].split)
        return [], (
            f"split {str(base_split)[:12]} in baseline, {now_split[:12]} now: rows from different "
            "data splits are never compared"
        )
    return same_split, ""


def _comparable_run(entry: dict[str, Any], candidates: list[Run]) -> tuple[Run | None, str, str]:
    """The current run to compare with the baseline entry, or None with the verdict and why."""
    if not candidates:
        return None, "missing", "no run of this task and model in the logs"
    runs, why = _same_setup_and_version(entry, candidates)
    if runs:
        runs, why = _same_args_and_split(entry, runs)
    if not runs:
        return None, "not comparable", why
    run = runs[0]
    if not run.scored or run.headline is None:
        return (
            None,
            "not comparable",
            (f"current run has no score: {run.unscored_reason or 'no headline'}"),
        )
    return run, "", ""


def _headline_mismatch(spec: HeadlineSpec, now_spec: HeadlineSpec, task: str) -> tuple[str, str]:
    """The verdict and why when the headlines cannot be tested against each other; else ("", "")."""
    if now_spec.comparable_key()[::2] != spec.comparable_key()[::2] or (
        now_spec.direction is not None and now_spec.direction != spec.direction
    ):
        return "not comparable", (
            f"headline {spec.name} ({spec.direction}, {spec.value}) in baseline, "
            f"{now_spec.name} ({now_spec.direction}, {now_spec.value}) now"
        )
    if spec.direction not in ("higher", "lower"):
        return "untestable", (
            f"direction of {spec.name} unknown: give --headline {task}={spec.name}:higher|lower"
        )
    return "", ""


def _check_coverage(
    result: Comparison,
    spec: HeadlineSpec,
    base_samples: dict[str, Any],
    now_samples: dict[str, Any],
    min_coverage: float,
) -> bool:
    """Set coverage and flips; False (verdict "coverage") when too few baseline samples remain."""
    assert spec.direction is not None
    shared = set(base_samples) & set(now_samples)
    result.coverage = len(shared) / len(base_samples)
    result.worse, result.better = flips(
        base_samples, now_samples, spec.value or "continuous", spec.direction
    )
    if result.coverage + EPSILON >= min_coverage:
        return True
    missing = sorted(set(base_samples) - shared)
    shown = ", ".join(missing[:10]) + (f" (+{len(missing) - 10} more)" if len(missing) > 10 else "")
    result.verdict = "coverage"
    result.detail = (
        f"current run covers {len(shared)} of {len(base_samples)} baseline samples "
        f"({result.coverage:.1%}), below --min-coverage {min_coverage:.0%}; "
        f"missing {1 - result.coverage:.1%}: {shown}"
    )
    return False


def _clusters(entry: dict[str, Any], run: Run) -> dict[str, Any] | None:
    """The baseline's sample clusters, else the current run's, else None."""
    found: dict[str, Any] | None = entry.get("clusters") or (
        {"field": run.cluster_field, "ids": run.clusters} if run.cluster_field else None
    )
    return found


def _test_drop(
    result: Comparison,
    spec: HeadlineSpec,
    samples: tuple[dict[str, Any], dict[str, Any]],
    clusters: dict[str, Any] | None,
    tolerance: float,
    alpha: float,
) -> None:
    """Fill the test, p, interval and samples needed of a comparison with shared samples."""
    base_samples, now_samples = samples
    stats = _statistics(
        spec, base_samples, now_samples, alpha, clusters["ids"] if clusters else None
    )
    result.test = f"{stats.test} (n={stats.n})"
    result.p_value, result.n = stats.p_value, stats.n
    result.ci_low, result.ci_high = stats.bounds.low, stats.bounds.high
    result.ci_method = stats.bounds.method
    result.second_moment = stats.second_moment
    result.n_needed = needed_n(
        stats.kind if stats.kind == "binary" else "normal",
        stats.second_moment,
        tolerance,
        alpha,
        scale=stats.scale,
    )
    if clusters and result.n_needed is not None:
        values = power_values(spec.value or "continuous", base_samples, spec.horizon)
        result.design_effect, _ = design_effect(values, clusters["ids"])
        result.cluster_field = str(clusters["field"])
        result.n_needed = math.ceil(result.n_needed * result.design_effect)


def _compare_one(
    entry: dict[str, Any],
    candidates: list[Run],
    flags: dict[str, HeadlineSpec],
    tolerance: float,
    alpha: float,
    min_coverage: float,
) -> Comparison:
    task, model = str(entry["task"]), str(entry["model"])
    spec = _resolved_spec(entry, flags)
    result = Comparison(task, model, "untestable", "", setup=entry["setup"], headline=spec.name)
    result.baseline_value = float(entry["value"])
    result.direction = spec.direction
    run, verdict, detail = _comparable_run(entry, candidates)
    if run is None:
        result.verdict, result.detail = verdict, detail
        return result
    assert run.headline is not None
    result.current_value = run.headline_value
    verdict, detail = _headline_mismatch(spec, run.headline, task)
    if verdict:
        result.verdict, result.detail = verdict, detail
        return result
    base_samples, now_samples = entry["samples"], _current_samples(run)
    if base_samples and not _check_coverage(result, spec, base_samples, now_samples, min_coverage):
        return result
    assert run.headline_value is not None
    sign = 1.0 if spec.direction == "higher" else -1.0
    result.drop = sign * (result.baseline_value - run.headline_value)
    if abs(result.drop) <= EPSILON:
        result.drop = 0.0
    if not set(base_samples) & set(now_samples):
        result.verdict = "untestable"
        result.detail = f"drop {_fmt(result.drop)} cannot be tested: no per-sample values"
        return result
    samples = (base_samples, now_samples)
    _test_drop(result, spec, samples, _clusters(entry, run), tolerance, alpha)
    return result


def _ci_text(c: Comparison, alpha: float) -> str:
    level = f"{100 * (1 - 2 * alpha):g} %"
    return f"{level} CI [{_fmt(c.ci_low or 0.0)}, {_fmt(c.ci_high or 0.0)}] ({c.ci_method})"


def _decide(c: Comparison, tolerance: float, alpha: float) -> None:
    """Set the verdict of a tested comparison from its Holm-adjusted p and its upper bound."""
    assert c.drop is not None and c.ci_high is not None and c.p_holm is not None
    drop, tol = _fmt(c.drop), _fmt(tolerance)
    test = (c.test or "").split(" (n=")[0]
    p_text = f"{test} p = {c.p_value:.4g} (Holm {c.p_holm:.4g})"
    ci = _ci_text(c, alpha)
    if c.drop > tolerance + EPSILON and c.p_holm < alpha:
        c.verdict = "regression"
        c.detail = f"drop {drop} > tolerance {tol} and {p_text} < alpha {alpha}; {ci}"
    elif c.ci_high <= tolerance + EPSILON:
        c.verdict = "pass"
        moved = f"improved by {_fmt(-c.drop)}" if c.drop < 0 else f"drop {drop}"
        c.detail = f"{moved}, {ci}: upper bound {_fmt(c.ci_high)} ≤ tolerance {tol}"
    else:
        c.verdict = "cannot decide"
        why = (
            f"{p_text} ≥ alpha {alpha}"
            if c.drop > tolerance + EPSILON
            else f"drop {drop} ≤ tolerance {tol}"
        )
        clustered = (
            f", design effect {c.design_effect:.2f} of clusters by {c.cluster_field}"
            if c.cluster_field
            else ""
        )
        needed = (
            f"about {c.n_needed} paired samples would decide a drop of {tol} at this run's "
            f"variance (n = {c.n} now{clustered})"
            if c.n_needed is not None
            else f"no feasible n decides a drop of {tol} at this run's variance (n = {c.n} now)"
        )
        c.detail = (
            f"drop {drop}, {ci}: upper bound {_fmt(c.ci_high)} > tolerance {tol} and {why}; "
            + needed
        )


def compare(
    entries: list[dict[str, Any]],
    runs: list[Run],
    tolerance: float = 0.05,
    alpha: float = 0.05,
    min_coverage: float = 0.95,
    headline_flags: dict[str, HeadlineSpec] | None = None,
) -> list[Comparison]:
    """Compare every baseline entry with the current run of the same task and model.

    Args:
        entries: Baseline entries from `read_baseline`.
        runs: The current runs.
        tolerance: Largest drop of the headline, in its own units, that is not a regression.
        alpha: Significance level a drop beyond `tolerance` must reach to be a regression.
        min_coverage: Smallest share of the baseline's samples the current run must have.
        headline_flags: Headline metrics chosen on the command line, by task.

    Returns:
        One comparison (with its verdict) per baseline entry, in the entries' order.
    """
    results = [
        _model_free_mismatch(entry, runs)
        or _compare_one(
            entry,
            [r for r in runs if r.task == entry["task"] and r.row_model == entry["model"]],
            headline_flags or {},
            tolerance,
            alpha,
            min_coverage,
        )
        for entry in entries
    ]
    tested = [c for c in results if c.p_value is not None]
    adjusted_p = holm([float(c.p_value or 0.0) for c in tested])
    for c, adjusted in zip(tested, adjusted_p, strict=True):
        c.p_holm = adjusted
        _decide(c, tolerance, alpha)
    return results


def _model_free_mismatch(entry: dict[str, Any], runs: list[Run]) -> Comparison | None:
    """A baseline row and the current runs of its task that disagree on being model-free."""
    task, model = str(entry["task"]), str(entry["model"])
    same_task = [r for r in runs if r.task == task]
    if not same_task or any(r.row_model == model for r in same_task):
        return None
    spec = _entry_spec(entry)
    if model == MODEL_FREE and not any(r.model_free for r in same_task):
        detail = "model-free in the baseline, but the current runs of the task call the model"
    elif model != MODEL_FREE and any(r.model_free for r in same_task):
        detail = (
            "the task is model-free now (its score does not depend on the model): write the "
            "baseline again with --write-baseline"
        )
    else:
        return None
    return Comparison(
        task,
        model,
        "not comparable",
        detail,
        setup=entry["setup"],
        headline=spec.name,
        direction=spec.direction,
        baseline_value=float(entry["value"]),
    )


def blocking_warnings(warnings: list[LogWarning]) -> list[LogWarning]:
    """The log warnings a gate cannot pass with: a log left out (future-dated, a disputed
    eval id) or two logs claiming one run (`docket.reports.trust`); a copy counted once is not.

    Args:
        warnings: `LoadedLogs.warnings` after `build_runs`.

    Returns:
        Those that block.
    """
    return [w for w in warnings if w.blocking]


def exit_code(
    comparisons: list[Comparison],
    errors: list[LogError],
    errored: int = 0,
    max_errors: int = 0,
    doubts: list[LogWarning] | None = None,
) -> int:
    """1 when any row regressed; else 2 when any row is not a pass, a log is unreadable or in
    doubt, or more samples errored than allowed; else 0.

    A shown regression wins over rows that cannot be decided or compared (a CI step that treats
    exit 2 as "needs more samples" must never hide a regression); exit 0 needs every row to pass.

    Args:
        comparisons: The comparisons from `compare`.
        errors: Logs that could not be read.
        errored: Errored sample epochs of the current runs (excluded from their metrics).
        max_errors: Errored sample epochs allowed before the gate is exit 2.
        doubts: Blocking log warnings (`blocking_warnings`): a log was left out or two logs
            claim one run, so the runs compared may not be the genuine ones.

    Returns:
        The process exit code: 0 (every row passed), 1 (a regression) or 2 (cannot decide,
        not comparable, untestable, missing, unreadable logs, or errored samples beyond
        `max_errors`).
    """
    if any(c.verdict == "regression" for c in comparisons):
        return EXIT_REGRESSION
    if errors or doubts or errored > max_errors or any(c.verdict != "pass" for c in comparisons):
        return EXIT_NOT_COMPARABLE
    return EXIT_OK


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def flip_lines(c: Comparison, limit: int = FLIPS_SHOWN) -> list[str]:
    """`worse: a, b (+3 more)` / `better: ...` lines of one comparison (empty when none)."""
    lines = []
    for name, ids in (("worse", c.worse), ("better", c.better)):
        if ids:
            more = f" (+{len(ids) - limit} more)" if len(ids) > limit else ""
            lines.append(f"{name} ({len(ids)}): {', '.join(ids[:limit])}{more}")
    return lines


def print_errored(console: Console, runs: list[Run], max_errors: int) -> None:
    """The runs with errored samples, and whether they exceed `--max-errors`.

    Args:
        console: Console printed to.
        runs: The current runs.
        max_errors: Errored sample epochs allowed.
    """
    total = errored_count(runs)
    if not total:
        return
    for line in errored_runs(runs):
        console.print(f"errored: {printable(line)}", soft_wrap=True, markup=False)
    verdict = "exceeds" if total > max_errors else "within"
    console.print(
        f"{total} errored samples (left out of every metric) {verdict} --max-errors {max_errors}",
        soft_wrap=True,
        markup=False,
    )


def print_comparisons(
    console: Console, comparisons: list[Comparison], errors: list[LogError]
) -> None:
    """The rich table of verdicts, the flipped samples, then any unreadable logs.

    Args:
        console: Console printed to.
        comparisons: The comparisons from `compare`.
        errors: Logs that could not be read.
    """
    table = Table(title="docket regress")
    columns = ("task", "model", "headline", "baseline", "current", "drop", "upper", "p (Holm)")
    for column in (*columns, "n / needed", "verdict"):
        table.add_column(column)
    colours = {v: "red" for v in (*BLOCKING, "regression")}
    colours |= {"pass": "green", "cannot decide": "yellow"}
    for c in comparisons:
        colour = colours.get(c.verdict, "default")
        arrow = {"higher": " ↑", "lower": " ↓"}.get(c.direction or "", " ?")
        needed = "" if c.n is None else f"{c.n} / {c.n_needed if c.n_needed else '–'}"
        table.add_row(
            escape(printable(c.task)),
            escape(printable(c.model)),
            escape(printable(c.headline)) + arrow,
            _num(c.baseline_value),
            _num(c.current_value),
            _num(c.drop),
            _num(c.ci_high),
            "–" if c.p_holm is None else f"{c.p_holm:.4f}",
            needed or "–",
            f"[{colour}]{c.verdict}[/{colour}]",
        )
    if not console.is_terminal:  # CI logs: do not squeeze the table into 80 columns
        console = Console(width=max(console.width, 160))
    console.print(table)
    for c in comparisons:
        line = f"{c.verdict}: {c.task} / {c.model}: {c.detail or c.verdict}"
        console.print(printable(line), soft_wrap=True, markup=False)
        if c.test:
            console.print(f"  test: {printable(c.test)}", soft_wrap=True, markup=False)
        for line in flip_lines(c):
            console.print(f"  {printable(line)}", soft_wrap=True, markup=False)
    counts = {v: sum(c.verdict == v for c in comparisons) for v in colours}
    summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n)
    console.print(f"{len(comparisons)} compared: {summary or 'nothing'}", soft_wrap=True)
    for error in errors:
        console.print(f"[red]error:[/red] {escape(printable(error))}", soft_wrap=True)
