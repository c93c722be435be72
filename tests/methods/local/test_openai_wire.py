"""The OpenAI wire path: docket tasks through Inspect's `openai-api` provider with tools, against
`transformers serve` on 127.0.0.1 serving docket/qwen (fixture: `openai_server.qwen_server`)."""

from __future__ import annotations

import json
from contextvars import copy_context
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, read_eval_log

from docket.cli import main
from docket.methods.local.chat import parse_tool_calls
from tests.methods.local.openai_server import OpenAIServer, qwen_server  # noqa: F401

pytestmark = pytest.mark.slow


def _run(task: str, server: OpenAIServer, log_dir: Path, **task_args: object) -> EvalLog:
    (log,) = inspect_eval(
        task,
        model=server.model,
        task_args=dict(task_args),
        limit=1,
        max_tokens=128,
        temperature=0,
        log_dir=str(log_dir),
        display="none",
        fail_on_error=False,
    )
    return read_eval_log(log.location, resolve_attachments=True)  # message texts, not refs


@pytest.fixture
def served(qwen_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:  # noqa: F811
    """The server, with its `TSERVE_*` environment set for Inspect's openai-api provider."""
    for name, value in qwen_server.env.items():
        monkeypatch.setenv(name, value)
    return qwen_server


def _model_events(log: EvalLog) -> list[ModelEvent]:
    assert log.samples is not None
    return [e for s in log.samples for e in s.events if isinstance(e, ModelEvent)]


def test_smoke_calls_tools_over_the_wire(served: OpenAIServer, tmp_path: Path) -> None:
    log = _run("docket/smoke", served, tmp_path, message_limit=6)
    assert log.status == "success", log.error
    assert log.samples is not None and log.samples[0].error is None
    events = _model_events(log)
    assert events and all(e.error is None for e in events)
    assert {t.name for t in events[0].tools} == {"bash", "submit"}  # tools went over the wire
    calls = [c for e in events for c in (e.output.message.tool_calls or [])]
    # transformers serve turns only <tool_call>-tagged replies into tool_calls; Qwen-0.5B often
    # answers with a bare JSON call, which arrives as text (README: what a user can do)
    as_text = [
        call
        for e in events
        if not e.output.message.tool_calls
        for call in parse_tool_calls(e.output.message.text, ["bash", "submit"])[1]
    ]
    assert calls or as_text, "the model neither called a tool nor wrote a call as text"
    assert log.results is not None
    score = log.results.scores[0].metrics["accuracy"].value
    print(
        f"docket/smoke over openai-api: accuracy {score}, {len(events)} model calls, "
        f"{len(calls)} structured tool calls, {len(as_text)} calls returned as text"
    )


def test_anchor_direct_runs_over_the_wire(served: OpenAIServer, tmp_path: Path) -> None:
    log = _run("docket/anchor_direct", served, tmp_path, max_steps=2, self_audit=True)
    assert log.status == "success", log.error
    assert log.samples is not None and log.samples[0].error is None
    events = _model_events(log)
    assert any(e.tools for e in events)  # the agent under test was offered its tools
    assert all(e.error is None for e in events)
    print(f"docket/anchor_direct over openai-api: {len(events)} model calls")


#: `docket suite api` through the server: the three one-short-reply tasks of `make demo`.
SUITE_TASKS = ("docket/rl_arith", "docket/rl_constraints", "docket/context_qa")


def test_suite_api_runs_through_the_server(
    served: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")  # the server checks no key
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = "openai/" + served.model.rsplit("/", 1)[-1]  # the served checkpoint's folder name
    log_dir = tmp_path / "api"
    argv = ["suite", "api", "--model", model, "--base-url", served.base_url]
    argv += ["--limit", "1", "--max-tokens", "48", "--log-dir", str(log_dir), "--display", "none"]
    for task in SUITE_TASKS:
        argv += ["--task", task]
    assert copy_context().run(main, argv) == 0  # eval_set leaves its model active
    board = json.loads((tmp_path / "api-report" / "leaderboard.json").read_text())
    assert board["errored"]["total"] == 0 and board["unscored"] == []
    entries = {t["task"]: e for b in board["benchmarks"] for t in b["tables"] for e in t["entries"]}
    assert sorted(entries) == sorted(SUITE_TASKS)
    for task, entry in entries.items():
        assert entry["model"] == f"{model} responses_api=False" and entry["n"] == 1, task
        assert entry["health_known"] and entry["errored"] == 0, task
        assert entry["health"]["model_calls"] == 1, task  # one answered call per sample
    for task in SUITE_TASKS:
        (location,) = list((log_dir / task.replace("/", "_") / "models").glob("*.eval"))
        log = read_eval_log(str(location))
        assert log.status == "success", (task, log.error)
        assert log.eval.model_base_url == served.base_url
        assert log.eval.model_args.get("responses_api") is False  # chat completions, not /responses
        events = _model_events(log)
        assert len(events) == 1 and events[0].error is None, task
        assert events[0].output.usage is not None and events[0].output.usage.output_tokens <= 48
