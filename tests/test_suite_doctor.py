"""`docket suite` runs `docket doctor`'s checks first and stops with its line (nothing runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docket import doctor
from docket.cli import main
from docket.suite import check_prerequisites, load_preset, plan, task_sandbox


def test_the_sandbox_of_each_task(tmp_path: Path) -> None:
    preset = load_preset("offline")
    tasks = ["docket/smoke", "docket/rl_arith"]
    smoke, arith = plan(preset, tmp_path, tasks=tasks, models=["docket/scripted"])
    assert task_sandbox(smoke) == "bwrap" and task_sandbox(arith) is None
    smoke.task_args["sandbox"] = "docker"
    assert task_sandbox(smoke) == "docker"


def test_a_blocking_finding_stops_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[tuple[str, list[str]]] = []

    def blocked(sandbox: str, models: list[str]) -> list[str]:
        asked.append((sandbox, list(models)))
        return ["fail bwrap: cannot start a sandbox; fix: install bubblewrap"]

    monkeypatch.setattr(doctor, "check_run", blocked)
    argv = ["suite", "offline", "--task", "docket/smoke", "--model", "docket/scripted"]
    assert main([*argv, "--log-dir", str(tmp_path / "logs")]) == 1
    out = capsys.readouterr().out
    assert "fail bwrap: cannot start a sandbox; fix: install bubblewrap" in out
    assert "nothing ran" in out and not (tmp_path / "logs").exists()
    assert asked == [("bwrap", ["docket/scripted"])]


def test_tasks_without_a_sandbox_check_only_their_models(tmp_path: Path) -> None:
    preset = load_preset("offline")
    plans = plan(preset, tmp_path, tasks=["docket/rl_arith"], models=["docket/local/nope"])
    assert check_prerequisites(plans) == [
        "fail docket/local/nope: nope does not exist; fix: give a local checkpoint path"
    ]
