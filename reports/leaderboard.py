"""`docket report LOGDIR -o OUT`: a static leaderboard (HTML + Markdown + JSON) from Inspect logs.

One table per benchmark (task name, version and task args), one row per model: the log's headline
metric with a 95 % CI, models ranked with ties where CIs overlap, every other metric of the log,
and per-category means when samples carry a `category` (or subset/group/difficulty) metadata
field. Works on any Inspect log; docket-specific plots appear when samples carry the data.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docket.reports import plots
from docket.reports.logs import LogError, load_logs
from docket.reports.runs import Run, build_runs
from docket.reports.stats import Interval, mean_interval, rank_with_ties, stderr_interval
from inspect_ai.log import bundle_log_dir
from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).parent / "templates"
#: Headline metrics that are a plain mean of per-sample values, so sample CIs apply.
MEAN_METRICS = {"accuracy", "mean"}


@dataclass
class ReportFiles:
    """What `build_report` wrote, and the logs it could not read."""

    html: Path
    markdown: Path
    json: Path
    bundle: Path | None
    errors: list[LogError] = field(default_factory=list)


def headline_interval(run: Run) -> Interval | None:
    """95 % CI of the headline: from samples when it is their mean, else the log's stderr."""
    if run.headline_value is None:
        return None
    if run.samples and run.headline_metric in MEAN_METRICS:
        return mean_interval(list(run.samples.values()))
    if run.headline_stderr is not None:
        return stderr_interval(run.headline_value, run.headline_stderr)
    return None


def _entry(run: Run, ci: Interval | None, rank: str) -> dict[str, Any]:
    return {
        "rank": rank,
        "model": run.model_label,
        "value": run.headline_value,
        "ci_low": None if ci is None else ci.low,
        "ci_high": None if ci is None else ci.high,
        "ci_method": None if ci is None else ci.method,
        "samples": max(run.sample_count, len(run.samples)),
        "metrics": run.metrics,
        "categories": run.categories,
        "log": run.log,
    }


def _benchmark(runs: list[Run]) -> dict[str, Any]:
    first = runs[0]
    intervals = [headline_interval(run) for run in runs]
    values = [float(run.headline_value or 0.0) for run in runs]
    ranks = rank_with_ties(values, intervals)
    entries = [_entry(r, ci, rank) for r, ci, rank in zip(runs, intervals, ranks, strict=True)]
    entries.sort(key=lambda e: (int(e["rank"].lstrip("=")), -(e["value"] or 0.0), e["model"]))
    categories = sorted({c for run in runs for c in run.categories})
    return {
        "task": first.task,
        "version": first.version,
        "task_args": first.task_args,
        "headline": f"{first.headline_score}/{first.headline_metric}",
        "category_field": first.category_field,
        "categories": categories,
        "metric_names": sorted({m for run in runs for m in run.metrics}),
        "entries": entries,
    }


def leaderboard_data(runs: list[Run], errors: list[LogError]) -> dict[str, Any]:
    """Every number of the report as JSON-ready data."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        if run.scored:
            key = f"{run.benchmark_key} {json.dumps(run.task_args, sort_keys=True)}"
            groups.setdefault(key, []).append(run)
    return {
        "benchmarks": [_benchmark(groups[key]) for key in sorted(groups)],
        "unscored": [
            {
                "task": r.task,
                "model": r.model_label,
                "status": r.status,
                "error": r.error,
                "log": r.log,
            }
            for r in runs
            if not r.scored
        ],
        "errors": [{"path": e.path, "message": e.message} for e in errors],
    }


def _plots(runs: list[Run], benchmark: dict[str, Any]) -> list[dict[str, str]]:
    mine = [
        r
        for r in runs
        if r.scored
        and r.task == benchmark["task"]
        and r.version == benchmark["version"]
        and r.task_args == benchmark["task_args"]
    ]
    title = f"{benchmark['task']} {benchmark['version']}"
    entries = benchmark["entries"]
    figures = [
        {
            "kind": "headline",
            "svg": plots.headline_plot(
                f"{title}: {benchmark['headline']}",
                [e["model"] for e in entries],
                [float(e["value"]) for e in entries],
                [e["ci_low"] for e in entries],
                [e["ci_high"] for e in entries],
            ),
        }
    ]
    curves = {r.model_label: survival_of(r) for r in mine if r.survival or r.compliance_turns}
    if curves:
        figures.append(
            {"kind": "survival", "svg": plots.survival_plot(f"{title}: refusal survival", curves)}
        )
    ious = {r.model_label: r.ious for r in mine if r.ious}
    if ious:
        figures.append(
            {"kind": "iou", "svg": plots.iou_histogram(f"{title}: answer-box IoU", ious)}
        )
    return figures


def survival_of(run: Run) -> tuple[list[int], list[float]]:
    """R(t) of a run: from per-sample `r@t` values, else from compliance turns."""
    if run.survival:
        return list(range(1, len(run.survival) + 1)), run.survival
    return plots.survival_curve(run.compliance_turns)


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render_markdown(data: dict[str, Any]) -> str:
    """A Markdown summary for a README or a PR comment."""
    lines = ["# docket leaderboard", ""]
    for bench in data["benchmarks"]:
        args = ", ".join(f"{k}={v}" for k, v in sorted(bench["task_args"].items())) or "defaults"
        lines += [
            f"## {bench['task']} (version {bench['version']})",
            "",
            f"Headline `{bench['headline']}`; task args: {args}.",
            "",
            "| rank | model | headline | 95 % CI | samples |",
            "|---|---|---|---|---|",
        ]
        for e in bench["entries"]:
            ci = f"[{_fmt(e['ci_low'])}, {_fmt(e['ci_high'])}]" if e["ci_low"] is not None else "–"
            lines.append(
                f"| {e['rank']} | {e['model']} | {_fmt(e['value'])} | {ci} | {e['samples']} |"
            )
        lines.append("")
    if data["unscored"]:
        lines += ["## Runs without a score", ""]
        lines += [
            f"- {u['task']} / {u['model']}: {u['status']} {u['error'] or ''}".rstrip()
            for u in data["unscored"]
        ]
        lines.append("")
    if data["errors"]:
        lines += ["## Unreadable logs", ""]
        lines += [f"- `{e['path']}`: {e['message']}" for e in data["errors"]]
        lines.append("")
    return "\n".join(lines)


def render_html(data: dict[str, Any], runs: list[Run], bundle_links: dict[str, str]) -> str:
    """The static HTML page: tables, category breakdowns and inline SVG plots."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["j2"]))
    env.filters["fmt"] = _fmt
    figures = [_plots(runs, bench) for bench in data["benchmarks"]]
    return env.get_template("leaderboard.html.j2").render(
        data=data, figures=figures, bundle_links=bundle_links
    )


def bundle_logs(log_dir: Path, logs: list[str], out_dir: Path) -> Path:
    """Bundle the readable `logs` (under `log_dir`) into OUT/bundle: `inspect view bundle`.

    Unreadable logs would make the bundler fail, so only the given ones are staged and bundled.
    """
    target = out_dir / "bundle"
    with tempfile.TemporaryDirectory(prefix="docket-bundle-") as staging:
        for log in logs:
            relative = Path(log).resolve().relative_to(log_dir)
            (Path(staging) / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(log, Path(staging) / relative)
        try:
            bundle_log_dir(log_dir=staging, output_dir=str(target), overwrite=True)
        except Exception as ex:  # noqa: BLE001 - reported as one line
            raise RuntimeError(f"inspect view bundle failed: {ex}") from None
    return target


def build_report(log_dir: str | Path, out_dir: str | Path, bundle: bool = False) -> ReportFiles:
    """Read every log under `log_dir`; write index.html, leaderboard.md, leaderboard.json."""
    log_root = Path(log_dir).resolve()
    out = Path(out_dir).resolve()
    loaded = load_logs(log_root)
    runs = build_runs(loaded)
    out.mkdir(parents=True, exist_ok=True)
    data = leaderboard_data(runs, loaded.errors)
    data["log_dir"] = str(log_root)
    bundle_dir: Path | None = None
    links: dict[str, str] = {}
    if bundle:
        bundle_dir = bundle_logs(log_root, [run.log for run in runs], out)
        for run in runs:
            relative = Path(run.log).resolve().relative_to(log_root).as_posix()
            links[run.log] = f"bundle/index.html#/logs/{relative}"
    files = ReportFiles(
        html=out / "index.html",
        markdown=out / "leaderboard.md",
        json=out / "leaderboard.json",
        bundle=bundle_dir,
        errors=loaded.errors,
    )
    files.json.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    files.markdown.write_text(render_markdown(data))
    files.html.write_text(render_html(data, runs, links))
    return files
