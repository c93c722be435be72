"""Can a network model run agent tasks? One request with two tools; one line when it cannot.

A compatible server whose chat template or tool-call parser does not turn the model's calls
into structured `tool_calls` returns them as text (`functions.submit: ...`); an agent task then
scores 0 as if every answer were wrong. `docket suite` sends this probe, before a run, to each
network model that a task needing tools gives them to (a task's `needs_tools` in its
`listing.yaml`: `model` and/or role names), and `docket doctor --model M` to each network model
it names; a reply without a structured call stops with one line naming the fix.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.tool import ToolInfo, ToolParam, ToolParams

from docket import compatible, endpoints
from docket.benchmarks.presets import listed_tasks

if TYPE_CHECKING:
    from docket.doctor import Finding
    from docket.suite import ModelSpec, TaskPlan

#: Tokens the probe's reply may take (a tool call's JSON needs more than the endpoint probe's 16).
PROBE_TOKENS = 128

#: Characters of a text reply quoted in the line.
QUOTED = 40

#: What makes a compatible server return structured tool calls.
FIX = (
    "serve the model with a chat template and tool-call parser that return `tool_calls` "
    "(llama.cpp: --jinja; vLLM: --enable-auto-tool-choice --tool-call-parser NAME; "
    "llama-cpp-python: --chat_format chatml-function-calling with one tool, or a "
    "functionary model), or run only tasks without tools"
)


def _tool(name: str, description: str, param: str) -> ToolInfo:
    """A tool of one required string parameter."""
    return ToolInfo(
        name=name,
        description=description,
        parameters=ToolParams(
            properties={param: ToolParam(type="string", description=f"The {param}.")},
            required=[param],
        ),
    )


#: The probe's two tools: one the model is asked to call, one it is not.
TOOLS = [
    _tool("submit", "Submit the final answer.", "answer"),
    _tool("bash", "Run a shell command and return its output.", "cmd"),
]

PROMPT = "Call the submit tool with the answer 'ok'. Do not write anything else."


def _quoted(text: str) -> str:
    flat = " ".join(text.split())
    shown = flat[:QUOTED] + ("..." if len(flat) > QUOTED else "")
    return '"' + "".join(c if c.isprintable() else " " for c in shown) + '"'


async def _probe(model: Model, name: str) -> str | None:
    messages: list[ChatMessage] = [
        ChatMessageSystem(content="You are an agent. Use the tools you are given."),
        ChatMessageUser(content=PROMPT),
    ]
    config = GenerateConfig(max_tokens=PROBE_TOKENS, max_retries=0, timeout=60)
    try:
        output = await model.generate(messages, tools=TOOLS, tool_choice="auto", config=config)
    except Exception as error:  # noqa: BLE001 - every failure becomes the one line
        return endpoints.error_line(error, endpoints.where(model), name)
    if output.message.tool_calls:
        return None
    text = output.completion.strip()
    if text:
        return f"{name}: tool calls came back as text ({_quoted(text)}); {_cannot(FIX)}"
    return f"{name}: no tool call and no text came back; {_cannot(FIX)}"


def _cannot(fix: str) -> str:
    return f"this server or template cannot run agent tasks: {fix}"


def tool_call_problem(model: Model, name: str | None = None) -> str | None:
    """Ask `model` to call one of two tools; the one-line problem, or None when it did.

    Args:
        model: A network model.
        name: How the line names it (default: `provider/name`).

    Returns:
        None when the reply carries a structured tool call; else one line: the call failed
        (`endpoints.error_line`), or the reply was text (quoted) or empty, with the fix.
    """
    return asyncio.run(_probe(model, name or str(model)))


def probe_model(model: str, base_url: str | None = None, **args: object) -> Model:
    """A fresh (not memoized) model for a probe, shaped as a plain chat model off OpenAI.

    Args:
        model: The model's name.
        base_url: Its base URL (None: the provider's default or environment).
        **args: Its `-M` args.

    Returns:
        The model, its client's own retries off.
    """
    if base_url is None and model.startswith("openai/"):  # named in the probe's line
        base_url = os.environ.get("OPENAI_BASE_URL") or None
    compatible.plain_chat_shape(model, base_url)
    probe_args = endpoints.probe_args(model, dict(args))
    return get_model(model, base_url=base_url, memoize=False, **probe_args)


def tool_users(task: str) -> list[str]:
    """Who a task gives tools to and cannot run without them (its listing's `needs_tools`).

    Args:
        task: A registered task name.

    Returns:
        `model` (the models under test) and/or role names; empty for a task without tools.
    """
    listed = listed_tasks().get(task, {})
    return [str(who) for who in listed.get("needs_tools") or []]


def _tool_models(item: TaskPlan) -> list[ModelSpec]:
    found = []
    for who in tool_users(item.task):
        if who == "model":
            found.extend(item.models)
        elif who in item.roles:
            found.append(item.roles[who])
    return [spec for spec in found if endpoints.is_network(spec.model)]


def check_tool_calls(plans: list[TaskPlan]) -> list[str]:
    """Probe each network model a task needing tools gives them to, once; the problem lines.

    Args:
        plans: The suite's plans.

    Returns:
        One line per model that returned no structured tool call (or failed), empty to go on.
    """
    seen: dict[str, str | None] = {}
    for item in plans:
        for spec in _tool_models(item):
            key = f"{spec.label} @ {spec.base_url or ''}"
            if key not in seen:
                model = probe_model(spec.model, spec.base_url, **spec.args)
                seen[key] = tool_call_problem(model, spec.model)
    return list(dict.fromkeys(line for line in seen.values() if line))


def tool_findings(models: list[str]) -> list[Finding]:
    """`docket doctor`'s tool-call finding for each network model it names.

    Args:
        models: The `--model` names.

    Returns:
        One finding per network model: `ok` when it made a structured tool call, else `fail`
        (blocking that model) with the probe's line.
    """
    from docket.doctor import Finding

    found = []
    for name in dict.fromkeys(models):
        if not endpoints.is_network(name):
            continue
        try:
            problem = tool_call_problem(probe_model(name), name)
        except Exception as error:  # noqa: BLE001 - a model Inspect cannot build is one line
            problem = f"{name}: {type(error).__name__}: {' '.join(str(error).split())}"
        item = f"{name} tool calls"
        if problem is None:
            found.append(Finding(item, "ok", "a structured tool call came back"))
        else:
            detail = problem.removeprefix(f"{name}: ")
            found.append(Finding(item, "fail", detail, blocks=frozenset({name})))
    return found
