"""`python -m docket.demo` picks up every registered task and ends with the leaderboard."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from docket.demo import demo_tasks, main


def test_demo_runs_every_registered_task() -> None:
    registry = importlib.import_module("docket._registry")
    assert demo_tasks() == registry.REGISTERED["task"]
    assert "docket/smoke" in demo_tasks()


@pytest.mark.slow
def test_demo_on_smoke_prints_the_leaderboard_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--log-dir", str(tmp_path / "logs"), "--no-smollm2", "--limit", "1"]
    assert main([*args, "--task", "docket/smoke", "--display", "none"]) == 0
    html = tmp_path / "report" / "index.html"
    assert str(html) in capsys.readouterr().out.splitlines()[-1]
    data = json.loads((tmp_path / "report" / "leaderboard.json").read_text())
    [bench] = data["benchmarks"]
    values = {e["model"]: e["value"] for e in bench["entries"]}
    assert values == {"docket/scripted policy=comply": 1.0, "docket/scripted policy=refuse": 0.0}
