"""docket.reports: leaderboards and regression gates built from any Inspect logs.

`build_report(log_dir, out_dir)` writes HTML, Markdown and JSON; `docket.reports.regress`
compares a run with a stored baseline. Logs are read through `inspect_ai.analysis`.
Exports load lazily, so `docket.reports.stats` does not import matplotlib or jinja.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LogError": "docket.reports.logs",
    "load_logs": "docket.reports.logs",
    "ReportFiles": "docket.reports.leaderboard",
    "build_report": "docket.reports.leaderboard",
    "Run": "docket.reports.runs",
    "build_runs": "docket.reports.runs",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'docket.reports' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
