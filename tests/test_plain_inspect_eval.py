"""The README's plain line against a compatible server: `OPENAI_BASE_URL=... inspect eval
docket/smoke --model openai/<name>` speaks chat completions with `system`/`user` roles and
`max_tokens`, because docket's entry point registers the command line's models as plain chat
models (`docket/compatible.py`).

The server (`tests/fake_openai.py`, on 127.0.0.1) implements only `/v1/chat/completions`, answers
404 to the Responses API and 500 to a `developer` message, as llama.cpp's server does; behind
those checks it plays a competent agent, so the run must score 1.0."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
    get_model_info,
)

from docket import compatible
from tests.fake_openai import (
    Reply,
    chat_only,
    completion,
    fake_openai,
    prompt_text,
    tool_call_completion,
)

COMMAND = re.compile(r"```bash\n(.+?)\n```", re.S)


def agent(request: dict[str, Any]) -> Reply:
    """A competent agent: runs the prompt's shell command with `bash`, then submits."""
    messages = request.get("messages") or []
    if not request.get("tools"):
        return 200, completion("OK")
    if messages and messages[-1].get("role") == "tool":
        return 200, tool_call_completion([("submit", {"answer": "done"})])
    found = COMMAND.search(prompt_text(request))
    assert found is not None, "the prompt carries its shell command"
    return 200, tool_call_completion([("bash", {_argument(request, "bash"): found.group(1)})])


def _argument(request: dict[str, Any], tool: str) -> str:
    """The first required parameter of `tool` as the request declares it."""
    for item in request["tools"]:
        if item["function"]["name"] == tool:
            return str(item["function"]["parameters"]["required"][0])
    raise AssertionError(f"no {tool} tool in the request")


@pytest.fixture(autouse=True)
def _no_openai_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield


def _inspect_eval(base_url: str, log_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "test-key",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    inspect = Path(sys.executable).with_name("inspect")
    return subprocess.run(
        [str(inspect), "eval", "docket/smoke", *args, "--log-dir", str(log_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_plain_inspect_eval_scores_against_a_chat_completions_only_server(
    tmp_path: Path,
) -> None:
    with fake_openai(chat_only(agent), None) as server:
        result = _inspect_eval(
            server.base_url,
            tmp_path,
            "--model",
            "openai/qwen-local-7",
            "--limit",
            "1",
            "--max-tokens",
            "64",
            "--max-retries",
            "0",
            "--display",
            "plain",
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert requests and all(r["_path"].endswith("/chat/completions") for r in requests)
    first = requests[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert all(r["max_tokens"] == 64 and "max_completion_tokens" not in r for r in requests)
    (info,) = list_eval_logs(str(tmp_path))
    log = read_eval_log(info)
    assert log.status == "success", log.error
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == 1.0


def test_the_server_rejects_inspects_shape_for_an_unknown_name() -> None:
    """The adversary: unregistered, Inspect sends an unknown name's system prompt as a
    `developer` message, which this server answers with a 500."""
    with fake_openai(chat_only(agent), None) as server:
        model = get_model(
            "openai/unregistered-name-9",
            base_url=server.base_url,
            config=GenerateConfig(max_retries=0),
            memoize=False,
            responses_api=False,
            max_retries=0,
        )
        messages: list[ChatMessage] = [
            ChatMessageSystem(content="be brief"),
            ChatMessageUser(content="hi"),
        ]
        with pytest.raises(Exception, match="InternalServerError"):
            asyncio.run(model.generate(messages))
    assert server.requests[0]["messages"][0]["role"] == "developer"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"model": "openai/a,openai/b"}, [("openai/a", None), ("openai/b", None)]),
        (
            {"model": "openai/a", "model_base_url": "http://h:1/v1"},
            [("openai/a", "http://h:1/v1")],
        ),
        ({"model": "openai/a", "m": ("base_url=http://h:2/v1",)}, [("openai/a", "http://h:2/v1")]),
        (
            {"model": "openai/a", "model_role": ("judge=openai/j", "auditor={model: openai/x}")},
            [("openai/a", None), ("openai/j", None), ("openai/x", None)],
        ),
    ],
)
def test_command_line_models_reads_models_urls_and_roles(
    params: dict[str, Any], expected: list[tuple[str, str | None]]
) -> None:
    assert compatible.command_line_models(params) == expected


def test_only_openai_models_off_openais_servers_are_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not compatible.plain_chat_shape("openai/unknown-name-3")  # no URL: api.openai.com
    assert not compatible.plain_chat_shape("openai/unknown-name-3", "https://api.openai.com/v1")
    assert not compatible.plain_chat_shape("anthropic/x", "http://127.0.0.1:1/v1")
    assert not compatible.plain_chat_shape("openai/gpt-4o-mini", "http://127.0.0.1:1/v1")
    assert get_model_info("openai/unknown-name-3") is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert compatible.plain_chat_shape("openai/unknown-name-4")
    info = get_model_info("openai/unknown-name-4")
    assert info is not None and info.family == compatible.COMPATIBLE_FAMILY


def test_an_unreadable_command_line_never_breaks_the_entry_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INSPECT_EVAL_MODEL", "openai/env-named-5")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert compatible.shape_command_line_models() == ["openai/env-named-5"]
    monkeypatch.setattr(compatible, "_names", lambda _: 1 / 0)
    assert compatible.shape_command_line_models() == []


def test_eval_retry_reads_the_models_from_its_logs(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample

    (log,) = inspect_eval(
        Task(dataset=[Sample(input="hi")], name="tiny"),
        model="docket/scripted",
        model_args={"policy": "comply"},
        log_dir=str(tmp_path),
        display="none",
    )
    header = read_eval_log(log.location, header_only=True)
    header.eval.model, header.eval.model_base_url = "openai/retried-3", "http://127.0.0.1:1/v1"
    write_eval_log(header, log.location)
    found = compatible.retried_models((log.location, str(tmp_path / "missing.eval")))
    assert found == [("openai/retried-3", "http://127.0.0.1:1/v1")]
