"""The escape suite's report: each test names its attempt and what should block it.

Mark a test (or a parameter) `@pytest.mark.escape("attempt", "mechanism")`. After the run the
table (attempt, blocked, mechanism) is printed in the terminal summary and written to
`build/artifacts/escape-suite.md`. "blocked" comes from the test's own outcome: a passing test
asserted that the attempt failed.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest

ARTIFACT = Path(__file__).resolve().parents[2] / "build" / "artifacts" / "escape-suite.md"


@dataclass
class EscapeRow:
    """One attempt of the escape suite and how it ended."""

    attempt: str
    mechanism: str
    blocked: str = "not run"


_ROWS: dict[str, EscapeRow] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "escape(attempt, mechanism): an escape attempt reported in the suite's table"
    )


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "**no** (known gap)" if report.skipped else "yes (gap closed?)"
    if report.passed:
        return "yes"
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
        return f"not run ({reason.removeprefix('Skipped: ')})"
    return "**NO: test failed**"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    marker = item.get_closest_marker("escape")
    if marker is None:
        return
    row = _ROWS.setdefault(item.nodeid, EscapeRow(*marker.args))
    if report.when == "call" or report.skipped or report.failed:
        row.blocked = _outcome(report)


def escape_table() -> str:
    """The table as Markdown."""
    lines = ["| Attempt | Blocked | Blocked by |", "|---|---|---|"]
    lines += [f"| {r.attempt} | {r.blocked} | {r.mechanism} |" for r in _ROWS.values()]
    return "\n".join(lines) + "\n"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _ROWS:
        return
    table = escape_table()
    terminalreporter.write_sep("=", "bwrap escape suite")
    terminalreporter.write(table)
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text("# bwrap escape suite\n\n" + table, encoding="utf-8")
    terminalreporter.write_line(f"written to {ARTIFACT}")
