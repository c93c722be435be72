"""Both model-free tasks through `docket suite`: shown as method tables, no model ranked (#33);
a suite in which no task wrote a log says so in one line."""

from __future__ import annotations

import json
from contextvars import copy_context
from pathlib import Path

import pytest

from docket.cli import main


def test_model_free_tasks_are_method_tables_through_the_suite(tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "report"
    argv = [
        "suite", "offline", "--task", "docket/erm_retrieval", "--task", "docket/tabular_anomaly",
        "--model", "docket/scripted", "-M", "policy=comply", "--limit", "2",
        "--log-dir", str(logs), "-o", str(out),
    ]  # fmt: skip
    assert copy_context().run(main, argv) == 0
    data = json.loads((out / "leaderboard.json").read_text())
    tables = {t["task"]: t for bench in data["benchmarks"] for t in bench["tables"]}
    for task in ("docket/erm_retrieval", "docket/tabular_anomaly"):
        table = tables[task]
        assert table["kind"] == "method", task
        assert all(e["model"] != "docket/scripted" for e in table["entries"]), table["entries"]
    markdown = (out / "leaderboard.md").read_text()
    assert "the rows are methods and no model is ranked by them" in markdown


def test_a_suite_where_no_task_wrote_a_log_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["suite", "offline", "--task", "docket/erm_retrieval", "--model", "docket/scripted"]
    assert copy_context().run(main, [*argv, "--log-dir", str(tmp_path / "logs")]) == 1
    out = capsys.readouterr().out
    assert "docket/scripted needs -M policy=NAME" in out
    assert "nothing to report" in out and "Traceback" not in out
