"""Trends across baselines (`docket report --history DIR`).

DIR holds baseline files written by `docket regress --write-baseline` (one per release, nightly
run or merged PR). Each row (task, model, setup) becomes a series of headline values in the
baselines' `created` order, followed by the current logs' value ("now").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docket.reports.regress import BaselineError, read_baseline
from docket.reports.runs import Run


def _row_key(task: str, model: str, setup: dict[str, str]) -> str:
    return json.dumps([task, model, setup], sort_keys=True)


def read_history(folder: str | Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, entries) per baseline file in DIR, oldest first; `BaselineError` if none."""
    root = Path(folder)
    if not root.is_dir():
        raise BaselineError(f"{root}: history directory not found")
    found: list[tuple[str, str, list[dict[str, Any]]]] = []
    for path in sorted(root.glob("*.json")):
        entries = read_baseline(path)
        meta = json.loads(path.read_text())
        created = str(meta.get("created") or "")
        label = created[:10] or path.stem
        if meta.get("commit"):
            label += f" {str(meta['commit'])[:7]}"
        found.append((created, label, entries))
    if not found:
        raise BaselineError(f"{root}: no baseline files (*.json) for --history")
    found.sort(key=lambda item: item[0])
    return [(label, entries) for _, label, entries in found]


def history_data(
    folder: str | Path, runs: list[Run]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one series per row, one plot spec per task) over the baselines in DIR and the logs."""
    baselines = read_history(folder)
    labels = [label for label, _ in baselines] + ["now"]
    rows: dict[str, dict[str, Any]] = {}
    for index, (_, entries) in enumerate(baselines):
        for entry in entries:
            key = _row_key(entry["task"], entry["model"], entry["setup"])
            row = rows.setdefault(
                key,
                {"task": entry["task"], "model": entry["model"], "values": [None] * len(labels)},
            )
            row["values"][index] = float(entry["value"])
    for run in runs:
        key = _row_key(run.task, run.model_label, run.setup)
        if key in rows and run.scored:
            rows[key]["values"][-1] = run.headline_value
    series = [dict(row, labels=labels) for _, row in sorted(rows.items())]
    plots: dict[str, dict[str, Any]] = {}
    for row in series:
        plot = plots.setdefault(row["task"], {"task": row["task"], "labels": labels, "series": {}})
        plot["series"][row["model"]] = row["values"]
    return series, list(plots.values())
