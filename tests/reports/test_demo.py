"""`python -m docket.demo` is `docket suite offline` over every registered task."""

from __future__ import annotations

import importlib

import pytest

from docket.demo import demo_tasks, main


def test_demo_runs_every_registered_task() -> None:
    registry = importlib.import_module("docket._registry")
    assert demo_tasks() == registry.REGISTERED["task"]
    assert "docket/smoke" in demo_tasks()


def test_demo_forwards_its_flags_to_the_offline_suite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []

    def cli_main(argv: list[str]) -> int:
        seen.append(argv)
        return 0

    monkeypatch.setattr("docket.cli.main", cli_main)
    assert main(["--no-smollm2", "--limit", "2", "--task", "docket/smoke"]) == 0
    assert seen == [
        [
            "suite",
            "offline",
            "--log-dir",
            "logs/demo",
            "--display",
            "plain",
            "--limit",
            "2",
            "--stage",
            "scripted",
            "--task",
            "docket/smoke",
        ]
    ]
