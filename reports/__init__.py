"""docket.reports: leaderboards and regression gates built from any Inspect logs.

`build_report(log_dir, out_dir)` writes HTML, Markdown and JSON; `docket.reports.regress`
compares a run with a stored baseline. Both read logs only through `inspect_ai.analysis`.
"""

from docket.reports.leaderboard import ReportFiles, build_report
from docket.reports.logs import LogError, load_logs
from docket.reports.runs import Run, build_runs

__all__ = ["LogError", "ReportFiles", "Run", "build_report", "build_runs", "load_logs"]
