"""Tool calls of local models: native template rendering, the three reply forms, and undeclared
arguments reported to the model through Inspect's `ToolCall.parse_error`."""

from __future__ import annotations

import pytest
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.model._call_tools import execute_tools
from inspect_ai.tool import Tool, ToolCall, ToolFunction, ToolInfo, ToolParam, ToolParams, tool

from docket.methods.local.chat import (
    check_arguments,
    parse_tool_calls,
    render_native,
    template_renders_tools,
    tool_schemas,
)

BASH = ToolInfo(
    name="bash",
    description="Run a command.",
    parameters=ToolParams(properties={"command": ToolParam(type="string")}, required=["command"]),
)


def test_template_renders_tools_reads_the_jinja_source() -> None:
    assert template_renders_tools("{%- if tools %}{{ tools | tojson }}{% endif %}")
    assert template_renders_tools({"default": "x", "tool_use": "{% for t in tools %}{% endfor %}"})
    assert not template_renders_tools(
        "{% for message in messages %}{{ message.content }}{% endfor %}"
    )
    assert not template_renders_tools(None)


def test_tool_schemas_are_openai_functions_without_additional_properties() -> None:
    assert BASH.parameters.model_dump(exclude_none=True)["additionalProperties"] is False
    assert tool_schemas([BASH]) == [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a command.",
                "parameters": {
                    "type": "object",
                    "properties": {"command": {"type": "string"}},
                    "required": ["command"],
                },
            },
        }
    ]


def test_render_native_keeps_tool_calls_and_tool_turns() -> None:
    call = ToolCall(id="c1", function="bash", arguments={"command": "ls"})
    messages = render_native(
        [
            ChatMessageSystem(content="Be brief."),
            ChatMessageUser(content="List."),
            ChatMessageUser(content="Now."),
            ChatMessageAssistant(content="", tool_calls=[call]),
            ChatMessageTool(content="a.txt", tool_call_id="c1", function="bash"),
            ChatMessageTool(content="", tool_call_id="c2", function="bash", error=None),
        ],
        ToolFunction(name="bash"),
    )
    assert messages == [
        {"role": "system", "content": "Be brief.\n\nYou must call the tool `bash`."},
        {"role": "user", "content": "List.\n\nNow."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "c1",
                    "function": {"name": "bash", "arguments": {"command": "ls"}},
                }
            ],
        },
        {"role": "tool", "content": "a.txt", "name": "bash"},
        {"role": "tool", "content": "", "name": "bash"},
    ]


@pytest.mark.parametrize(
    "reply",
    [
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>',
        '```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```',
        'Sure: {"name": "bash", "arguments": {"command": "ls"}}',
    ],
)
def test_three_reply_forms_parse(reply: str) -> None:
    _, calls = parse_tool_calls(reply, ["bash"])
    assert [(c.function, c.arguments) for c in calls] == [("bash", {"command": "ls"})]


def test_undeclared_arguments_become_a_parse_error_naming_them() -> None:
    echoed = (
        '<tool_call>{"name": "bash", "arguments": {"command": "ls", "required": ["command"], '
        '"additionalProperties": false}}</tool_call>'
    )
    _, calls = parse_tool_calls(echoed, ["bash"])
    (checked,) = check_arguments(calls, [BASH])
    assert checked.arguments == {"command": "ls"}
    assert checked.parse_error == (
        "Tool bash was not run: it does not take the argument(s) 'additionalProperties', "
        "'required' (it takes: command). Call it again with only its own arguments."
    )
    clean = ToolCall(id="c", function="bash", arguments={"command": "ls"})
    unknown = ToolCall(id="d", function="python", arguments={"code": "1"})
    assert check_arguments([clean, unknown], [BASH]) == [clean, unknown]


async def test_inspect_returns_the_parse_error_to_the_model_without_running_the_tool() -> None:
    ran: list[str] = []

    @tool
    def bash() -> Tool:
        async def execute(command: str) -> str:
            """Run a command.

            Args:
                command: The command.
            """
            ran.append(command)
            return "ok"

        return execute

    (call,) = check_arguments(
        [ToolCall(id="c1", function="bash", arguments={"command": "ls", "required": ["x"]})],
        [BASH],
    )
    message = ChatMessageAssistant(content="", tool_calls=[call])
    result = await execute_tools([message], [bash()])
    (reply,) = result.messages
    assert isinstance(reply, ChatMessageTool) and reply.error is not None
    assert reply.error.type == "parsing" and "'required'" in reply.error.message
    assert ran == []
