"""Real-model rows of the benchmark READMEs, from one committed results file.

`reports/scripts/real_models.py` runs a suite preset on real models (by default `docket suite
local`: the embedded Qwen2.5-Coder-0.5B on CPU, every role bound to it) and keeps, per task and
model, what its leaderboard says: the headline and its interval, the number of samples, the task
version, the date of the run and the run's health. This module turns that leaderboard into the
results file's rows and the rows into each benchmark README's `real-models` block, so the README
and the file cannot drift apart (`tests/reports/test_real_models.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from docket.core.results_tables import block, table_block

#: The README block that holds a benchmark's real-model rows.
BLOCK = "real-models"
#: The committed results file.
RESULTS = Path(__file__).resolve().parent / "results" / "real_models.json"
#: The benchmark folders (each README lives in `benchmarks/<benchmark>/README.md`).
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _interval(entry: dict[str, Any]) -> list[float] | None:
    low, high = entry.get("ci_low"), entry.get("ci_high")
    if isinstance(low, int | float) and isinstance(high, int | float):
        return [round(float(low), 4), round(float(high), 4)]
    return None


def rows_from_leaderboard(
    data: dict[str, Any],
    dates: dict[str, str],
    run: str,
    folders: Mapping[str, str],
    versions: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One row per task and model of a `docket report` leaderboard (`leaderboard.json`).

    Args:
        data: The leaderboard's JSON.
        dates: The creation date (`YYYY-MM-DD`) of each entry's log, by log path.
        run: The command that produced the logs (kept in each row).
        folders: Each task's benchmark folder (its listing's; a task not in it keeps the
            benchmark name its report gave).
        versions: The task version of each log, by log path, for the runs the report could
            not score (their rows carry the reason instead of a value).

    Returns:
        Rows with `benchmark`, `task`, `version`, `model`, `headline`, `direction`, `value`,
        `interval`, `n`, `errored`, `health`, `date` and `run`, sorted by benchmark, task and
        model.
    """
    rows: list[dict[str, Any]] = []
    for benchmark in data.get("benchmarks", []):
        for table in benchmark.get("tables", []):
            if table.get("kind") == "method":  # model-free: no model's row to give
                continue
            headline = table.get("headline") or {}
            for entry in table.get("entries", []):
                value = entry.get("value")
                rows.append(
                    {
                        "benchmark": folders.get(table["task"], benchmark["benchmark"]),
                        "task": table["task"],
                        "version": table.get("version"),
                        "model": entry["model"],
                        "headline": headline.get("name"),
                        "direction": headline.get("direction"),
                        "value": None if value is None else round(float(value), 4),
                        "interval": _interval(entry),
                        "n": entry.get("n"),
                        "errored": entry.get("errored", 0),
                        "health": _health_summary(entry),
                        "date": dates.get(entry.get("log", ""), ""),
                        "run": run,
                    }
                )
    for entry in data.get("unscored", []):
        row = _unscored_row(entry, dates, run, folders)
        row["version"] = (versions or {}).get(entry.get("log", ""), row["version"])
        rows.append(row)
    return sorted(rows, key=lambda r: (r["benchmark"], r["task"], r["model"]))


def _unscored_row(
    entry: dict[str, Any], dates: dict[str, str], run: str, folders: Mapping[str, str]
) -> dict[str, Any]:
    """A run the report could not score (its headline has no value): the row says why."""
    samples = (entry.get("health") or {}).get("samples")
    return {
        "benchmark": folders.get(entry["task"], entry["task"]),
        "task": entry["task"],
        "version": entry.get("version"),
        "model": entry["model"],
        "headline": None,
        "direction": None,
        "value": None,
        "interval": None,
        "n": samples,
        "errored": entry.get("errored", 0),
        "health": str(entry.get("reason") or "no score"),
        "date": dates.get(entry.get("log", ""), ""),
        "run": run,
    }


def model_free_tasks(data: dict[str, Any], folders: Mapping[str, str]) -> list[dict[str, str]]:
    """The tasks of a leaderboard that score a method, not the model (no model call).

    Args:
        data: The leaderboard's JSON.
        folders: Each task's benchmark folder, as for `rows_from_leaderboard`.

    Returns:
        `{"benchmark", "task"}` of each model-free table, sorted.
    """
    found = {
        (folders.get(t["task"], b["benchmark"]), t["task"])
        for b in data.get("benchmarks", [])
        for t in b.get("tables", [])
        if t.get("kind") == "method"
    }
    return [{"benchmark": b, "task": t} for b, t in sorted(found)]


def _health_summary(entry: dict[str, Any]) -> str:
    """A short health cell: errored samples, then what the report says went wrong."""
    parts = [entry.get("errored_text") or ""]
    parts += [str(b) for b in entry.get("behaviour", [])[:2]]
    text = "; ".join(p for p in parts if p)
    return text if text else "ok"


def merge(old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of `old` with every task and model that `new` measured replaced by its row."""
    fresh = {(r["task"], r["model"]): r for r in new}
    kept = [r for r in old if (r["task"], r["model"]) not in fresh]
    return sorted([*kept, *fresh.values()], key=lambda r: (r["benchmark"], r["task"], r["model"]))


def _value_text(row: dict[str, Any]) -> str:
    if row["value"] is None:
        return "no score"
    text = f"{row['value']:.3f}"
    if row["interval"]:
        low, high = row["interval"]
        text += f" [{low:.3f}, {high:.3f}]"
    return text


def _headline_text(row: dict[str, Any], arrow: str) -> str:
    if row["headline"] is None:  # the report could not score the run: the health says why
        return "no score"
    return f"{row['headline']} {arrow} {_value_text(row)}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(
    rows: Iterable[dict[str, Any]], benchmark: str, model_free: Iterable[dict[str, str]] = ()
) -> str:
    """The `real-models` block body of one benchmark's README.

    Args:
        rows: The results file's rows (each names the command that produced it, `run`).
        benchmark: The benchmark folder's name.
        model_free: Tasks that scored a method, not the model (`model_free_tasks`).

    Returns:
        A Markdown table (task, model, version, n, headline with its 95% interval, health; the
        run's date stays in the results file), or one line saying that no real model has been
        run on it.
    """
    mine = [r for r in rows if r["benchmark"] == benchmark]
    free = sorted(f"`{t['task']}`" for t in model_free if t["benchmark"] == benchmark)
    note = (
        f"{', '.join(free)}: the model under test makes no call, so a run scores the method "
        "and has no real-model row."
        if free
        else ""
    )
    if not mine:
        return note or "No real model has been run on it yet (`reports/scripts/real_models.py`)."
    lines = [
        "| task | model | version | n | headline (95% interval) | health |",
        "|---|---|---|---|---|---|",
    ]
    for r in mine:
        arrow = {"higher": "↑", "lower": "↓"}.get(r["direction"] or "", "")
        lines.append(
            f"| `{r['task']}` | `{r['model']}` | {r['version']} | {r['n']} | "
            f"{_headline_text(r, arrow)} | {_cell(r['health'])} |"
        )
    runs = ", ".join(f"`{run}`" for run in sorted({r["run"] for r in mine}))
    lines += ["", f"Run with {runs} (`reports/scripts/real_models.py` writes `{RESULTS.name}`)."]
    if note:
        lines += ["", note]
    return "\n".join(lines)


def readmes() -> dict[str, Path]:
    """Every benchmark README that holds a `real-models` block, by benchmark name."""
    found: dict[str, Path] = {}
    for readme in sorted(BENCHMARKS.glob("*/README.md")):
        text = readme.read_text(encoding="utf-8")
        try:
            table_block(text, BLOCK)
        except ValueError:
            continue
        found[readme.parent.name] = readme
    return found


def rendered_block(
    rows: Iterable[dict[str, Any]], benchmark: str, model_free: Iterable[dict[str, str]] = ()
) -> str:
    """The whole marked block, as it stands in the README."""
    return block(BLOCK, render(rows, benchmark, model_free))
