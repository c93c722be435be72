"""The tool-call probe before agent runs (`docket/probe.py`): a server that returns a model's
tool calls as text stops `docket suite` and fails `docket doctor --model M` with one line; a
server that returns structured `tool_calls` passes (the control). A run on such a server says
why it scored 0 in its health cell.

Every server is a local fake (`tests/fake_openai.py`) on 127.0.0.1 that implements only chat
completions, as strict compatible servers do."""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import copy_context
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval

from docket import probe
from docket.cli import main
from docket.reports.health import behaviour_parts, read_health, summarise
from docket.suite import Overrides, load_preset, plan
from tests.fake_openai import (
    Reply,
    chat_only,
    closed_port,
    completion,
    fake_openai,
    tool_call_completion,
)
from tests.test_doctor import planted  # noqa: F401 - the fixture

AS_TEXT = 'functions.submit:\n{"answer": "ok"}'
LINE = (
    'openai/qwen: tool calls came back as text ("functions.submit: {"answer": "ok"}"); '
    "this server or template cannot run agent tasks: "
)


def as_text(request: dict[str, Any]) -> Reply:
    """A server whose template leaves the model's tool call in the text."""
    return 200, completion(AS_TEXT if request.get("tools") else "OK")


#: A text reply long enough that Inspect keeps it among the sample's attachments.
LONG_TEXT = "I will now create the file hello.txt for you. " * 8


def long_text(request: dict[str, Any]) -> Reply:
    """A server whose model answers a tool request with a long paragraph instead of a call."""
    return 200, completion(LONG_TEXT if request.get("tools") else "OK")


def structured(request: dict[str, Any]) -> Reply:
    """A server that parses the call into `tool_calls` (the control)."""
    if request.get("tools"):
        return 200, tool_call_completion([("submit", {"answer": "ok"})])
    return 200, completion("OK")


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield


def test_text_instead_of_a_tool_call_is_one_line_with_the_fix() -> None:
    with fake_openai(chat_only(as_text), None) as server:
        line = probe.tool_call_problem(probe.probe_model("openai/qwen", server.base_url))
        [request] = server.chats()
    assert line is not None and line.startswith(LINE) and "--jinja" in line
    assert {t["function"]["name"] for t in request["tools"]} == {"submit", "bash"}
    assert [m["role"] for m in request["messages"]] == ["system", "user"]


def test_a_structured_tool_call_passes() -> None:
    with fake_openai(chat_only(structured), None) as server:
        assert probe.tool_call_problem(probe.probe_model("openai/qwen", server.base_url)) is None


def test_a_dead_server_is_the_endpoint_line() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    line = probe.tool_call_problem(probe.probe_model("openai/qwen", url))
    assert line == f"{url}: connection refused"


def test_doctor_names_the_url_of_a_dead_server(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    [finding] = probe.tool_findings(["openai/qwen", "docket/scripted"])
    assert finding.line() == f"fail openai/qwen tool calls: {url}: connection refused"


def test_control_characters_in_the_reply_never_reach_the_line() -> None:
    with fake_openai(chat_only(lambda _: (200, completion("\x1b[2Jcall\x07 me"))), None) as s:
        line = probe.tool_call_problem(probe.probe_model("openai/qwen", s.base_url))
    assert line is not None and "\x1b" not in line and "\x07" not in line


def _suite_plans(base_url: str, task: str) -> list[Any]:
    return plan(
        load_preset("api"),
        Path("unused"),
        tasks=[task],
        models=["openai/qwen"],
        roles={"judge": "openai/qwen", "auditor": "openai/qwen", "emulator": "openai/qwen"},
        overrides=Overrides(base_url=base_url),
    )


def test_the_suite_probes_only_models_of_tasks_that_need_tools() -> None:
    with fake_openai(chat_only(as_text), None) as server:
        stops = probe.check_tool_calls(_suite_plans(server.base_url, "docket/smoke"))
        assert len(stops) == 1 and stops[0].startswith(LINE)
        assert probe.check_tool_calls(_suite_plans(server.base_url, "docket/context_qa")) == []
    with fake_openai(chat_only(structured), None) as server:
        assert probe.check_tool_calls(_suite_plans(server.base_url, "docket/smoke")) == []


def test_the_suite_stops_before_an_agent_task_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_openai(chat_only(as_text), None) as server:
        code = copy_context().run(
            main,
            [
                "suite",
                "api",
                "--model",
                "openai/qwen",
                "--base-url",
                server.base_url,
                "--task",
                "docket/smoke",
                "--log-dir",
                str(tmp_path / "logs"),
                "--display",
                "none",
            ],
        )
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1
    assert "error: " + LINE in out and "nothing ran" in out
    assert not (tmp_path / "logs").exists()


@pytest.mark.usefixtures("planted")
@pytest.mark.parametrize(("respond", "code"), [(as_text, 1), (structured, 0)])
def test_doctor_probes_each_network_model(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    respond: Any,
    code: int,
) -> None:
    with fake_openai(chat_only(respond), None) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["doctor", "--model", "openai/qwen"]) == code
    out = capsys.readouterr().out.splitlines()
    [line] = [x for x in out if x.split(" ", 1)[-1].lstrip().startswith("openai/qwen tool calls")]
    if code:
        assert line.startswith('fail openai/qwen tool calls: tool calls came back as text ("')
        assert out[-1].startswith(
            "cannot run (sandbox bwrap, openai/qwen): openai/qwen tool calls failed, so no task "
            "can run on openai/qwen"
        )
    else:
        assert line == "ok   openai/qwen tool calls: a structured tool call came back"


@pytest.mark.parametrize("respond", [as_text, long_text])
def test_a_run_that_never_made_a_tool_call_says_so_in_its_health(
    tmp_path: Path, respond: Any
) -> None:
    with fake_openai(chat_only(respond), None) as server:
        probe.probe_model("openai/qwen-run", server.base_url)  # the plain chat shape
        (log,) = copy_context().run(
            inspect_eval,
            "docket/smoke",
            model="openai/qwen-run",
            model_base_url=server.base_url,
            task_args={"message_limit": 4},
            limit=1,
            max_retries=0,
            log_dir=str(tmp_path),
            display="none",
        )
    assert log.results is not None and log.results.scores[0].metrics["accuracy"].value == 0.0
    _, samples = read_health(log.location)
    parts = behaviour_parts(summarise(list(samples.values())))
    if respond is as_text:
        assert parts[0] == (
            'no structured tool call 1/1 (replies were text, e.g. "functions.submit: {"answer": '
            '"ok"}"; a server that does not parse tool calls cannot run agent tasks)'
        )
    else:  # the reply's words, not the attachment it was kept in
        assert parts[0].startswith(
            'no structured tool call 1/1 (replies were text, e.g. "I will now create the file'
        )
