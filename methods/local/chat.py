"""Chat rendering for local models: Inspect messages -> template dicts, and tool-call parsing.

Pure Python (no torch). A chat template that renders tools itself (it reads `tools`, as
Qwen2.5's does) gets OpenAI-style messages and function schemas (`render_native`,
`tool_schemas`) for `apply_chat_template(tools=...)`; any other template gets docket's fallback:
tools offered through the system prompt as JSON schemas, tool calls and results as tagged text.
Calls are parsed back out of the reply (`<tool_call>{...}</tool_call>` blocks, fenced JSON or a
bare `{"name", "arguments"}` object), and `check_arguments` keeps only the arguments a tool's
schema declares, reporting any other key to the model through `ToolCall.parse_error`.
For vision-language models `render_multimodal` keeps each image where it stands, as a
`{"type": "image"}` slot for the processor's chat template, and returns the images in order.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection, Sequence
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ContentAudio,
    ContentDocument,
    ContentImage,
    ContentText,
    ContentVideo,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolFunction, ToolInfo

TOOL_PROMPT = (
    "You can call tools. To call one, reply with a JSON object inside tags, exactly like:\n"
    '<tool_call>{{"name": "<tool name>", "arguments": {{<arguments>}}}}</tool_call>\n'
    "{choice}The tools, as JSON schemas:\n{schemas}"
)

_TEMPLATE_TOOLS = re.compile(r"\btools\b")
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def tools_prompt(tools: Sequence[ToolInfo], tool_choice: ToolChoice) -> str:
    """The system-prompt text that offers `tools` (empty when none are offered)."""
    if not tools or tool_choice == "none":
        return ""
    if isinstance(tool_choice, ToolFunction):
        choice = f"You must call the tool `{tool_choice.name}`.\n"
    elif tool_choice == "any":
        choice = "You must call one of the tools.\n"
    else:
        choice = "Call a tool only when it helps; otherwise answer in plain text.\n"
    schemas = "\n".join(json.dumps(t.model_dump(exclude_none=True)) for t in tools)
    return TOOL_PROMPT.format(choice=choice, schemas=schemas)


def template_renders_tools(template: object) -> bool:
    """Whether a chat template renders offered tools itself (its Jinja source reads `tools`).

    Args:
        template: The tokenizer's `chat_template` (a string, a dict of named templates, None).

    Returns:
        True when `apply_chat_template(tools=...)` will show the tools to the model.
    """
    if isinstance(template, dict):
        template = template.get("tool_use") or template.get("default")
    return isinstance(template, str) and bool(_TEMPLATE_TOOLS.search(template))


def tool_schemas(tools: Sequence[ToolInfo]) -> list[dict[str, Any]]:
    """Offered tools as the OpenAI-style function schemas chat templates expect.

    The top-level `additionalProperties: false` is left out (templates show the schema verbatim
    and small models copy its keys into their arguments); `check_arguments` enforces it.

    Args:
        tools: The tools offered.

    Returns:
        One `{"type": "function", "function": {...}}` dict per tool.
    """
    out = []
    for tool in tools:
        parameters = tool.parameters.model_dump(exclude_none=True)
        parameters.pop("additionalProperties", None)
        function = {"name": tool.name, "description": tool.description, "parameters": parameters}
        out.append({"type": "function", "function": function})
    return out


def _choice_instruction(tool_choice: ToolChoice) -> str:
    """What a template that knows no tool_choice is told (empty for `auto`)."""
    if isinstance(tool_choice, ToolFunction):
        return f"You must call the tool `{tool_choice.name}`."
    return "You must call one of the tools." if tool_choice == "any" else ""


def render_native(
    messages: Sequence[ChatMessage], tool_choice: ToolChoice = "auto"
) -> list[dict[str, Any]]:
    """Messages as OpenAI-style dicts for a template that renders tools and tool turns itself.

    System messages (plus what `tool_choice` demands) become one leading system message;
    assistant tool calls become `tool_calls` entries and tool results `tool` messages (an error
    as `Error: ...`); consecutive user or assistant turns are merged. Only text is kept.

    Args:
        messages: The conversation.
        tool_choice: Inspect's tool choice (`none` is handled by offering no tools).

    Returns:
        The message dicts.
    """
    system = [m.text for m in messages if m.role == "system"] + [_choice_instruction(tool_choice)]
    out: list[dict[str, Any]] = []
    if any(system):
        out.append({"role": "system", "content": "\n\n".join(s for s in system if s)})
    for message in messages:
        if message.role == "system":
            continue
        text = "".join(
            p for p in _message_parts(message, False, tagged=False) if isinstance(p, str)
        )
        if isinstance(message, ChatMessageTool):
            out.append({"role": "tool", "content": text, "name": message.function or ""})
            continue
        entry: dict[str, Any] = {"role": message.role, "content": text}
        if isinstance(message, ChatMessageAssistant) and message.tool_calls:
            entry["tool_calls"] = [
                {
                    "type": "function",
                    "id": call.id,
                    "function": {"name": call.function, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ]
        last = out[-1] if out else None
        if last and last["role"] == entry["role"] and "tool_calls" not in last:
            last["content"] = "\n\n".join(t for t in (last["content"], text) if t)
            if "tool_calls" in entry:
                last["tool_calls"] = entry["tool_calls"]
        else:
            out.append(entry)
    return out


def check_arguments(calls: Sequence[ToolCall], tools: Sequence[ToolInfo]) -> list[ToolCall]:
    """Keep only the arguments each tool's schema declares; report any other key to the model.

    A call with undeclared keys (small models echo schema keys such as `required` or
    `additionalProperties` next to the real arguments) keeps its declared arguments and gets a
    `parse_error` naming the offending keys, which Inspect returns to the model as the tool's
    error instead of running it. Calls of unknown tools are left for Inspect to report.

    Args:
        calls: The parsed calls.
        tools: The tools offered.

    Returns:
        The calls, checked.
    """
    declared = {tool.name: tool.parameters.properties for tool in tools}
    out = []
    for call in calls:
        accepted = declared.get(call.function)
        extra = sorted(set(call.arguments) - set(accepted)) if accepted is not None else []
        if extra and accepted is not None:
            names = ", ".join(repr(k) for k in extra)
            takes = ", ".join(accepted) or "no arguments"
            call = ToolCall(
                id=call.id,
                function=call.function,
                arguments={k: v for k, v in call.arguments.items() if k in accepted},
                parse_error=(
                    f"Tool {call.function} was not run: it does not take the argument(s) {names} "
                    f"(it takes: {takes}). Call it again with only its own arguments."
                ),
            )
        out.append(call)
    return out


def format_tool_call(call: ToolCall) -> str:
    """One tool call as the tagged text the model is asked to produce.

    `<` is written as its JSON escape so an argument holding `</tool_call>` cannot end the block.
    """
    payload = json.dumps({"name": call.function, "arguments": call.arguments})
    return "<tool_call>" + payload.replace("<", "\\u003c") + "</tool_call>"


#: Media a text-only renderer would drop, by content class, named for error messages.
MEDIA: tuple[tuple[type, str], ...] = (
    (ContentImage, "images"),
    (ContentAudio, "audio"),
    (ContentVideo, "video"),
    (ContentDocument, "documents"),
)

#: One part of a rendered message: text, or an image to put in a template image slot.
Part = str | ContentImage


def media_kinds(messages: Sequence[ChatMessage]) -> list[str]:
    """The kinds of non-text media the messages carry ("images", "audio", ...), in MEDIA order."""
    found = {type(part) for m in messages if not isinstance(m.content, str) for part in m.content}
    return [name for kind, name in MEDIA if kind in found]


def _joined(parts: list[Part], glue: str) -> list[Part]:
    """Adjacent text parts joined with `glue`."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] = out[-1] + glue + part
        else:
            out.append(part)
    return out


def _message_parts(message: ChatMessage, images: bool, tagged: bool = True) -> list[Part]:
    """The message as text (joined as `ChatMessage.text` joins it) and, with `images`, its
    images in place; with `tagged`, tool results and calls as docket's tagged text."""
    kinds = (ContentText, ContentImage) if images else (ContentText,)
    if isinstance(message.content, str):
        parts: list[Part] = [message.content]
    else:
        parts = [
            part.text if isinstance(part, ContentText) else part
            for part in message.content
            if isinstance(part, kinds)
        ]
    parts = _joined(parts, "\n")
    if isinstance(message, ChatMessageTool) and not tagged:
        return [f"Error: {message.error.message}" if message.error else message.text]
    if not tagged:
        return parts
    if isinstance(message, ChatMessageTool):
        body = f"Error: {message.error.message}" if message.error else message.text
        head = f'<tool_response name="{message.function or ""}">\n{body}'
        shown = [p for p in parts if isinstance(p, ContentImage)]
        return [head, *shown, "\n</tool_response>"] if shown else [f"{head}\n</tool_response>"]
    if isinstance(message, ChatMessageAssistant) and message.tool_calls:
        parts = _joined([*parts, "\n".join(format_tool_call(c) for c in message.tool_calls)], "\n")
    return parts


def _rendered(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolInfo],
    tool_choice: ToolChoice,
    images: bool,
) -> list[tuple[str, list[Part]]]:
    """(role, parts) turns: one leading system turn, tool results as user turns, and
    consecutive turns of one role merged (a blank line between them) so strict templates that
    demand user/assistant alternation accept the result."""
    system = [m.text for m in messages if m.role == "system"] + [tools_prompt(tools, tool_choice)]
    system = [s for s in system if s]
    out: list[tuple[str, list[Part]]] = []
    if system:
        out.append(("system", ["\n\n".join(system)]))
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        parts = _message_parts(message, images)
        if out and out[-1][0] == role:
            previous = out[-1][1]
            if previous and isinstance(previous[-1], str):
                previous[-1] += "\n\n"
            else:
                previous.append("\n\n")
            previous.extend(parts)
            out[-1] = (role, _joined(previous, ""))
        else:
            out.append((role, parts))
    return out


def render_messages(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolInfo] = (),
    tool_choice: ToolChoice = "auto",
) -> list[dict[str, str]]:
    """Messages as `{"role", "content"}` text dicts for a text model's `apply_chat_template`.

    All system messages (plus the tools prompt) become one leading system message; tool
    results become user turns; consecutive turns of one role are merged. Only text is kept:
    check `media_kinds` first.
    """
    return [
        {"role": role, "content": "".join(p for p in parts if isinstance(p, str))}
        for role, parts in _rendered(messages, tools, tool_choice, images=False)
    ]


def render_multimodal(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolInfo] = (),
    tool_choice: ToolChoice = "auto",
) -> tuple[list[dict[str, Any]], list[ContentImage]]:
    """Messages as content-list dicts for a processor's chat template, and their images.

    Turns are merged as in `render_messages`; each image becomes a `{"type": "image"}` slot in
    place and is returned in slot order, so `processor(text=..., images=...)` pairs them.
    """
    out: list[dict[str, Any]] = []
    images: list[ContentImage] = []
    for role, parts in _rendered(messages, tools, tool_choice, images=True):
        content: list[dict[str, str]] = []
        for part in parts:
            if isinstance(part, ContentImage):
                images.append(part)
                content.append({"type": "image"})
            elif part:
                content.append({"type": "text", "text": part})
        out.append({"role": role, "content": content})
    return out, images


def _as_call(obj: Any, names: Collection[str] | None) -> ToolCall | None:
    """A ToolCall from a decoded `{"name", "arguments"}` object, else None."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):  # bad JSON, over-long ints, deep nesting
            return None
    if not isinstance(args, dict) or (names is not None and obj["name"] not in names):
        return None
    return ToolCall(id=f"call_{uuid.uuid4().hex[:16]}", function=obj["name"], arguments=args)


def _calls_in(payload: str, names: Collection[str] | None) -> list[ToolCall] | None:
    """All calls in a JSON payload (an object or a list of objects), or None if any is bad."""
    fenced = _FENCE.match(payload.strip())
    try:
        obj = json.loads(fenced.group(1) if fenced else payload)
    except (ValueError, RecursionError):  # bad JSON, over-long ints, deep nesting
        return None
    items = obj if isinstance(obj, list) else [obj]
    calls = [_as_call(item, names) for item in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def _bare_calls(text: str, names: Collection[str]) -> tuple[str, list[ToolCall]]:
    """Untagged `{"name": ..., "arguments": ...}` objects naming an offered tool."""
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    kept: list[str] = []
    pos = 0
    for match in re.finditer(r"\{", text):
        start = match.start()
        if start < pos:
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # bad JSON, over-long ints, deep nesting
            continue
        call = _as_call(obj, names)
        if call is not None:
            calls.append(call)
            kept.append(text[pos:start])
            pos = end
    kept.append(text[pos:])
    return "".join(kept), calls


def parse_tool_calls(
    text: str, tool_names: Collection[str] | None = None
) -> tuple[str, list[ToolCall]]:
    """Split a model reply into (remaining text, tool calls).

    `<tool_call>` blocks may name any tool (Inspect reports unknown ones to the model); a
    bare JSON object counts only when `tool_names` is given and contains its name. A block
    whose JSON does not parse stays in the text.
    """
    calls: list[ToolCall] = []

    def take(match: re.Match[str]) -> str:
        found = _calls_in(match.group(1), None)
        if found is None:
            return match.group(0)
        calls.extend(found)
        return ""

    rest = _TAGGED.sub(take, text)
    if not calls and tool_names:
        rest, calls = _bare_calls(text, tool_names)
        fenced = _FENCE.match(rest.strip()) if calls else None
        rest = fenced.group(1) if fenced else rest
    return rest.strip(), calls
