"""`docket regress`: gate a run on a stored baseline of headline metrics.

A baseline JSON (`write_baseline`) keeps, per (task, model), the task version, task args, the
headline metric name and value, and every per-sample value. `compare` pairs each baseline entry
with the current run of the same task and model and decides:

- not comparable (exit 2): the task's version major N (of "N-X") changed, the task args or the
  headline metric differ, or the run is missing; so does any unreadable log or baseline;
- regression (exit 1): the headline dropped by more than `tolerance` (absolute, on the metric's
  own scale; higher is better) AND the drop is significant at `alpha` (one-sided):
  * paired bootstrap over the samples scored in both runs (10 000 resamples of sample ids, seed
    0) whenever the two runs share sample ids, the usual case of re-running the same task;
  * otherwise a pooled two-proportion z-test when both runs' sample scores are 0/1;
  * otherwise an unpaired bootstrap of the difference of means;
  * with no per-sample values a drop cannot be tested and is reported, not flagged;
- otherwise ok (exit 0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.reports.logs import LogError
from docket.reports.runs import Run
from docket.reports.stats import (
    is_binary,
    paired_bootstrap_p,
    two_proportion_z_test,
    unpaired_bootstrap_p,
)
from rich.console import Console
from rich.table import Table

BASELINE_FORMAT = "docket-baseline/1"
ENTRY_FIELDS = ("task", "version", "task_args", "model", "headline", "value", "samples")
EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file and field."""


@dataclass
class Comparison:
    """One baseline entry against the current run."""

    task: str
    model: str
    verdict: str  # ok | improved | regression | not comparable | missing
    detail: str
    baseline_value: float | None = None
    current_value: float | None = None
    drop: float | None = None
    test: str | None = None
    p_value: float | None = None

    @property
    def blocking(self) -> bool:
        """True when the verdict makes the comparison itself invalid (exit 2)."""
        return self.verdict in ("not comparable", "missing")


def _headline_name(run: Run) -> str:
    return f"{run.headline_score}/{run.headline_metric}"


def baseline_data(runs: list[Run]) -> dict[str, Any]:
    """The baseline document for every scored run."""
    return {
        "format": BASELINE_FORMAT,
        "entries": [
            {
                "task": run.task,
                "version": run.version,
                "task_args": run.task_args,
                "model": run.model_label,
                "headline": _headline_name(run),
                "value": run.headline_value,
                "samples": run.samples,
            }
            for run in runs
            if run.scored
        ],
    }


def write_baseline(runs: list[Run], path: str | Path) -> int:
    """Write the baseline JSON; return how many entries it holds."""
    data = baseline_data(runs)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return len(data["entries"])


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_baseline(path: str | Path) -> list[dict[str, Any]]:
    """Entries of a baseline file, validated; `BaselineError` names the file and the field."""
    source = Path(path)
    try:
        data = json.loads(source.read_text())
    except FileNotFoundError:
        raise BaselineError(f"{source}: baseline file not found") from None
    except (ValueError, RecursionError) as ex:  # bad JSON or UTF-8, huge ints, deep nesting
        raise BaselineError(f"{source}: not valid JSON ({type(ex).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise BaselineError(f"{source}: field 'format' must be {BASELINE_FORMAT!r}")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise BaselineError(f"{source}: field 'entries' must be a list")
    for index, entry in enumerate(entries):
        missing = [f for f in ENTRY_FIELDS if not isinstance(entry, dict) or f not in entry]
        if missing:
            raise BaselineError(f"{source}: entries[{index}] lacks field '{missing[0]}'")
        samples = entry["samples"]
        if not _is_number(entry["value"]) or not isinstance(samples, dict):
            raise BaselineError(f"{source}: entries[{index}] field 'value' or 'samples' malformed")
        if not all(_is_number(v) for v in samples.values()):
            raise BaselineError(f"{source}: entries[{index}] 'samples' must map ids to numbers")
    return entries


def version_major(version: str) -> str:
    """N of a task version "N-X" (the part that changes when scores change meaning)."""
    return str(version).split("-", 1)[0]


def significance(baseline: dict[str, float], current: dict[str, float]) -> tuple[str, float]:
    """(test name, one-sided p-value) for H1: baseline is better than current."""
    if set(baseline) & set(current):
        p, shared = paired_bootstrap_p(baseline, current)
        return f"paired bootstrap (n={shared})", p
    a, b = list(baseline.values()), list(current.values())
    if is_binary(a) and is_binary(b):
        _, p = two_proportion_z_test(sum(a), len(a), sum(b), len(b))
        return f"two-proportion z (n={len(a)}/{len(b)})", p
    return f"unpaired bootstrap (n={len(a)}/{len(b)})", unpaired_bootstrap_p(a, b)


def _compare_one(
    entry: dict[str, Any], candidates: list[Run], tolerance: float, alpha: float
) -> Comparison:
    task, model = str(entry["task"]), str(entry["model"])
    if not candidates:
        return Comparison(task, model, "missing", "no scored run of this task and model")
    same_major = [
        r for r in candidates if version_major(r.version) == version_major(entry["version"])
    ]
    if not same_major:
        found = ", ".join(sorted({r.version for r in candidates}))
        return Comparison(
            task,
            model,
            "not comparable",
            f"version {entry['version']} in baseline, {found} now (N changed)",
        )
    same_args = [r for r in same_major if r.task_args == entry["task_args"]]
    if not same_args:
        return Comparison(
            task,
            model,
            "not comparable",
            f"task args {entry['task_args']} in baseline, {same_major[0].task_args} now",
        )
    run = same_args[0]
    if _headline_name(run) != entry["headline"]:
        return Comparison(
            task,
            model,
            "not comparable",
            f"headline {entry['headline']} in baseline, {_headline_name(run)} now",
        )
    base_value, value = float(entry["value"]), float(run.headline_value or 0.0)
    drop = base_value - value
    result = Comparison(task, model, "ok", "", base_value, value, drop)
    base_samples = {str(k): float(v) for k, v in entry["samples"].items()}
    if drop <= 0:
        result.verdict = "improved" if drop < 0 else "ok"
        result.detail = "no drop"
        return result
    if not base_samples or not run.samples:
        result.detail = "drop not testable: no per-sample values"
        return result
    result.test, result.p_value = significance(base_samples, run.samples)
    significant = result.p_value < alpha
    if drop > tolerance and significant:
        result.verdict = "regression"
        result.detail = f"drop {drop:.3f} > tolerance {tolerance} and p < {alpha}"
    elif drop > tolerance:
        result.detail = f"drop {drop:.3f} > tolerance but not significant (p ≥ {alpha})"
    else:
        result.detail = f"drop {drop:.3f} within tolerance {tolerance}"
    return result


def compare(
    entries: list[dict[str, Any]], runs: list[Run], tolerance: float = 0.05, alpha: float = 0.05
) -> list[Comparison]:
    """Compare every baseline entry with the current runs of the same task and model."""
    scored = [r for r in runs if r.scored]
    return [
        _compare_one(
            entry,
            [r for r in scored if r.task == entry["task"] and r.model_label == entry["model"]],
            tolerance,
            alpha,
        )
        for entry in entries
    ]


def exit_code(comparisons: list[Comparison], errors: list[LogError]) -> int:
    """2 when anything is not comparable or unreadable, else 1 on any regression, else 0."""
    if errors or any(c.blocking for c in comparisons):
        return EXIT_NOT_COMPARABLE
    if any(c.verdict == "regression" for c in comparisons):
        return EXIT_REGRESSION
    return EXIT_OK


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def print_comparisons(
    console: Console, comparisons: list[Comparison], errors: list[LogError]
) -> None:
    """The rich table of verdicts, then any unreadable logs."""
    table = Table(title="docket regress")
    for column in ("task", "model", "baseline", "current", "drop", "test", "p", "verdict", "why"):
        table.add_column(column)
    colours = {"regression": "red", "not comparable": "red", "missing": "red", "improved": "green"}
    for c in comparisons:
        colour = colours.get(c.verdict, "default")
        p_text = "–" if c.p_value is None else f"{c.p_value:.4f}"
        table.add_row(
            c.task,
            c.model,
            _num(c.baseline_value),
            _num(c.current_value),
            _num(c.drop),
            c.test or "–",
            p_text,
            f"[{colour}]{c.verdict}[/{colour}]",
            c.detail,
        )
    if not console.is_terminal:  # CI logs: do not squeeze the table into 80 columns
        console = Console(width=max(console.width, 160))
    console.print(table)
    for c in comparisons:
        if c.verdict in ("regression", "not comparable", "missing"):
            console.print(f"{c.verdict}: {c.task} / {c.model}: {c.detail}", soft_wrap=True)
    counts = {v: sum(c.verdict == v for c in comparisons) for v in colours}
    summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n)
    console.print(f"{len(comparisons)} compared: {summary or 'all ok'}", soft_wrap=True)
    for error in errors:
        console.print(f"[red]error:[/red] {error}", soft_wrap=True)
