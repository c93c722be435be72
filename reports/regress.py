"""`docket regress`: gate a run on a stored baseline of declared headlines.

A baseline (`docket-baseline/2`, written by `write_baseline`) keeps, per leaderboard row (task,
version, task args, model + args, solver, non-default generation config, epochs, model roles),
the headline declaration (metric, direction, per-sample value kind), its value and every
sample's value ((time, event) pairs for survival headlines). `compare` pairs each entry with the
current run of the same row and decides, in this order:

- exit 2, not comparable: no current run of the row; the setup, the version's N (of "N-X"), the
  task args or the headline declaration differ; the current run has no score (with its reason);
  the headline's direction is unknown; the current run covers less than `min_coverage` of the
  baseline's sample ids; or the drop cannot be tested (no per-sample values). Unreadable logs and
  a bad baseline are exit 2 as well.
- exit 1, regression: the headline moved the wrong way by more than `tolerance` (strictly;
  absolute, on the metric's scale) AND a one-sided paired test on the shared samples is
  significant at `alpha`: exact McNemar for 0/1 values, else a paired bootstrap of the mean, or
  of the Kaplan-Meier event probability by the horizon for survival headlines (10 000 resamples
  of sample ids, seed 0).
- exit 0 otherwise. Every comparison lists the samples that flipped.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docket.core.headline import HeadlineSpec
from docket.reports import survival
from docket.reports.headline import flag_for
from docket.reports.logs import LogError
from docket.reports.runs import Run
from docket.reports.stats import paired_mean_test

BASELINE_FORMAT = "docket-baseline/2"
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
BLOCKING = ("missing", "not comparable", "untestable", "coverage")
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
    verdict: str  # ok | improved | regression | missing | not comparable | untestable | coverage
    detail: str
    setup: dict[str, str] = field(default_factory=dict)
    headline: str = ""
    direction: str | None = None
    baseline_value: float | None = None
    current_value: float | None = None
    drop: float | None = None
    test: str | None = None
    p_value: float | None = None
    coverage: float | None = None
    worse: list[str] = field(default_factory=list)
    better: list[str] = field(default_factory=list)

    @property
    def blocking(self) -> bool:
        """True when the comparison itself is invalid (exit 2)."""
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
        "model": run.model_label,
        "setup": run.setup,
        "headline": run.headline.to_json(),
        "value": run.headline_value,
        "n": run.n,
        "samples": _samples_json(run),
        "log": run.log,
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


def read_baseline(path: str | Path) -> list[dict[str, Any]]:
    """Entries of a baseline file, validated; `BaselineError` names the file and the field.

    Args:
        path: The baseline JSON written by `write_baseline`.

    Returns:
        The validated entries, one per (task, model).

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
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise BaselineError(f"{source}: field 'format' must be {BASELINE_FORMAT!r}")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise BaselineError(f"{source}: field 'entries' must be a list")
    for index, entry in enumerate(entries):
        _check_entry(source, index, entry)
    return entries


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


def _test(spec: HeadlineSpec, base: dict[str, Any], now: dict[str, Any]) -> tuple[str, float, int]:
    """One-sided test of H1 "the baseline is better" on the shared samples."""
    if spec.value == "survival":
        base_obs = {k: [(float(t), int(e)) for t, e in v] for k, v in base.items()}
        now_obs = {k: [(float(t), int(e)) for t, e in v] for k, v in now.items()}
        first, second = (now_obs, base_obs) if spec.direction == "lower" else (base_obs, now_obs)
        p, n = survival.paired_bootstrap_p(first, second, float(spec.horizon or 0))
        return "paired bootstrap (Kaplan-Meier)", p, n
    first_m, second_m = (now, base) if spec.direction == "lower" else (base, now)
    return paired_mean_test(first_m, second_m, "greater")


def _current_samples(run: Run) -> dict[str, Any]:
    if run.value_kind == "survival":
        return {k: [list(p) for p in v] for k, v in run.observations.items()}
    return dict(run.samples)


def _compare_one(
    entry: dict[str, Any],
    candidates: list[Run],
    flags: dict[str, HeadlineSpec],
    tolerance: float,
    alpha: float,
    min_coverage: float,
) -> Comparison:
    task, model = str(entry["task"]), str(entry["model"])
    spec = _entry_spec(entry)
    result = Comparison(task, model, "ok", "", setup=entry["setup"], headline=spec.name)
    result.baseline_value = float(entry["value"])
    if spec.direction is None:
        flag = flag_for(task, flags)
        if flag is not None and flag.name == spec.name:
            spec = HeadlineSpec(**{**spec.__dict__, "direction": flag.direction})
    result.direction = spec.direction
    if not candidates:
        result.verdict, result.detail = "missing", "no run of this task and model in the logs"
        return result
    same_setup = [r for r in candidates if r.setup == entry["setup"]]
    if not same_setup:
        result.verdict = "not comparable"
        result.detail = "setup differs: " + _differences(entry["setup"], candidates[0].setup)
        return result
    major = [r for r in same_setup if version_major(r.version) == version_major(entry["version"])]
    if not major:
        found = ", ".join(sorted({r.version for r in same_setup}))
        result.verdict = "not comparable"
        result.detail = f"version {entry['version']} in baseline, {found} now (N changed)"
        return result
    same_args = [r for r in major if r.task_args == entry["task_args"]]
    if not same_args:
        result.verdict = "not comparable"
        result.detail = f"task args {entry['task_args']} in baseline, {major[0].task_args} now"
        return result
    run = same_args[0]
    if not run.scored or run.headline is None:
        result.verdict = "not comparable"
        result.detail = f"current run has no score: {run.unscored_reason or 'no headline'}"
        return result
    result.current_value = run.headline_value
    now_spec = run.headline
    if now_spec.comparable_key()[::2] != spec.comparable_key()[::2] or (
        now_spec.direction is not None and now_spec.direction != spec.direction
    ):
        result.verdict = "not comparable"
        result.detail = (
            f"headline {spec.name} ({spec.direction}, {spec.value}) in baseline, "
            f"{now_spec.name} ({now_spec.direction}, {now_spec.value}) now"
        )
        return result
    if spec.direction not in ("higher", "lower"):
        result.verdict = "untestable"
        result.detail = (
            f"direction of {spec.name} unknown: give --headline {task}={spec.name}:higher|lower"
        )
        return result
    base_samples, now_samples = entry["samples"], _current_samples(run)
    shared = set(base_samples) & set(now_samples)
    if base_samples:
        result.coverage = len(shared) / len(base_samples)
        result.worse, result.better = flips(
            base_samples, now_samples, spec.value or "continuous", spec.direction
        )
        if result.coverage + EPSILON < min_coverage:
            missing = sorted(set(base_samples) - shared)
            shown = ", ".join(missing[:10]) + (
                f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
            )
            result.verdict = "coverage"
            result.detail = (
                f"current run covers {len(shared)} of {len(base_samples)} baseline samples "
                f"({result.coverage:.1%}), below --min-coverage {min_coverage:.0%}; "
                f"missing {1 - result.coverage:.1%}: {shown}"
            )
            return result
    assert run.headline_value is not None
    sign = 1.0 if spec.direction == "higher" else -1.0
    result.drop = sign * (result.baseline_value - run.headline_value)
    if abs(result.drop) <= EPSILON:
        result.drop = 0.0
    if result.drop <= 0:
        result.verdict = "improved" if result.drop < 0 else "ok"
        result.detail = "no drop" if result.drop == 0 else "improved"
        return result
    if not shared:
        result.verdict = "untestable"
        result.detail = f"drop {_fmt(result.drop)} cannot be tested: no per-sample values"
        return result
    result.test, result.p_value, n = _test(spec, base_samples, now_samples)
    result.test = f"{result.test} (n={n})"
    beyond = result.drop > tolerance + EPSILON
    significant = result.p_value < alpha
    drop_text = f"drop {_fmt(result.drop)}"
    tol_text = f"tolerance {_fmt(tolerance)}"
    if beyond and significant:
        result.verdict = "regression"
        result.detail = f"{drop_text} > {tol_text} and p = {result.p_value:.4g} < alpha {alpha}"
    elif beyond:
        result.detail = (
            f"{drop_text} > {tol_text} but p = {result.p_value:.4g} ≥ alpha {alpha} "
            "(not significant)"
        )
    else:
        result.detail = f"{drop_text} ≤ {tol_text} (accepted)"
    return result


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
    return [
        _compare_one(
            entry,
            [r for r in runs if r.task == entry["task"] and r.model_label == entry["model"]],
            headline_flags or {},
            tolerance,
            alpha,
            min_coverage,
        )
        for entry in entries
    ]


def exit_code(comparisons: list[Comparison], errors: list[LogError]) -> int:
    """2 when anything is not comparable, untestable or unreadable, else 1 on a regression.

    Args:
        comparisons: The comparisons from `compare`.
        errors: Logs that could not be read.

    Returns:
        The process exit code: 0 (no regression), 1 (regression) or 2 (not comparable).
    """
    if errors or any(c.blocking for c in comparisons):
        return EXIT_NOT_COMPARABLE
    if any(c.verdict == "regression" for c in comparisons):
        return EXIT_REGRESSION
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
    for column in ("task", "model", "headline", "baseline", "current", "drop", "p", "verdict"):
        table.add_column(column)
    colours = {v: "red" for v in (*BLOCKING, "regression")} | {"improved": "green"}
    for c in comparisons:
        colour = colours.get(c.verdict, "default")
        arrow = {"higher": " ↑", "lower": " ↓"}.get(c.direction or "", " ?")
        table.add_row(
            escape(c.task),
            escape(c.model),
            c.headline + arrow,
            _num(c.baseline_value),
            _num(c.current_value),
            _num(c.drop),
            "–" if c.p_value is None else f"{c.p_value:.4f}",
            f"[{colour}]{c.verdict}[/{colour}]",
        )
    if not console.is_terminal:  # CI logs: do not squeeze the table into 80 columns
        console = Console(width=max(console.width, 160))
    console.print(table)
    for c in comparisons:
        line = f"{c.verdict}: {c.task} / {c.model}: {c.detail or c.verdict}"
        console.print(line, soft_wrap=True, markup=False)
        if c.test:
            console.print(f"  test: {c.test}", soft_wrap=True, markup=False)
        for line in flip_lines(c):
            console.print(f"  {line}", soft_wrap=True, markup=False)
    counts = {v: sum(c.verdict == v for c in comparisons) for v in colours}
    summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n)
    console.print(f"{len(comparisons)} compared: {summary or 'all ok'}", soft_wrap=True)
    for error in errors:
        console.print(f"[red]error:[/red] {error}", soft_wrap=True)
