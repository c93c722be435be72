"""`python -m docket.demo` is `docket suite offline` over every registered task, then a bounded
`docket suite local` (docket/qwen) on the demo's Qwen tasks, into the same log directory."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from docket.demo import QWEN_LIMIT, QWEN_MAX_TOKENS, QWEN_TASKS, demo_tasks, main
from docket.suite import Overrides, load_preset, plan, registered_tasks


def test_demo_runs_every_registered_task() -> None:
    registry = importlib.import_module("docket._registry")
    assert demo_tasks() == registry.REGISTERED["task"]
    assert "docket/smoke" in demo_tasks()


def _forwarded(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], status: int = 0
) -> list[list[str]]:
    seen: list[list[str]] = []

    def cli_main(args: list[str]) -> int:
        seen.append(args)
        return status

    monkeypatch.setattr("docket.cli.main", cli_main)
    assert main(argv) == status
    return seen


def test_demo_forwards_its_flags_to_the_offline_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _forwarded(monkeypatch, ["--no-smollm2", "--limit", "2", "--task", "docket/smoke"])
    common = ["--log-dir", "logs/demo", "--display", "plain"]
    # docket/smoke is no Qwen demo task: only the offline suite runs
    assert seen == [
        [
            "suite",
            "offline",
            *common,
            "--limit",
            "2",
            "--stage",
            "scripted",
            "--task",
            "docket/smoke",
        ]
    ]


def test_demo_then_runs_the_local_preset_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _forwarded(monkeypatch, ["--log-dir", "out"])
    assert seen[0] == ["suite", "offline", "--log-dir", "out", "--display", "plain"]
    tasks = [arg for task in QWEN_TASKS for arg in ("--task", task)]
    bounds = ["--limit", str(QWEN_LIMIT), "--max-tokens", str(QWEN_MAX_TOKENS)]
    assert seen[1] == ["suite", "local", "--log-dir", "out", "--display", "plain", *bounds, *tasks]
    assert len(seen) == 2
    offline = ["suite", "offline", "--log-dir", "logs/demo", "--display", "plain"]
    assert _forwarded(monkeypatch, ["--no-qwen"]) == [offline]
    # --task keeps the Qwen tasks it names; --limit reaches both runs
    picked = _forwarded(monkeypatch, ["--task", QWEN_TASKS[1], "--limit", "2"])[1]
    assert picked[-4:] == ["--max-tokens", str(QWEN_MAX_TOKENS), "--task", QWEN_TASKS[1]]
    assert picked[picked.index("--limit") + 1] == "2"


def test_an_offline_failure_still_runs_qwen_and_fails_the_demo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert len(_forwarded(monkeypatch, [], status=1)) == 2


def test_a_bad_offline_command_line_runs_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(_forwarded(monkeypatch, [], status=2)) == 1


def test_the_demos_qwen_plan_is_one_sample_of_short_replies(tmp_path: Path) -> None:
    overrides = Overrides(eval_args={"max_tokens": QWEN_MAX_TOKENS})
    plans = plan(
        load_preset("local"),
        tmp_path,
        tasks=list(QWEN_TASKS),
        limit=QWEN_LIMIT,
        overrides=overrides,
    )
    assert [p.task for p in plans] == list(QWEN_TASKS)
    assert set(QWEN_TASKS) <= set(registered_tasks())
    for item in plans:
        assert item.eval_args["limit"] == 1 and item.eval_args["max_tokens"] == QWEN_MAX_TOKENS
        assert {m.model for m in [*item.models, *item.roles.values()]} == {"docket/qwen"}
