"""Solvers that drive the CLI target: `persistent_audit` (the auditor) and `direct_request`.

Both leave an `AuditRecord` in the sample store (`RECORD_KEY`) for the scorer, so the audited
and the direct condition are scored identically.

The auditor model is the `auditor` role; when the role is unbound it falls back to the model
under test (an audit of a model by itself). Each turn it returns a JSON decision (strategy,
message, to-do list, optional rollback, end). A reply that does not parse is retried once with a
repair prompt; a second failure ends the audit with `auditor_failure` set (scored, counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from docket.agents.auditor.decision import app_actions, decision_parser, observation
from docket.agents.auditor.parse import generate_parsed
from docket.agents.auditor.record import RECORD_KEY, AuditRecord, ToolCallRecord, TurnRecord
from docket.agents.auditor.strategies import STRATEGIES
from docket.agents.cli_target import (
    CliTarget,
    TargetTurn,
    list_files,
    restore_workspace,
    snapshot_workspace,
)
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import store


def _turn_record(
    number: int, strategy: str, branch_from: int | None, turn: TargetTurn
) -> TurnRecord:
    user = turn.messages[0]
    replies = [m for m in turn.messages if m.role == "assistant"]
    last = replies[-1] if replies else user
    return TurnRecord(
        turn=number,
        strategy=strategy,
        branch_from=branch_from,
        user_message_id=str(user.id),
        user_text=user.text,
        reply_message_id=str(last.id),
        reply_text=turn.reply,
        tool_calls=[
            ToolCallRecord(message_id=m, function=f, arguments=a) for m, f, a in turn.tool_calls
        ],
    )


def _mark_done(record: AuditRecord, turn: TurnRecord) -> None:
    for call in turn.tool_calls:
        for action in app_actions(call.arguments):
            if action in record.todo and action not in record.done:
                record.done[action] = turn.turn


def _auditor_system(template: str, metadata: Mapping[str, Any]) -> str:
    strategies = "\n".join(f"- {s.name}: {s.description}" for s in STRATEGIES)
    actions = ", ".join(str(a) for a in metadata.get("expected_actions", []))
    return template.format(**{**metadata, "strategies": strategies, "expected_actions": actions})


@solver
def persistent_audit(
    system_prompt: str,
    target: CliTarget,
    max_turns: int = 20,
    compact_after: int = 8,
    keep_recent: int = 3,
) -> Solver:
    """A persistent auditor pursuing `metadata["user_goal"]` against the CLI target.

    Args:
        system_prompt: Auditor system prompt; formatted with `{strategies}` and the metadata.
        target: The CLI target (model under test with its tools).
        max_turns: Messages the auditor may send (rolled-back turns count).
        compact_after: Recorded turns after which older turns are compacted in its memory.
        keep_recent: Turns kept in full once compaction starts.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        auditor = get_model(role="auditor")
        goal = str(state.metadata["user_goal"])
        system = ChatMessageSystem(content=_auditor_system(system_prompt, state.metadata))
        record = AuditRecord(max_turns=max_turns, todo=list(state.metadata["expected_actions"]))
        record.initial_files = await list_files()
        conversation = target.start()
        try:
            saved: dict[int, tuple[list[ChatMessage], str]] = {}
            for number in range(1, max_turns + 1):
                view, compacted = observation(record, number, goal, compact_after, keep_recent)
                record.compactions += int(compacted)
                decision, error = await generate_parsed(
                    auditor, [system, ChatMessageUser(content=view)], decision_parser(number)
                )
                if decision is None:
                    record.auditor_failure = f"turn {number}: {error}"
                    record.ended_by = "auditor_failure"
                    break
                choice: dict[str, Any] = {
                    "turn": number,
                    "strategy": decision.strategy,
                    "rollback_to": decision.rollback_to,
                    "end": decision.end,
                    "todo": decision.todo,
                    "reason": decision.reason,
                }
                transcript().info(choice, source="auditor")
                if decision.end:
                    record.ended_by = "auditor"
                    break
                if decision.todo is not None:
                    record.todo = list(decision.todo)
                saved[number - 1] = (list(conversation), await snapshot_workspace(number))
                if decision.rollback_to is not None:
                    back = decision.rollback_to
                    conversation = list(saved[back][0])
                    if back < number - 1:
                        await restore_workspace(saved[back][1])
                    record.done = {a: t for a, t in record.done.items() if t <= back}
                    record.rollbacks.append((number, back))
                turn = await target.respond(conversation, decision.message)
                done = _turn_record(number, decision.strategy, decision.rollback_to, turn)
                record.turns.append(done)
                _mark_done(record, done)
        finally:
            # also when a message/time limit interrupts the audit: the scorer needs the record
            state.messages = conversation
            store().set(RECORD_KEY, record.model_dump())
        return state

    return solve


@solver
def direct_request(target: CliTarget) -> Solver:
    """One turn, no auditor: the target receives the sample input once (`strategy="direct"`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        record = AuditRecord(max_turns=1, todo=list(state.metadata["expected_actions"]))
        record.initial_files = await list_files()
        conversation = target.start()
        try:
            await snapshot_workspace(1)
            turn = await target.respond(conversation, state.input_text)
            done = _turn_record(1, "direct", None, turn)
            record.turns.append(done)
            _mark_done(record, done)
            record.ended_by = "direct"
        finally:
            state.messages = conversation
            store().set(RECORD_KEY, record.model_dump())
        return state

    return solve
