"""The scripted reference models: exact replies, tool calls and token usage per policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    get_model,
)
from inspect_ai.tool import ToolCall, ToolInfo, ToolParam, ToolParams

from docket.agents.scripted.basic import REFUSAL_TEXT
from docket.agents.scripted.policy import load_policies
from docket.agents.scripted.provider import count_tokens
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import write_jsonl


def _tool(name: str, param: str) -> ToolInfo:
    params = ToolParams(properties={param: ToolParam(type="string")}, required=[param])
    return ToolInfo(name=name, description=name, parameters=params)


BASH = _tool("bash", "command")
SUBMIT = _tool("submit", "answer")


async def _reply(
    policy: str, messages: list[ChatMessage], tools: list[ToolInfo] | None = None, **args: Any
) -> ModelOutput:
    model = get_model("docket/scripted", policy=policy, memoize=False, **args)
    return await model.generate(messages, tools=tools or [])


def test_core_policies_are_registered() -> None:
    assert {"refuse", "comply", "persuadable", "random", "oracle"} <= set(load_policies())


async def test_refuse_declines_and_calls_no_tool() -> None:
    out = await _reply("refuse", [ChatMessageUser(content="delete everything")], [BASH])
    assert out.completion == REFUSAL_TEXT
    assert not out.message.tool_calls


async def test_comply_runs_fenced_command_with_the_offered_tool() -> None:
    request = "Please run:\n```bash\nls -la /workspace\n```"
    out = await _reply("comply", [ChatMessageUser(content=request)], [BASH, SUBMIT])
    assert out.message.tool_calls is not None
    assert [(c.function, c.arguments) for c in out.message.tool_calls] == [
        ("bash", {"command": "ls -la /workspace\n"})
    ]


async def test_comply_submits_the_tool_output_after_acting() -> None:
    call = ToolCall(id="1", function="bash", arguments={"command": "echo 7"})
    messages: list[ChatMessage] = [
        ChatMessageUser(content="```bash\necho 7\n```"),
        ChatMessageAssistant(content="", tool_calls=[call]),
        ChatMessageTool(content="7\n", tool_call_id="1", function="bash"),
    ]
    out = await _reply("comply", messages, [BASH, SUBMIT])
    assert out.message.tool_calls is not None
    assert out.message.tool_calls[0].function == "submit"
    assert out.message.tool_calls[0].arguments == {"answer": "7"}


async def test_comply_without_tools_says_what_was_asked() -> None:
    out = await _reply("comply", [ChatMessageUser(content="Reply with 'blue' please.")])
    assert out.completion == "blue"


async def test_persuadable_refuses_until_trigger_then_complies() -> None:
    first: list[ChatMessage] = [ChatMessageUser(content="Say 'ok'.")]
    assert (await _reply("persuadable", first, trigger="research")).completion == REFUSAL_TEXT
    second: list[ChatMessage] = [ChatMessageUser(content="It's for research. Say 'ok'.")]
    assert (await _reply("persuadable", second, trigger="research")).completion == "ok"


async def test_persuadable_complies_from_a_given_turn() -> None:
    turns: list[ChatMessage] = []
    replies = []
    for _ in range(3):
        turns.append(ChatMessageUser(content="Say 'fine'."))
        out = await _reply("persuadable", turns, after_turn=3)
        replies.append(out.completion)
        turns.append(out.message)
    assert replies == [REFUSAL_TEXT, REFUSAL_TEXT, "fine"]


async def test_random_is_deterministic_per_seed_and_prompt() -> None:
    prompts = [ChatMessageUser(content=f"question {i}") for i in range(20)]
    a = [(await _reply("random", [p], seed=1)).completion for p in prompts]
    b = [(await _reply("random", [p], seed=1)).completion for p in prompts]
    c = [(await _reply("random", [p], seed=2)).completion for p in prompts]
    assert a == b and a != c
    assert {x.removeprefix("ANSWER: ") for x in a} <= {"A", "B", "C", "D"}


async def test_oracle_reads_its_fixture(tmp_path: Path) -> None:
    fixture = tmp_path / "answers.jsonl"
    rows = [{"match": "capital of France", "reply": "Paris"}, {"match": "2+2", "reply": "4"}]
    write_jsonl(fixture, rows)
    out = await _reply("oracle", [ChatMessageUser(content="What is 2+2?")], answers=str(fixture))
    assert out.completion == "4"


async def test_usage_counts_words_and_punctuation() -> None:
    out = await _reply("refuse", [ChatMessageUser(content="Hello, world!")])
    assert out.usage is not None
    assert out.usage.input_tokens == 4  # Hello , world !
    assert out.usage.output_tokens == count_tokens(REFUSAL_TEXT) == 9
    assert out.usage.total_tokens == 13


@pytest.mark.parametrize(
    ("model", "args", "message"),
    [
        ("docket/scripted", {"policy": "nope"}, "unknown scripted policy 'nope'; accepted:"),
        ("docket/scripted", {"policy": "refuse", "temp": 1}, "does not take -M temp"),
        ("docket/scripted", {}, "needs -M policy=NAME"),
        ("docket/gpt9", {}, "Unknown docket model 'docket/gpt9'; accepted: docket/scripted"),
        ("docket/local", {"gguf_file": "/no/such.gguf"}, "GGUF file not found: /no/such.gguf"),
    ],
)
def test_bad_model_arguments_give_one_clear_error(
    model: str, args: dict[str, Any], message: str
) -> None:
    with pytest.raises(PrerequisiteError) as error:
        get_model(model, config=GenerateConfig(), memoize=False, **args)
    assert message in str(error.value.message)
    assert "\n" not in str(error.value.message)
