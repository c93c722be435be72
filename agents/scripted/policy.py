"""The policy registry behind `--model docket/scripted -M policy=NAME`.

A policy is a pure function of the conversation so far: it reads a `PolicyInput` and returns a
`PolicyReply` (text and/or tool calls). Policies are registered with `@policy(...)`: the generic
ones in the modules of this package, each benchmark's own in its `benchmarks/<b>/reference.py`,
which its task module imports. `load_policies()` imports this package's modules and loads
docket's Inspect entry point (`docket._registry`, which imports every benchmark's task module),
so a benchmark's policies are registered wherever the scripted provider is used.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    Logprobs,
)
from inspect_ai.tool import ToolInfo


@dataclass(frozen=True)
class PolicyInput:
    """What a policy sees: the conversation, the offered tools and its own `-M` arguments."""

    messages: list[ChatMessage]
    tools: list[ToolInfo]
    config: GenerateConfig
    args: Mapping[str, Any]

    @property
    def last_user_text(self) -> str:
        """Text of the most recent user message ('' when there is none)."""
        for message in reversed(self.messages):
            if isinstance(message, ChatMessageUser):
                return message.text
        return ""

    @property
    def user_turn(self) -> int:
        """1-based index of the current user turn (number of user messages so far)."""
        return sum(isinstance(m, ChatMessageUser) for m in self.messages)

    @property
    def tool_results_since_user(self) -> list[ChatMessageTool]:
        """Tool results that arrived after the most recent user message."""
        results: list[ChatMessageTool] = []
        for message in reversed(self.messages):
            if isinstance(message, ChatMessageUser):
                break
            if isinstance(message, ChatMessageTool):
                results.append(message)
        return list(reversed(results))

    def offered(self, name: str) -> ToolInfo | None:
        """The offered tool called `name`, if any."""
        return next((tool for tool in self.tools if tool.name == name), None)


@dataclass(frozen=True)
class ToolRequest:
    """One tool call a policy wants to make."""

    function: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class PolicyReply:
    """A policy's turn: assistant text plus optional tool calls and token logprobs."""

    text: str = ""
    tool_calls: list[ToolRequest] = field(default_factory=list)
    logprobs: Logprobs | None = None


PolicyFn = Callable[[PolicyInput], PolicyReply]


@dataclass(frozen=True)
class PolicySpec:
    """A registered policy, its documentation and the `-M` arguments it accepts."""

    name: str
    fn: PolicyFn
    doc: str
    args: Mapping[str, type]


_POLICIES: dict[str, PolicySpec] = {}


def policy(name: str, args: Mapping[str, type] | None = None) -> Callable[[PolicyFn], PolicyFn]:
    """Register a scripted policy under `name`, accepting the `-M` arguments in `args`."""

    def register(fn: PolicyFn) -> PolicyFn:
        if name in _POLICIES and _POLICIES[name].fn is not fn:
            raise ValueError(f"scripted policy {name!r} is registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        _POLICIES[name] = PolicySpec(name=name, fn=fn, doc=doc, args=dict(args or {}))
        return fn

    return register


#: The Inspect entry point (group `inspect_ai`) whose loading registers docket's benchmarks.
ENTRY_POINT = "docket"


def load_policies() -> dict[str, PolicySpec]:
    """Every registered scripted policy by name.

    Imports every module of this package and loads docket's Inspect entry point, whose
    benchmarks register their reference policies when their task modules are imported.

    Returns:
        The registry, sorted by policy name.
    """
    package = importlib.import_module(__package__ or "docket.agents.scripted")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    for point in entry_points(group="inspect_ai", name=ENTRY_POINT):
        point.load()
    return dict(sorted(_POLICIES.items()))


def get_policy(name: str) -> PolicySpec:
    """The policy called `name`, or one clear error listing the accepted names."""
    policies = load_policies()
    if name not in policies:
        raise ValueError(f"unknown scripted policy {name!r}; accepted: {', '.join(policies)}")
    return policies[name]
