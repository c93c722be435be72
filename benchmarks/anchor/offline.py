"""One direct ANCHOR turn played and scored without a sandbox: the scripted judge's numbers on
every scenario in seconds.

`play_direct` sends a scenario's goal to a scripted target policy, answers its app calls with
the catalogue's replies and its file writes with `wrote PATH`, logs every call as the host does
(`chain_entry`), and scores the turn as `anchor_scorer` does: the scripted judge reads the judge
prompt built from the record and the log, the checklist is ticked from the log, the excess is
measured from the log and the files written. Only the sandbox is left out (commands are not
run), so it is exact for targets that act through the app tools and `write_file`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
)
from inspect_ai.tool import ToolCall, ToolInfo, ToolParams

from docket.agents.auditor import AuditRecord, MessageRecord, ToolCallRecord, TurnRecord
from docket.agents.auditor.checklist import checklist_from, tick
from docket.agents.cli_target import WorkspaceFile
from docket.agents.scripted.policy import PolicyInput, PolicyReply, ToolRequest
from docket.benchmarks.anchor.exceeds import measure_excess
from docket.benchmarks.anchor.judge import verdict_parser
from docket.benchmarks.anchor.reference import judge
from docket.benchmarks.anchor.scorer import judge_messages, judged_values, mechanical_values
from docket.sandboxes.apps import ACTIONS, APP_CATALOGUE, ActionEntry, chain_entry

Policy = Callable[[PolicyInput], PolicyReply]
TOOLS = [
    ToolInfo(name=name, description=name, parameters=ToolParams())
    for name in ("bash", "python", "write_file", *APP_CATALOGUE)
]
_SHELL = {"bash": ("bash", "command", "cmd"), "python": ("python", "code", "code")}


def _log(entries: list[ActionEntry], call: ToolRequest, turn: int) -> str:
    """Append the host's log entry of `call`; return the tool's reply."""
    arguments = {k: str(v) for k, v in call.arguments.items()}
    if call.function in _SHELL:
        action, key, given = _SHELL[call.function]
        entries.append(
            chain_entry(entries, turn=turn, branch=0, tool="shell", action=action,
                        params={key: arguments.get(given, "")}, kind="shell")
        )  # fmt: skip
        return ""
    if call.function == "write_file":
        entries.append(
            chain_entry(entries, turn=turn, branch=0, tool="shell", action="write_file",
                        params=arguments, kind="shell")
        )  # fmt: skip
        return f"wrote {arguments.get('path', '')}"
    action = arguments.pop("action", "")
    spec = ACTIONS.get(f"{call.function}.{action}")
    entries.append(
        chain_entry(entries, turn=turn, branch=0, tool=call.function, action=action,
                    params=arguments, kind=spec.kind if spec else "unknown",
                    known=spec is not None)
    )  # fmt: skip
    if spec is None:
        return f"{call.function}: unknown action {action!r}"
    values = {p: arguments.get(p, "<unspecified>") for p in spec.params}
    return f"{spec.reply.format(**values)} (emulated)"


def play_direct(
    row: Mapping[str, Any],
    target: Policy,
    args: Mapping[str, Any],
    max_steps: int = 8,
    judge_args: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """Play `row`'s goal once against `target` and score the turn with the scripted judge.

    Args:
        row: A scenario row (`user_goal`, `expected_actions`, ... as in the shipped file).
        target: A scripted policy (e.g. `reference.anchor_target`).
        args: Its `-M` arguments.
        max_steps: Generations at most, as the task's `max_steps`.
        judge_args: The scripted judge's `-M` arguments (`{"lenient": 1}`: the phrase judge).

    Returns:
        The scorer's judged and mechanical per-sample values (`direct_refusal`, `complied`,
        `task_completed`, `unrequested_actions`, ...).
    """
    goal = str(row["user_goal"])
    messages: list[ChatMessage] = [ChatMessageUser(content=goal, id="u1")]
    entries: list[ActionEntry] = []
    calls: list[ToolCallRecord] = []
    records = [MessageRecord(id="u1", role="user", text=goal)]
    files: dict[str, WorkspaceFile] = {}
    reply = PolicyReply(text="")
    for step in range(1, max_steps + 1):
        reply = target(PolicyInput(messages, TOOLS, GenerateConfig(), args))
        mid = f"a{step}"
        requested = [
            ToolCall(id=f"c{step}-{i}", function=c.function, arguments=dict(c.arguments))
            for i, c in enumerate(reply.tool_calls)
        ]
        messages.append(
            ChatMessageAssistant(content=reply.text, tool_calls=requested or None, id=mid)
        )
        records.append(MessageRecord(id=mid, role="assistant", text=reply.text))
        if not reply.tool_calls:
            break
        for request, call in zip(requested, reply.tool_calls, strict=True):
            result = _log(entries, call, 1)
            if call.function == "write_file":
                content = str(call.arguments.get("content", ""))
                digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
                files[str(call.arguments.get("path", ""))] = WorkspaceFile(digest, content)
            rid = f"r{request.id}"
            messages.append(ChatMessageTool(content=result, tool_call_id=request.id, id=rid))
            records.append(MessageRecord(id=rid, role="tool", text=result, function=call.function))
            calls.append(
                ToolCallRecord(message_id=mid, function=call.function,
                               arguments=dict(call.arguments), result_id=rid, result=result)
            )  # fmt: skip
    turn = TurnRecord(turn=1, strategy="direct", user_message_id="u1", user_text=goal,
                      reply_message_id=records[-1].id, reply_text=reply.text, tool_calls=calls,
                      messages=records)  # fmt: skip
    record = AuditRecord(
        max_turns=1, turns=[turn], checklist=checklist_from(row["expected_actions"])
    )
    tick(record.checklist, entries)
    prompt = judge_messages(record, dict(row), entries, None)
    state = PolicyInput(messages=prompt, tools=[], config=GenerateConfig(), args=judge_args or {})
    verdict = verdict_parser(record)(judge(state).text)
    excess = measure_excess(
        entries,
        row["expected_actions"],
        {},
        files,
        row.get("expected_artifacts", []),
    )
    return {**judged_values(record, verdict), **mechanical_values(record, excess, entries)}
