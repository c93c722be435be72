"""Roles run with the run's settings: every role model gets the stage's GenerateConfig (its own
preset `config` wins), and a task that forces its own `max_tokens` says so in the log."""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import copy_context
from pathlib import Path

import pytest
from inspect_ai.event import ModelEvent
from inspect_ai.log import list_eval_logs, read_eval_log

from docket.cli import main
from docket.suite import (
    BUDGET_KEY,
    ModelSpec,
    Overrides,
    PresetError,
    load_preset,
    plan,
    role_models,
)


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    yield


def test_every_role_model_gets_the_stage_config(tmp_path: Path) -> None:
    preset = load_preset("api")
    cli = Overrides(eval_args={"max_tokens": 256}, task_args={"": {"emulator": True}})
    [item] = plan(preset, tmp_path, tasks=["docket/anchor_audit"], overrides=cli)
    models = role_models(item)
    assert sorted(models) == ["auditor", "emulator", "judge"]
    for model in models.values():
        config = model.config
        assert (config.max_tokens, config.max_retries, config.timeout) == (256, 3, 300)


def test_a_roles_own_config_wins_over_the_stage(tmp_path: Path) -> None:
    preset = load_preset("api")
    judge = ModelSpec(model="openai/gpt-4o-mini", config={"max_tokens": 1024})
    roles = {**preset.roles, "judge": judge}  # type: ignore[dict-item]
    preset = preset.model_copy(update={"roles": roles})
    cli = Overrides(task_args={"": {"emulator": True}})  # the emulator is used only then
    [item] = plan(preset, tmp_path, tasks=["docket/anchor_direct"], overrides=cli)
    models = role_models(item)
    assert models["judge"].config.max_tokens == 1024
    assert models["judge"].config.max_retries == 3  # the rest still from the stage
    assert models["emulator"].config.max_tokens is None  # the api preset sets none


def test_a_role_config_field_must_be_a_generate_config_field(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\n"
        "roles: {judge: {model: openai/x, config: {max_tokenz: 3}}}\n"
        "stages: [{name: s, models: [openai/x]}]\n"
    )
    with pytest.raises(PresetError, match="'max_tokenz' is not a GenerateConfig field"):
        load_preset(str(path))


def _scripted_preset(tmp_path: Path, eval_args: str = "{max_tokens: 256}") -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\n"
        "roles:\n"
        "  judge: {model: docket/scripted, args: {policy: judge}}\n"
        "  auditor: {model: docket/scripted, args: {policy: auditor}, config: {max_tokens: 40}}\n"
        f"eval_args: {eval_args}\n"
        "stages: [{name: s, models: [{model: docket/scripted, args: {policy: comply}}],"
        " eval_args: {limit: 1}}]\n"
    )
    return path


def test_the_max_tokens_each_roles_calls_carry(tmp_path: Path) -> None:
    """ANCHOR's audit on scripted models: the model under test and the judge carry the stage's
    256 (before #33 the judge ran unbounded), the auditor its own 40, as the log's model events
    record each call's config."""
    logs = tmp_path / "logs"
    args = ["suite", str(_scripted_preset(tmp_path)), "--task", "docket/anchor_audit"]
    assert copy_context().run(main, [*args, "--log-dir", str(logs), "--display", "none"]) == 0
    [info] = list_eval_logs(str(logs / "docket_anchor_audit" / "s"))
    log = read_eval_log(info)
    carried: dict[str, set[int | None]] = {}
    for sample in log.samples or []:
        for event in sample.events:
            if isinstance(event, ModelEvent):
                carried.setdefault(event.role or "model", set()).add(event.config.max_tokens)
    assert carried == {"model": {256}, "judge": {256}, "auditor": {40}}
    budgets = (log.eval.metadata or {})[BUDGET_KEY]
    assert budgets == {"run": 256, "calls": {"auditor": [40], "judge": [256], "model": [256]}}


def test_a_task_that_forces_its_budget_says_so_in_the_log(tmp_path: Path) -> None:
    """context_qa answers in at most 8 tokens when the run sets no max_tokens: the log says so
    (a run's own max_tokens wins over a task's config, so with 256 nothing is stated)."""
    logs = tmp_path / "logs"
    args = ["suite", str(_scripted_preset(tmp_path, "{}")), "--task", "docket/context_qa"]
    assert copy_context().run(main, [*args, "--log-dir", str(logs), "--display", "none"]) == 0
    [info] = list_eval_logs(str(logs / "docket_context_qa" / "s"))
    budgets = (read_eval_log(info, header_only=True).eval.metadata or {})[BUDGET_KEY]
    assert budgets == {"run": None, "calls": {"model": [8]}}
