"""How a role model answers: Inspect tool calls, one JSON object in text, or either (`auto`).

`json` is the original protocol: no tools are offered and the reply's text must hold the JSON
object. `tools` offers the role's tools (`tool_choice="any"`) and reads only the tool calls.
`auto` offers the tools (`tool_choice="auto"`) and reads the tool calls when the reply has any;
when it has none, or they do not map to a valid action, the reply's text is parsed as JSON (the
fallback). Every attempt that fails is kept with its reason (`Parsed.failures`), so a malformed
tool call is a counted failure, never a silent retry. A failed reply is answered with a retry
turn: its calls get a tool error with the reason, then a repair prompt names it (with the
caller's `hint`, e.g. a worked example); after `repairs` failed retries the caller gets None and
the last reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
)
from inspect_ai.tool import ToolCall, ToolCallError, ToolDef

from docket.agents.auditor.parse import REPAIR_PROMPT, ReplyFormatError

T = TypeVar("T")
Protocol = Literal["json", "tools", "auto"]
PROTOCOLS: tuple[str, ...] = ("json", "tools", "auto")

TOOL_REPAIR_PROMPT = (
    "Your previous reply could not be used: {error}. Call the tools again with valid arguments."
)
AUTO_REPAIR_PROMPT = (
    "Your previous reply could not be used: {error}. Call the tools again with valid arguments, "
    "or reply with ONLY the JSON object in the required format."
)
_REPAIRS = {"json": REPAIR_PROMPT, "tools": TOOL_REPAIR_PROMPT, "auto": AUTO_REPAIR_PROMPT}


def check_protocol(where: str, value: object) -> Protocol:
    """`value` as a protocol name, or a `ValueError` naming the accepted ones."""
    if value == "json" or value == "tools" or value == "auto":
        return value
    raise ValueError(f"{where} must be one of {', '.join(PROTOCOLS)}, not {value!r}")


@dataclass
class Parsed(Generic[T]):
    """The outcome of `generate_action`: the value (None on failure) and how it was reached.

    Attributes:
        value: The parsed action, or None when every attempt failed.
        path: "tool" (from tool calls), "text" (from the reply's JSON), or "" on failure.
        failures: One reason per failed parse, in order (a tool-call failure and its text
            fallback on the same reply are two entries, prefixed `tool:` and `text:`).
        replies: Replies generated (1 + repairs used).
    """

    value: T | None = None
    path: str = ""
    failures: list[str] = field(default_factory=list)
    replies: int = 0

    @property
    def error(self) -> str:
        """The last failure's reason ('' on success with no failure)."""
        return self.failures[-1] if self.failures else ""


def check_arguments(call: ToolCall, tools: Sequence[ToolDef]) -> dict[str, object]:
    """The arguments of `call` after checking it against the offered `tools`.

    Args:
        call: A tool call from the model.
        tools: The tools that were offered.

    Returns:
        The call's arguments.

    Raises:
        ReplyFormatError: Unknown tool, unparsable arguments, a missing required argument or
            an argument the tool does not declare.
    """
    offered = {t.name: t for t in tools}
    if call.function not in offered:
        raise ReplyFormatError(
            f"unknown tool {call.function!r}; the tools are {', '.join(offered)}"
        )
    if call.parse_error:
        raise ReplyFormatError(f"{call.function}: arguments unreadable ({call.parse_error})")
    params = offered[call.function].parameters
    missing = [name for name in params.required if call.arguments.get(name) is None]
    if missing:
        raise ReplyFormatError(f"{call.function}: missing argument {', '.join(missing)}")
    extra = sorted(set(call.arguments) - set(params.properties))
    if extra:
        raise ReplyFormatError(f"{call.function}: unknown argument {', '.join(extra)}")
    return dict(call.arguments)


def _read(
    output: ModelOutput,
    protocol: Protocol,
    from_calls: Callable[[list[ToolCall]], T],
    from_text: Callable[[str], T],
    failures: list[str],
) -> tuple[T, str] | None:
    calls = output.message.tool_calls or []
    if protocol != "json" and calls:
        try:
            return from_calls(calls), "tool"
        except ReplyFormatError as ex:
            failures.append(f"tool: {ex}")
    elif protocol == "tools":
        failures.append("tool: the reply has no tool call")
    if protocol == "tools":
        return None
    try:
        return from_text(output.completion), "text"
    except ReplyFormatError as ex:
        failures.append(f"text: {ex}" if protocol == "auto" else str(ex))
    return None


async def generate_action(
    model: Model,
    messages: list[ChatMessage],
    protocol: Protocol,
    tools: Sequence[ToolDef],
    from_calls: Callable[[list[ToolCall]], T],
    from_text: Callable[[str], T],
    repairs: int = 1,
    config: GenerateConfig | None = None,
    hint: str = "",
) -> Parsed[T]:
    """Generate and parse one action under `protocol`, with `repairs` repair prompts.

    Args:
        model: The role model.
        messages: The conversation to answer.
        protocol: `json`, `tools` or `auto` (module docstring).
        tools: The role's tools (offered unless `protocol` is `json`).
        from_calls: Maps the reply's tool calls to the action (raises `ReplyFormatError`).
        from_text: Parses the reply's text (raises `ReplyFormatError`).
        repairs: Repair prompts after a failed reply.
        config: Generation config of every call (e.g. a `response_schema`).
        hint: Appended to every repair prompt (e.g. a worked example of a valid call).

    Returns:
        The parsed action with its path and every failure's reason.
    """
    offered = [] if protocol == "json" else list(tools)
    choice: Literal["any", "auto"] = "any" if protocol == "tools" else "auto"
    conversation = list(messages)
    parsed: Parsed[T] = Parsed()
    for _ in range(repairs + 1):
        seen = len(parsed.failures)
        output = await model.generate(
            conversation, tools=offered, tool_choice=choice if offered else None,
            config=config or GenerateConfig(),
        )  # fmt: skip
        parsed.replies += 1
        read = _read(output, protocol, from_calls, from_text, parsed.failures)
        if read is not None:
            parsed.value, parsed.path = read
            return parsed
        error = "; ".join(parsed.failures[seen:])  # the tool call's reason and the text's
        calls = output.message.tool_calls or []
        conversation.append(
            ChatMessageAssistant(content=output.message.content, tool_calls=calls or None)
        )
        conversation += [
            ChatMessageTool(
                content="", tool_call_id=c.id, function=c.function,
                error=ToolCallError("parsing", f"not applied: {error}"),
            )
            for c in calls
        ]  # fmt: skip
        repair = _REPAIRS[protocol].format(error=error)
        conversation.append(ChatMessageUser(content=f"{repair} {hint}" if hint else repair))
    return parsed
