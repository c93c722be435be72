"""`docket report LOGDIR -o OUT`: a static leaderboard (HTML + Markdown + JSON) from Inspect logs.

One section per benchmark (`log.eval.metadata["benchmark"]`, else the task), one table per task
(name, version, task args, data split: rows of different splits are never ranked together), one
row per identity (`runs.Run.identity`). Each row: rank from pairwise paired tests
(Holm-corrected; `stats.pairwise_ranks`), the declared headline with its 95 % CI, samples,
the split's short hash, tokens, estimated cost, wall time, per-category values and the log.
Every pair that is not separated and has fewer shared samples than it would take to tell a
difference of the tolerance's size (`power.needed_n`) is marked *underpowered*, as are its
rows and rows below 10 samples; an underpowered row is never ranked above a row it does not
beat. A section also shows its tasks' headlines side by side per model and, for survival
headlines, the curve S(t) over turns 0..T. Unscored runs state why; superseded runs are listed.
Beside each score: errored samples (left out), the model's behaviour (`docket.reports.health`)
and why scored samples have no value. A model-free task's runs form one method table.
"""

from __future__ import annotations

import html
import itertools
import json
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from inspect_ai.log import bundle_log_dir
from jinja2 import Environment, FileSystemLoader, select_autoescape
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docket.core import logstore
from docket.core.headline import HeadlineSpec
from docket.core.text import printable
from docket.reports import plots, survival
from docket.reports.headline import MEAN_METRICS
from docket.reports.health import behaviour_parts, errored_text, failure_parts
from docket.reports.history import history_data
from docket.reports.logs import LogError, load_logs
from docket.reports.overrides import apply_overrides, read_overrides
from docket.reports.power import needed_n, value_scale
from docket.reports.prices import PriceTable, load_prices
from docket.reports.regress import (
    blocking_warnings,
    compare,
    errored_count,
    errored_runs,
    exit_code,
    flip_lines,
    read_baseline_file,
)
from docket.reports.runs import MODEL_FREE, Run, build_runs, unify_kinds
from docket.reports.stats import (
    SMALL_N,
    Interval,
    holm,
    is_binary,
    mean_interval,
    paired_mean_test,
    pairwise_ranks,
    stderr_interval,
)
from docket.reports.trust import LogWarning

TEMPLATES = Path(__file__).parent / "templates"
ALPHA = 0.05
#: Difference of the headline a pairwise comparison should be able to show (as regress's).
TOLERANCE = 0.05


class EmptyLogDir(FileNotFoundError):
    """A log directory with no Inspect logs in it."""


@dataclass
class ReportOptions:
    """What `docket report` may add to the logs: flags, overrides, prices, history, a baseline."""

    headline_flags: dict[str, HeadlineSpec] = field(default_factory=dict)
    overrides: str | None = None
    prices: str | None = None
    history: str | None = None
    baseline: str | None = None
    bundle: bool = False
    tolerance: float = TOLERANCE
    #: Errored samples the baseline comparison allows before it is exit 2.
    max_errors: int = 0


@dataclass
class ReportFiles:
    """What `build_report` wrote, and the logs it could not read."""

    html: Path
    markdown: Path
    json: Path
    bundle: Path | None
    errors: list[LogError] = field(default_factory=list)
    #: Logs left out or in doubt (`docket.reports.trust`), also shown in the report.
    warnings: list[LogWarning] = field(default_factory=list)
    baseline_exit: int | None = None
    #: The report data (`leaderboard_data` plus comparison and history), for `print_summary`.
    data: dict[str, Any] = field(default_factory=dict)


def headline_interval(run: Run) -> Interval | None:
    """95 % CI of the headline; None for n < 2 or when it cannot be estimated.

    Survival: Kaplan-Meier (Greenwood log-log; Wilson where S is 0 or 1). A per-sample mean:
    Wilson for 0/1 values, percentile bootstrap otherwise. Another metric: ± 1.96 x the log's
    stderr when the log has one.
    """
    spec = run.headline
    if run.headline_value is None or spec is None or run.n < 2:
        return None
    if spec.value == "survival":
        return survival.headline_interval(run.observations, spec.horizon or 0)
    values = list(run.samples.values())
    is_mean = spec.metric in MEAN_METRICS or (
        abs(sum(values) / len(values) - run.headline_value) < 1e-9
    )
    if is_mean:
        return mean_interval(values, binary=is_binary(values))
    if run.headline_stderr is not None and run.headline_stderr > 0:
        return stderr_interval(run.headline_value, run.headline_stderr)
    return None


def _shared_difference(a: Run, b: Run, ids: list[str]) -> float:
    spec = a.headline
    assert spec is not None
    if spec.value == "survival":
        first = survival.headline_value({k: a.observations[k] for k in ids}, spec.horizon or 0)
        second = survival.headline_value({k: b.observations[k] for k in ids}, spec.horizon or 0)
        return float(first or 0.0) - float(second or 0.0)
    return sum(a.samples[k] - b.samples[k] for k in ids) / len(ids)


def _pair_spread(a: Run, b: Run, ids: list[str], binary: bool) -> tuple[str, float, float]:
    """(power route, second moment of the paired difference, scale) of two rows' shared ids."""
    spec = a.headline
    assert spec is not None
    if spec.value == "survival":
        horizon = float(spec.horizon or 0)
        diffs = [
            survival.event_by(a.observations[k], horizon)
            - survival.event_by(b.observations[k], horizon)
            for k in ids
        ]
        return "normal", sum(d * d for d in diffs) / len(ids), 1.0
    diffs = [a.samples[k] - b.samples[k] for k in ids]
    moment = sum(d * d for d in diffs) / len(ids)
    if binary:
        return "binary", moment, 1.0
    return "normal", moment, value_scale([v for k in ids for v in (a.samples[k], b.samples[k])])


def pairwise(
    runs: list[Run], alpha: float = ALPHA, tolerance: float = TOLERANCE
) -> tuple[set[tuple[int, int]], list[dict[str, Any]]]:
    """Two-sided paired tests of every pair on shared sample ids, Holm-corrected.

    Returns the "row i beats row j" relation (corrected p < alpha and i better in the headline's
    direction) and one record per pair for the report: its status is "separated", or
    "underpowered" when not separated and the shared samples are fewer than `n_needed` (the
    paired samples that would tell a difference of `tolerance` at this pair's spread), else
    "not separated".
    """
    spec = runs[0].headline
    pairs: list[dict[str, Any]] = []
    for i, j in itertools.combinations(range(len(runs)), 2):
        a, b = runs[i], runs[j]
        keys_a = a.observations if spec and spec.value == "survival" else a.samples
        keys_b = b.observations if spec and spec.value == "survival" else b.samples
        ids = sorted(set(keys_a) & set(keys_b))
        record: dict[str, Any] = {
            "a": i,
            "b": j,
            "n": len(ids),
            "test": None,
            "p": None,
            "n_needed": None,
            "status": "underpowered",
        }
        if ids and spec is not None:
            if spec.value == "survival":
                p, _ = survival.paired_bootstrap_p(
                    a.observations, b.observations, float(spec.horizon or 0), "two-sided"
                )
                record["test"] = "paired bootstrap (Kaplan-Meier)"
            else:
                record["test"], p, _ = paired_mean_test(a.samples, b.samples, "two-sided")
            record["p"] = p
            record["difference"] = _shared_difference(a, b, ids)
            route, moment, scale = _pair_spread(a, b, ids, record["test"] == "McNemar exact")
            record["n_needed"] = needed_n(route, moment, tolerance, alpha, scale=scale)
        pairs.append(record)
    tested = [r for r in pairs if r["p"] is not None]
    for record, adjusted in zip(tested, holm([r["p"] for r in tested]), strict=True):
        record["p_holm"] = adjusted
    beats: set[tuple[int, int]] = set()
    direction = spec.direction if spec is not None else None
    for r in tested:
        needed = r["n_needed"]
        powered = needed is not None and r["n"] >= needed
        r["status"] = "not separated" if powered else "underpowered"
        if r["p_holm"] >= alpha or direction is None or r["difference"] == 0:
            continue
        r["status"] = "separated"
        a_better = (r["difference"] > 0) == (direction == "higher")
        beats.add((r["a"], r["b"]) if a_better else (r["b"], r["a"]))
    return beats, pairs


def _common_args(runs: list[Run]) -> dict[str, Any]:
    """The task args every run shares (a method table's header)."""
    common = dict(runs[0].task_args)
    for run in runs[1:]:
        common = {k: v for k, v in common.items() if k in run.task_args and run.task_args[k] == v}
    return common


def _common_setup(runs: list[Run]) -> dict[str, str]:
    common = dict(runs[0].setup)
    for run in runs[1:]:
        common = {k: v for k, v in common.items() if run.setup.get(k) == v}
    return common


def health_entry(run: Run) -> dict[str, Any]:
    """What a row shows beside its score: errored samples, model behaviour, why values are
    missing, the token budgets the task forces and the max_tokens its calls carried.

    Args:
        run: One run.

    Returns:
        JSON-ready fields merged into the run's leaderboard entry.
    """
    return {
        "errored": run.errored_samples,
        "errored_text": errored_text(run.health),
        "behaviour": behaviour_parts(run.health),
        "failures": failure_parts(run.health),
        "valueless": run.valueless,
        "health_known": run.health.samples > 0,
        "health": run.health.to_json(),
        "forced_max_tokens": run.forced_max_tokens,
        "max_tokens_seen": run.health.max_tokens,
    }


def health_text(e: dict[str, Any]) -> str:
    """The model-behaviour cell: `unparsed 2/5; message limit 1/5`, a sentence when nothing
    went wrong, or `–` (no samples in the log)."""
    if not e["health_known"]:
        return "–"
    if e.get("ran_with") and not e["behaviour"]:
        return "no model call"
    return "; ".join(e["behaviour"]) or HEALTHY


#: The health cell of a run whose scored samples show no failure the health reads.
HEALTHY = "ok: every answer parsed, no tool-call error, refusal, limit hit or cut reply"


def missing_text(e: dict[str, Any]) -> str:
    """Why scored samples have no headline value (empty when every one has a value)."""
    if not e["valueless"]:
        return ""
    why = ", ".join(e["failures"]) or "no failure flag or missing logprobs recorded"
    truncated = [b for b in e["behaviour"] if b.startswith("truncated")]
    return f"{e['valueless']} scored samples without a value: {', '.join([why, *truncated])}"


def _callers(by_caller: dict[str, list[int]]) -> str:
    """`the model under test's 512, the judge's 256` (`model` is the model under test)."""
    named = {"model": "the model under test"}
    return ", ".join(
        f"{named.get(caller, f'the {caller}')}'s {'/'.join(map(str, values))}"
        for caller, values in by_caller.items()
    )


def budget_text(e: dict[str, Any]) -> str:
    """The reply-length limits the calls carried, as a sentence (or empty).

    E.g. `the task set its own reply limit (max_tokens): calls carried the model under test's
    512 where the run asked for 256` and `replies were limited to (max_tokens) the model under
    test's 256, the judge's 1024`.
    """
    parts = []
    forced = e["forced_max_tokens"]
    if isinstance(forced, dict) and isinstance(forced.get("calls"), dict):
        parts.append(
            "the task set its own reply limit (max_tokens): calls carried "
            f"{_callers(forced['calls'])} where the run asked for {forced.get('run')}"
        )
    elif forced is not None:
        parts.append(f"the task set its own reply limit (max_tokens): {json.dumps(forced)}")
    seen = e["max_tokens_seen"]
    if seen and not parts:
        parts.append(f"replies were limited to (max_tokens) {_callers(seen)}")
    return "; ".join(parts)


def _entry(
    run: Run, ci: Interval | None, rank: str, common: dict[str, str], prices: PriceTable
) -> dict[str, Any]:
    cost, missing = prices.cost(run.usage)
    return health_entry(run) | {
        "rank": rank,
        "model": run.method_label if run.model_free else run.model_label,
        "ran_with": run.model_label if run.model_free else None,
        "setup": {k: v for k, v in run.setup.items() if common.get(k) != v},
        "value": run.headline_value,
        "ci_low": None if ci is None else ci.low,
        "ci_high": None if ci is None else ci.high,
        "ci_method": None if ci is None else ci.method,
        "n": run.n,
        "small_n": run.n < SMALL_N,
        "underpowered": run.n < SMALL_N,
        "split": run.split_short if run.split else None,
        "split_sha256": run.split,
        "tokens": run.tokens,
        "cost": cost,
        "cost_missing": missing,
        "wall_seconds": run.wall_seconds,
        "metrics": run.metrics,
        "categories": run.categories,
        "overrides": run.overrides,
        "notes": run.notes,
        "log": run.log,
        "method_counters": run.method_counters,
    }


def _sort_key(entry: dict[str, Any], direction: str | None) -> tuple[Any, ...]:
    rank = entry["rank"].lstrip("=")
    value = entry["value"] or 0.0
    return (int(rank) if rank.isdigit() else 0, -value if direction != "lower" else value)


def _ranked_pairs(
    runs: list[Run], spec: HeadlineSpec, alpha: float, tolerance: float
) -> tuple[list[str], list[dict[str, Any]], set[frozenset[int]]]:
    """Each run's rank, the pairwise tests and the pairs too small to tell apart."""
    beats, pairs = pairwise(runs, alpha, tolerance)
    weak = {frozenset((r["a"], r["b"])) for r in pairs if r["status"] == "underpowered"}
    if spec.direction in ("higher", "lower"):
        ranks = pairwise_ranks(len(runs), beats, [run.n < SMALL_N for run in runs], weak)
    else:
        ranks = ["–"] * len(runs)
    return ranks, pairs, weak


def _name_methods(
    runs: list[Run], entries: list[dict[str, Any]], common_args: dict[str, Any]
) -> None:
    """Name each model-free row by the task args its rows do not share."""
    for run, e in zip(runs, entries, strict=True):
        differing = {
            k: v for k, v in run.task_args.items() if k not in common_args or common_args[k] != v
        }
        e["model"] = replace(run, task_args=differing).method_label


def _label(entries: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> list[str]:
    """Label each entry (model and differing setup) and name the pairs by those labels."""
    labels = [e["model"] + "".join(f" {k}={v}" for k, v in e["setup"].items()) for e in entries]
    for e, text in zip(entries, labels, strict=True):
        e["label"] = text
    for record in pairs:
        record["a"], record["b"] = labels[record["a"]], labels[record["b"]]
    return labels


def _survival_curves(
    runs: list[Run], spec: HeadlineSpec, order: list[int], labels: list[str]
) -> dict[str, Any]:
    """The Kaplan-Meier curve of each survival row, by label, in table order."""
    if spec.value != "survival":
        return {}
    curves: dict[str, Any] = {}
    for i in order:
        c = survival.curve(runs[i].observations, spec.horizon or 0)
        if c is not None:
            curves[labels[i]] = {
                "turns": c.turns,
                "survival": c.survival,
                "low": c.low,
                "high": c.high,
                "n": c.n,
            }
    return curves


def _pooled(runs: list[Run]) -> dict[str, Any]:
    """What the rows declare together: chance line, categories, metric names and tags."""
    return {
        "chance": next((run.chance for run in runs if run.chance), None),
        "categories": sorted({c for run in runs for c in run.categories}),
        "metric_names": sorted({m for run in runs for m in run.metrics}),
        "tags": sorted({t for run in runs for t in run.tags}),
    }


def table_data(
    runs: list[Run], prices: PriceTable, alpha: float = ALPHA, tolerance: float = TOLERANCE
) -> dict[str, Any]:
    """One task's table: ranked entries, pairwise tests, categories and survival curves."""
    first = runs[0]
    spec = first.headline
    assert spec is not None
    intervals = [headline_interval(run) for run in runs]
    ranks, pairs, weak = _ranked_pairs(runs, spec, alpha, tolerance)
    common = _common_setup(runs)
    entries = [
        _entry(r, ci, rank, common, prices)
        for r, ci, rank in zip(runs, intervals, ranks, strict=True)
    ]
    for index, e in enumerate(entries):
        e["underpowered"] = e["underpowered"] or any(index in pair for pair in weak)
    common_args = _common_args(runs) if first.model_free else first.task_args
    if first.model_free:
        _name_methods(runs, entries, common_args)
    labels = _label(entries, pairs)
    order = sorted(range(len(entries)), key=lambda i: _sort_key(entries[i], spec.direction))
    pooled = _pooled(runs)
    return {
        "kind": "method" if first.model_free else "model",
        "task": first.task,
        "version": first.version,
        "task_args": common_args,
        "split": first.split_short if first.split else None,
        "split_sha256": first.split,
        "tolerance": tolerance,
        "headline": spec.to_json() | {"name": spec.name, "arrow": spec.arrow},
        "chance": pooled["chance"],
        "common_setup": common,
        "category_field": first.category_field,
        "categories": pooled["categories"],
        "metric_names": pooled["metric_names"],
        "entries": [entries[i] for i in order],
        "pairwise": pairs,
        "alpha": alpha,
        "survival": _survival_curves(runs, spec, order, labels),
        "tags": pooled["tags"],
    }


def _side_by_side(tables: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Per model, each task's headline next to the others (only for several tasks)."""
    tables = [t for t in tables if t["kind"] == "model"]
    if len(tables) < 2:
        return None
    columns = [
        f"{t['task']} {t['headline']['name']} {t['headline']['arrow']}"
        + (f" (split {t['split']})" if t["split"] else "")
        for t in tables
    ]
    rows: dict[str, list[dict[str, Any] | None]] = {}
    for index, table in enumerate(tables):
        for e in table["entries"]:
            key = e["model"] + "".join(
                f" {k}={v}" for k, v in e["setup"].items() if not k.startswith("role ")
            )
            cells = rows.setdefault(key, [None] * len(tables))
            cells[index] = {k: e[k] for k in ("value", "ci_low", "ci_high", "n", "rank")}
    return {"columns": columns, "rows": [{"model": k, "cells": v} for k, v in sorted(rows.items())]}


def leaderboard_data(
    runs: list[Run],
    errors: list[LogError],
    prices: PriceTable,
    alpha: float = ALPHA,
    tolerance: float = TOLERANCE,
) -> dict[str, Any]:
    """Every number of the report as JSON-ready data (plots are drawn from it)."""
    sections: dict[str, dict[str, list[Run]]] = {}
    for run in runs:
        if run.scored:
            # a model-free task's methods (its task args) share one table
            table = (
                json.dumps([run.task, run.version, run.split, MODEL_FREE], default=str)
                if run.model_free
                else run.table_key
            )
            sections.setdefault(run.benchmark, {}).setdefault(
                table + json.dumps(run.headline.comparable_key() if run.headline else ""),
                [],
            ).append(run)
    benchmarks = []
    for name in sorted(sections):
        for group in sections[name].values():
            unify_kinds(group)
        tables = [
            table_data(group, prices, alpha, tolerance)
            for _, group in sorted(sections[name].items())
        ]
        benchmarks.append(
            {"benchmark": name, "tables": tables, "side_by_side": _side_by_side(tables)}
        )
    return {
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "prices": prices.source,
        "currency": prices.currency,
        "benchmarks": benchmarks,
        "errored": {"total": errored_count(runs), "runs": errored_runs(runs)},
        "unscored": [
            health_entry(r)
            | {
                "task": r.task,
                "model": r.row_model,
                "setup": r.setup,
                "status": r.status,
                "reason": r.unscored_reason,
                "log": r.log,
            }
            for r in runs
            if not r.scored
        ],
        "superseded": [
            {
                "task": r.task,
                "model": r.model_label,
                "log": old.log,
                "created": old.created,
                "status": old.status,
                "replaced_by": r.log,
            }
            for r in runs
            for old in r.superseded
        ],
        "notes": sorted({f"{r.task} / {r.model_label}: {n}" for r in runs for n in r.notes}),
        "errors": [{"path": e.path, "message": e.message} for e in errors],
    }


def _figures(table: dict[str, Any]) -> list[dict[str, str]]:
    title = f"{table['task']} {table['version']}"
    h = table["headline"]
    entries = [e for e in table["entries"] if e["value"] is not None]
    figures = []
    if entries:
        svg = plots.headline_plot(
            f"{title}: {h['name']}",
            [e["label"] for e in entries],
            [float(e["value"]) for e in entries],
            [e["ci_low"] for e in entries],
            [e["ci_high"] for e in entries],
            h["direction"],
            chance=table["chance"]["value"] if table.get("chance") else None,
        )
        figures.append({"kind": "headline", "svg": svg})
    if table["survival"]:
        curves = {
            label: survival.SurvivalCurve(c["turns"], c["survival"], c["low"], c["high"], c["n"])
            for label, c in table["survival"].items()
        }
        event = h.get("event_key") or "event"
        if (h.get("horizon") or 0) <= 1:
            svg = plots.survival_bars(f"{title}: survival at turn 1", curves, event)
            figures.append({"kind": "survival-bars", "svg": svg})
        else:
            svg = plots.survival_plot(f"{title}: survival S(t)", curves, event)
            figures.append({"kind": "survival", "svg": svg})
    return figures


def _iou_figure(runs: list[Run], table: dict[str, Any]) -> dict[str, str] | None:
    ious = {
        e["label"]: run.ious
        for e in table["entries"]
        for run in runs
        if run.log == e["log"] and run.ious
    }
    if not ious:
        return None
    title = f"{table['task']} {table['version']}: answer-box IoU"
    return {"kind": "iou", "svg": plots.iou_histograms(title, ious)}


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _money(value: Any) -> str:
    return "–" if value is None else f"{value:.4f}"


def _duration(value: Any) -> str:
    if value is None:
        return "–"
    minutes, seconds = divmod(float(value), 60)
    return f"{int(minutes)}m{seconds:04.1f}s" if minutes else f"{seconds:.1f}s"


def _ci(e: dict[str, Any]) -> str:
    if e["ci_low"] is None:
        return "– (n < 2)" if e["n"] < 2 else "–"
    return f"[{_fmt(e['ci_low'])}, {_fmt(e['ci_high'])}]"


def _setup_text(setup: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in setup.items()) or "–"


#: The mark of an underpowered pair or row, the same in Markdown, HTML and JSON (`status`).
UNDERPOWERED = "underpowered"
#: How the baseline section's verdicts are decided (Markdown and HTML).
VERDICTS_TEXT = (
    "Verdicts: **regression** (exit 1) when the drop exceeds the tolerance and the one-sided "
    "paired test is significant after Holm's correction across rows; **pass** (exit 0) only when "
    "the one-sided upper confidence bound of the drop is at most the tolerance; **cannot "
    "decide** (exit 2) otherwise, with the paired samples that would decide. A regression wins "
    "the exit code; exit 0 needs every row to pass."
)

#: Decoding-method counters shown under the model, in this order when present.
COUNTERS = (
    "nfe",
    "tokens_per_forward",
    "acceptance_rate",
    "attention_bytes_saved",
    "shaped_steps",
    "latency_s",
)


def _counters_text(counters: dict[str, Any]) -> str:
    """`dsb: nfe 12.3, tokens_per_forward 2.1, latency_s 0.21 (mean of 40 calls)`."""
    if not counters:
        return ""
    shown = [f"{k} {counters[k]:.3g}" for k in COUNTERS if isinstance(counters.get(k), float)]
    return f"{counters['method']}: {', '.join(shown)} (mean of {counters['calls']} calls)"


def chance_text(chance: dict[str, Any]) -> str:
    """The line under a task's heading that names its chance row (the task's `chance`)."""
    who = f" ({chance['attacker']})" if chance.get("attacker") else ""
    source = f", from `{chance['source']}`" if chance.get("source") else ""
    return f"Chance row{who}: {chance['value']:.3f}{source}; rank rows against it, not against 0."


def _markdown_table(t: dict[str, Any], lines: list[str]) -> None:
    h = t["headline"]
    args = ", ".join(f"{k}={v}" for k, v in sorted(t["task_args"].items())) or "defaults"
    lines += [
        f"### {t['task']} (version {t['version']})",
        "",
        f"Headline `{h['name']}` {h['arrow']} ({h['direction'] or 'direction unknown'}, "
        f"{h['value']}; from {h['source']}); task args: {args}.",
    ]
    if t["common_setup"]:
        lines.append(f"Setup of every row: {_setup_text(t['common_setup'])}.")
    if t["split"]:
        lines.append(f"Data split `{t['split']}` (sha256 {t['split_sha256']}).")
    if t.get("chance"):
        lines.append(chance_text(t["chance"]))
    if t["kind"] == "method":
        lines.append(method_table_text(t))
    row = "method" if t["kind"] == "method" else "model"
    lines += [
        "",
        f"| rank | {row} | setup | headline | 95 % CI | n | errored | model health | split "
        "| tokens | cost | wall |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in t["entries"]:
        n = f"{e['n']} ({UNDERPOWERED})" if e["underpowered"] else str(e["n"])
        value = _fmt(e["value"]) + (" (overridden)" if e["overrides"] else "")
        model = e["model"]
        if e.get("method_counters"):
            model += f" ({_counters_text(e['method_counters'])})"
        lines.append(
            f"| {e['rank']} | {model} | {_setup_text(e['setup'])} | {value} | {_ci(e)} | {n} "
            f"| {e['errored']} | {health_text(e)} "
            f"| {e['split'] or '–'} | {e['tokens']['total']} | {_money(e['cost'])} "
            f"| {_duration(e['wall_seconds'])} |"
        )
    notes = [
        (e["model"], text)
        for e in t["entries"]
        for text in (e["errored_text"], missing_text(e), budget_text(e))
        if text
    ]
    if notes:
        lines.append("")
        lines += [f"- {label}: {text}" for label, text in notes]
    if t["pairwise"]:
        lines += [
            "",
            f"Pairwise (two-sided, Holm; n needed to tell a difference of {t['tolerance']:g}):",
            "",
            "| a | b | shared n | test | p (Holm) | n needed | comparison |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in t["pairwise"]:
            lines.append(
                f"| {r['a']} | {r['b']} | {r['n']} | {r['test'] or 'no shared samples'} | "
                f"{_fmt(r.get('p_holm'))} | {_fmt(r['n_needed'])} | {r['status']} |"
            )
    if t["categories"]:
        lines += [
            "",
            f"Per {t['category_field']}:",
            "",
            "| model | " + " | ".join(t["categories"]) + " |",
            "|---|" + "---|" * len(t["categories"]),
        ]
        for e in t["entries"]:
            cells = [
                f"{_fmt(e['categories'][c]['mean'])} (n={e['categories'][c]['n']})"
                if c in e["categories"]
                else "–"
                for c in t["categories"]
            ]
            lines.append(f"| {e['model']} | " + " | ".join(cells) + " |")
    lines.append("")


def method_table_text(t: dict[str, Any]) -> str:
    """The line above a model-free task's table: its rows are methods, not models."""
    ran_with = sorted({str(e["ran_with"]) for e in t["entries"] if e.get("ran_with")})
    return (
        "Model-free: the score does not depend on the model under test (no model call), so "
        "the rows are methods and no model is ranked by them; ran with "
        + (", ".join(ran_with) or "–")
        + "."
    )


def render_markdown(data: dict[str, Any]) -> str:
    """The Markdown summary (the one CI posts on a pull request)."""
    lines = ["# docket leaderboard", ""]
    lines.append(
        "Ranks: two-sided paired tests on shared samples (exact McNemar for 0/1, else paired "
        f"bootstrap), Holm-corrected at alpha {ALPHA}; `=k` shares a rank. A pair that is not "
        "separated and shares fewer samples than it takes to tell a difference of the "
        "tolerance is marked *underpowered*, as are its rows and rows with n < "
        f"{SMALL_N}; an underpowered row is never ranked above a row it does not beat. Rows "
        "of different data splits are in different tables and never ranked against each other."
    )
    lines.append("")
    if data["errored"]["total"]:
        lines += [
            f"**{data['errored']['total']} errored samples**, left out of every metric "
            "(no successful model call, or an error):",
            "",
        ]
        lines += [f"- {line}" for line in data["errored"]["runs"]] + [""]
    for bench in data["benchmarks"]:
        lines += [f"## {bench['benchmark']}", ""]
        sbs = bench["side_by_side"]
        if sbs:
            lines += ["| model | " + " | ".join(sbs["columns"]) + " |"]
            lines += ["|---|" + "---|" * len(sbs["columns"])]
            for row in sbs["rows"]:
                cells = [_fmt(c["value"]) if c else "–" for c in row["cells"]]
                lines.append(f"| {row['model']} | " + " | ".join(cells) + " |")
            lines.append("")
        for table in bench["tables"]:
            _markdown_table(table, lines)
    comparison = data.get("comparison")
    if comparison:
        lines += [f"## Against baseline `{comparison['baseline']}` (exit {comparison['exit']})", ""]
        lines += [VERDICTS_TEXT, ""]
        lines += [
            "| task | model | baseline | current | upper bound | n / needed | verdict | why |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in comparison["comparisons"]:
            needed = "–" if c.get("n") is None else f"{c['n']} / {_fmt(c.get('n_needed'))}"
            lines.append(
                f"| {c['task']} | {c['model']} | {_fmt(c['baseline_value'])} | "
                f"{_fmt(c['current_value'])} | {_fmt(c.get('ci_high'))} | {needed} | "
                f"{c['verdict']} | {c['detail']} |"
            )
        lines.append("")
        flipped = [(c, flip_lines_json(c)) for c in comparison["comparisons"]]
        if any(f for _, f in flipped):
            lines += ["Flipped samples:", ""]
            for c, found in flipped:
                lines += [f"- {c['task']} / {c['model']}: {line}" for line in found]
            lines.append("")
    if data.get("history"):
        lines += ["## History", ""]
        for series in data["history"]:
            lines.append(
                f"- {series['task']} / {series['model']}: "
                + " → ".join(_fmt(v) for v in series["values"])
            )
        lines.append("")
    if data["unscored"]:
        lines += ["## Runs without a score", ""]
        lines += [
            f"- {u['task']} / {u['model']}: {u['reason']}"
            + "".join(f"; {part}" for part in u["behaviour"])
            for u in data["unscored"]
        ]
        lines.append("")
    if data["superseded"]:
        lines += ["## Superseded runs", ""]
        lines += [
            f"- {s['task']} / {s['model']}: `{Path(s['log']).name}` ({s['status']}, "
            f"{s['created']}) replaced by `{Path(s['replaced_by']).name}`"
            for s in data["superseded"]
        ]
        lines.append("")
    if data["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in data["notes"]] + [""]
    if data.get("log_warnings"):
        lines += ["## Logs left out or in doubt", ""]
        lines += [f"- `{w['path']}`: {w['message']}" for w in data["log_warnings"]]
        lines.append("")
    if data["errors"]:
        lines += ["## Unreadable logs", ""]
        lines += [f"- `{e['path']}`: {e['message']}" for e in data["errors"]]
        lines.append("")
    return markdown_safe("\n".join(lines))


def markdown_safe(text: str) -> str:
    """Markdown whose text (task and model names, reasons, notes: anything a log wrote) can
    carry no HTML and no control character: `<`, `>` and `&` become entities, so a name like
    `<img src=x onerror=...>` shows as text wherever the Markdown is rendered.

    Args:
        text: The rendered Markdown.

    Returns:
        The same Markdown, safe to post.
    """
    return html.escape(printable(text, lines=True), quote=False)


def print_summary(console: Console, data: dict[str, Any]) -> None:
    """The leaderboard in the terminal: per task and row, the headline beside the errored
    samples and the model's behaviour, then why runs have no score.

    Args:
        console: Console printed to.
        data: The report data from `leaderboard_data`.
    """
    table = Table(title="docket leaderboard")
    for column in ("task", "model / method", "headline", "n", "errored", "model health"):
        table.add_column(column)
    for bench in data["benchmarks"]:
        for t in bench["tables"]:
            for e in t["entries"]:
                row = f"{e['model']} (method)" if t["kind"] == "method" else e["model"]
                health = "; ".join([health_text(e), missing_text(e)]).strip("; ")
                table.add_row(
                    escape(printable(t["task"])),
                    escape(printable(row)),
                    escape(printable(f"{t['headline']['name']} {_fmt(e['value'])}")),
                    str(e["n"]),
                    str(e["errored"]),
                    escape(printable(health)),
                )
    if not console.is_terminal:
        console = Console(width=max(console.width, 160))
    console.print(table)
    for line in data["errored"]["runs"]:
        console.print(f"errored: {printable(line)}", soft_wrap=True, markup=False)
    for u in data["unscored"]:
        line = f"no score: {u['task']} / {u['model']}: {u['reason']}"
        console.print(printable(line), soft_wrap=True, markup=False)


def flip_lines_json(comparison: dict[str, Any]) -> list[str]:
    """`flip_lines` for a comparison already turned into JSON."""
    from docket.reports.regress import Comparison

    return flip_lines(Comparison(**comparison))


def _table_id(table: dict[str, Any]) -> str:
    return json.dumps(
        [table["task"], table["version"], table["task_args"], table["headline"]["name"]],
        sort_keys=True,
    )


def render_html(data: dict[str, Any], runs: list[Run], bundle_links: dict[str, str]) -> str:
    """The static HTML page: sections, tables, category breakdowns and inline SVG plots."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["j2"]))
    env.filters.update(
        fmt=_fmt,
        money=_money,
        duration=_duration,
        ci=_ci,
        setup=_setup_text,
        counters=_counters_text,
        health=health_text,
        missing=missing_text,
        budgets=budget_text,
    )
    figures: dict[str, list[dict[str, str]]] = {}
    for bench in data["benchmarks"]:
        for table in bench["tables"]:
            found = _figures(table)
            iou = _iou_figure(runs, table)
            figures[_table_id(table)] = found + ([iou] if iou else [])
    history_svgs = [
        {"task": h["task"], "svg": plots.history_plot(h["task"], h["labels"], h["series"])}
        for h in data.get("history_plots", [])
    ]
    return env.get_template("leaderboard.html.j2").render(
        data=data,
        figures=figures,
        key=_table_id,
        bundle_links=bundle_links,
        flips=flip_lines_json,
        history_svgs=history_svgs,
        alpha=ALPHA,
        small_n=SMALL_N,
        method_text=method_table_text,
        verdicts=VERDICTS_TEXT.replace("**", ""),
    )


def bundle_logs(log_dir: str, logs: list[str], out_dir: Path) -> Path:
    """Bundle the readable `logs` (under `log_dir`, a folder or a store) into OUT/bundle:
    `inspect view bundle`.

    Unreadable logs would make the bundler fail, so only the given ones are staged and bundled
    (a store's are downloaded).
    """
    target = out_dir / "bundle"
    with tempfile.TemporaryDirectory(prefix="docket-bundle-") as staging:
        remote = [log for log in logs if logstore.is_remote(log)]
        logstore.download(remote, log_dir, Path(staging))
        for log in logs:
            if logstore.is_remote(log):
                continue
            relative = logstore.relative(log, log_dir)
            (Path(staging) / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(log, Path(staging) / relative)
        try:
            bundle_log_dir(log_dir=staging, output_dir=str(target), overwrite=True)
        except Exception as ex:  # noqa: BLE001 - reported as one line
            raise RuntimeError(f"inspect view bundle failed: {ex}") from None
    return target


def build_report(
    log_dir: str | Path,
    out_dir: str | Path,
    bundle: bool = False,
    options: ReportOptions | None = None,
) -> ReportFiles:
    """Read every log under `log_dir`; write index.html, leaderboard.md, leaderboard.json.

    Args:
        log_dir: Folder (or `s3://bucket/prefix` store) searched recursively for Inspect logs.
        out_dir: Local folder the report files are written to (created when missing).
        bundle: Also copy the logs next to the report, linked from the HTML (used when
            `options` is None).
        options: Headline flags, overrides, prices, history and baseline to apply; None: the
            defaults with `bundle`.

    Returns:
        The paths written, the logs that could not be read and, with a baseline, the exit code
        of the comparison.

    Raises:
        EmptyLogDir: `log_dir` holds no Inspect log.
        FileNotFoundError: `log_dir` does not exist.
        LogStoreError: `log_dir` is a store of a scheme docket does not read.
        OverrideError, PriceError, BaselineError: the one-line errors of the overrides, prices
            and baseline readers.
    """
    opts = options or ReportOptions(bundle=bundle)
    logstore.check_scheme(log_dir)
    log_root = logstore.resolve(log_dir)
    out = Path(out_dir).resolve()
    prices = load_prices(opts.prices)
    overrides = read_overrides(opts.overrides) if opts.overrides else []
    baseline_file = read_baseline_file(opts.baseline) if opts.baseline else None
    baseline = baseline_file.entries if baseline_file else None
    loaded = load_logs(log_root)
    if loaded.files == 0:
        raise EmptyLogDir(f"{log_root}: no Inspect logs (*.eval or Inspect-named *.json) found")
    runs = build_runs(loaded, opts.headline_flags)
    override_notes = apply_overrides(runs, overrides)
    data = leaderboard_data(runs, loaded.errors, prices, tolerance=opts.tolerance)
    data["log_warnings"] = [{"path": w.path, "message": w.message} for w in loaded.warnings]
    data["notes"] = override_notes + data["notes"]
    if baseline_file is not None and baseline_file.assumed:
        data["notes"] = [baseline_file.assumed, *data["notes"]]
    data["log_dir"] = log_root
    files = ReportFiles(
        html=out / "index.html",
        markdown=out / "leaderboard.md",
        json=out / "leaderboard.json",
        bundle=None,
        errors=loaded.errors,
        warnings=loaded.warnings,
    )
    if baseline is not None:
        comparisons = compare(
            baseline, runs, tolerance=opts.tolerance, headline_flags=opts.headline_flags
        )
        files.baseline_exit = exit_code(
            comparisons,
            loaded.errors,
            errored_count(runs),
            opts.max_errors,
            blocking_warnings(loaded.warnings),
        )
        data["comparison"] = {
            "baseline": str(opts.baseline),
            "exit": files.baseline_exit,
            "comparisons": [c.to_json() for c in comparisons],
        }
    if opts.history:
        data["history"], data["history_plots"] = history_data(opts.history, runs)
    out.mkdir(parents=True, exist_ok=True)
    links: dict[str, str] = {}
    if opts.bundle or bundle:
        files.bundle = bundle_logs(log_root, [run.log for run in runs], out)
        for run in runs:
            relative = logstore.relative(run.log, log_root)
            links[run.log] = f"bundle/index.html#/logs/{relative}"
    files.json.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    files.markdown.write_text(render_markdown(data))
    files.html.write_text(render_html(data, runs, links))
    files.data = data
    return files
