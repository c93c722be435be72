"""Solvers that drive the CLI target: `persistent_audit` (the auditor) and `direct_request`.

Both leave an `AuditRecord` in the sample store (`RECORD_KEY`) for the scorer, so the audited
and the direct condition are scored identically. The target's app calls and commands go to the
host-side action log (`docket.sandboxes.apps.log`); the solvers tell it the turn and branch.

The auditor model comes from a factory the task passes in (the `auditor` role, resolved with
`docket.core.roles` so an unbound role is one clear error). Each turn it returns a
JSON decision (see `decision.py`). A reply that does not parse is retried once with a repair
prompt; a second failure ends the audit with `auditor_failure` set (scored, counted).

Everything the auditor does is in the transcript: its decision (`info` event, source
`auditor`), each turn in its own span (`turn N · branch B`), and the branch tree (markdown
`info` event) whenever a branch starts and when the audit ends, for `inspect view`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    Model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef
from inspect_ai.util import LimitExceededError, span, store

from docket.agents.auditor.checklist import checklist_from, tick
from docket.agents.auditor.decision import Decision, decision_parser, observation
from docket.agents.auditor.protocol import Protocol, check_protocol, generate_action
from docket.agents.auditor.record import (
    RECORD_KEY,
    AuditorAction,
    AuditRecord,
    Branch,
    MessageRecord,
    ToolCallRecord,
    TurnRecord,
)
from docket.agents.auditor.strategies import STRATEGIES
from docket.agents.auditor.tools import (
    AUDITOR_TOOLS,
    calls_parser,
    example_line,
    tools_instruction,
)
from docket.agents.cli_target import (
    CliTarget,
    TargetState,
    TargetTurn,
    snapshot_files,
    snapshot_workspace,
)
from docket.agents.cli_target.agent import PREFILL_FLAG, is_target_reply
from docket.agents.cli_target.rollback import RollbackPointError, restore_point, save_point
from docket.sandboxes.apps import read_log, set_position

ModelFactory = Callable[[], Model]


def turn_record(
    number: int, strategy: str, branch: int, parent: int, turn: TargetTurn
) -> TurnRecord:
    """The record of one played turn: messages with their ids, tool calls with their results."""
    user = turn.messages[0]
    prefill = next((m for m in turn.messages if (m.metadata or {}).get(PREFILL_FLAG)), None)
    replies = [m for m in turn.messages if is_target_reply(m)]
    last = replies[-1] if replies else user
    results = {m.tool_call_id: m for m in turn.messages if isinstance(m, ChatMessageTool)}
    calls: list[ToolCallRecord] = []
    for message in replies:
        assert isinstance(message, ChatMessageAssistant)
        for call in message.tool_calls or []:
            result = results.get(call.id)
            calls.append(
                ToolCallRecord(
                    message_id=str(message.id),
                    function=call.function,
                    arguments=dict(call.arguments),
                    result_id=str(result.id) if result else None,
                    result=result.text if result else "",
                    error=result.error.message if result and result.error else None,
                )
            )
    messages = [_message_record(m) for m in turn.messages]
    return TurnRecord(
        turn=number,
        strategy=strategy,
        branch=branch,
        parent=parent,
        user_message_id=str(user.id),
        user_text=user.text,
        prefill_message_id=str(prefill.id) if prefill else None,
        prefill_text=prefill.text if prefill else None,
        reply_message_id=str(last.id),
        reply_text=turn.reply,
        tool_calls=calls,
        messages=messages,
    )


def _message_record(message: ChatMessage) -> MessageRecord:
    if isinstance(message, ChatMessageTool):
        error = message.error.message if message.error else None
        return MessageRecord(
            id=str(message.id), role="tool", text=message.text, function=message.function,
            error=error,
        )  # fmt: skip
    if isinstance(message, ChatMessageAssistant):
        role = "assistant" if is_target_reply(message) else "prefill"
        return MessageRecord(id=str(message.id), role=role, text=message.text)
    return MessageRecord(id=str(message.id), role=message.role, text=message.text)


def _auditor_system(template: str, metadata: Mapping[str, Any]) -> str:
    strategies = "\n".join(f"- {s.name}: {s.description}" for s in STRATEGIES)
    return template.format(**{**metadata, "strategies": strategies})


def _decision_info(number: int, decision: Decision) -> dict[str, Any]:
    tool = decision.create_tool
    return {
        "turn": number,
        "strategy": decision.strategy,
        "message": decision.message,
        "plan": decision.plan,
        "rollback_to": decision.rollback_to,
        "restart": decision.restart,
        "system_prompt": decision.system_prompt,
        "create_tool": tool.name if tool else None,
        "prefill": decision.prefill,
        "end": decision.end,
        "reason": decision.reason,
    }


def _target_note(target: CliTarget, state: TargetState) -> str:
    prompt = "default" if state.system_prompt == target.system_prompt else "set by you"
    tools = ", ".join(s.name for s in state.synthetic) or "none"
    return f"system prompt {prompt}; synthetic tools: {tools}"


def _instruction(protocol: Protocol, record: AuditRecord) -> str | None:
    """The observation's last lines: None keeps the JSON format line. Under `auto` the JSON
    fallback's format comes first, so the worked example call is the last thing read."""
    if protocol == "json":
        return None
    tools = tools_instruction(record.checklist)
    if protocol == "auto":
        return "If you cannot call tools, reply with JSON only: {format}\n" + tools
    return tools


def _hint(protocol: Protocol, record: AuditRecord) -> str:
    """What a repair prompt adds under the tool protocols: the worked example again."""
    return "" if protocol == "json" else example_line(record.checklist)


class _Audit:
    """One audit in progress: the target's state, saved states for rollback, the record."""

    def __init__(self, target: CliTarget, record: AuditRecord) -> None:
        self.target = target
        self.record = record
        self.state = target.start()
        #: Per turn: the conversation and the rollback point of the files (None: none saved).
        self.saved: dict[int, tuple[TargetState, str | None]] = {}

    def act(self, number: int, action: str, **detail: Any) -> None:
        self.record.actions.append(AuditorAction(turn=number, action=action, detail=detail))

    def no_rollback(self, number: int, action: str, reason: str, **detail: Any) -> None:
        """Record (actions, `rollback_failures`, transcript) why a rollback is not possible."""
        self.act(number, action, reason=reason, **detail)
        self.record.rollback_failures.append(f"turn {number}: {reason}")
        transcript().info(
            {"turn": number, "action": action, "reason": reason, **detail}, source="auditor"
        )

    async def save(self, number: int) -> None:
        """Save the rollback point after turn `number` (turn 0: the start), or why it cannot be."""
        try:
            point: str | None = await save_point()
        except RollbackPointError as ex:
            point = None
            self.no_rollback(number, "no_rollback_point", f"{ex}; no rollback to turn {number}")
        self.saved[number] = (self.state.copy(), point)

    async def rollback(self, number: int, back: int, previous: int) -> bool:
        """Put back the files saved after turn `back`; False (recorded) when that cannot be."""
        state, point = self.saved[back]
        if back != previous:
            if point is None:
                reason = f"rollback to turn {back} refused: no rollback point was saved then"
                self.no_rollback(number, "rollback_refused", reason, to=back)
                return False
            try:
                await restore_point(point)
            except RollbackPointError as ex:
                reason = f"rollback to turn {back} failed: {ex}; files may be partly removed"
                self.no_rollback(number, "rollback_refused", reason, to=back)
                return False
        self.state = state.copy()
        return True

    async def apply(self, number: int, decision: Decision) -> tuple[int, str | None]:
        """Apply the decision's actions before its message; returns (parent turn, fork reason)."""
        previous = self.record.turns[-1].turn if self.record.turns else 0
        parent, reason = previous, None
        if decision.plan is not None:
            self.record.plan = list(decision.plan)
            self.act(number, "plan", items=len(decision.plan))
        if decision.rollback_to is not None and await self.rollback(
            number, decision.rollback_to, previous
        ):
            back = decision.rollback_to
            parent, reason = back, f"rollback to turn {back}"
            self.act(number, "rollback", to=back)
        if decision.restart:
            self.state = self.target.start()
            parent, reason = 0, "restart"
            self.act(number, "restart")
        if decision.system_prompt:
            self.state = TargetState(
                [ChatMessageSystem(content=decision.system_prompt)], list(self.state.synthetic)
            )
            parent, reason = 0, reason or "new system prompt"
            self.act(number, "set_system_prompt", text=decision.system_prompt)
        if decision.create_tool:
            self.state.synthetic.append(decision.create_tool)
            self.act(number, "create_tool", **decision.create_tool.__dict__)
        if decision.prefill:
            self.act(number, "prefill", text=decision.prefill)
        return parent, reason

    def branch_for(self, number: int, parent: int, reason: str | None) -> int:
        """The branch of turn `number`; a new one when it does not continue the last turn."""
        previous = self.record.turns[-1] if self.record.turns else None
        if previous is not None and parent == previous.turn:
            return previous.branch
        if previous is None and parent == 0:
            self.record.branches.append(Branch(id=0, parent_turn=0, reason="start", first_turn=1))
            return 0
        branch = len(self.record.branches)
        self.record.branches.append(
            Branch(id=branch, parent_turn=parent, reason=reason or "fork", first_turn=number)
        )
        return branch

    async def play(
        self,
        number: int,
        strategy: str,
        message: str,
        parent: int,
        branch: int,
        prefill: str | None,
    ) -> None:
        set_position(number, branch)
        before = len(self.state.messages)
        try:
            async with span(f"turn {number} · branch {branch}", type="anchor_turn"):
                turn = await self.target.respond(self.state, message, prefill)
        except BaseException:
            # a limit (or cancellation) mid-turn: the turn played so far is the record's, so
            # the judge still rates what the target did before it was stopped
            if len(self.state.messages) > before:
                partial = TargetTurn(messages=self.state.messages[before:])
                self.record.turns.append(turn_record(number, strategy, branch, parent, partial))
                tick(self.record.checklist, read_log())
            raise
        self.record.turns.append(turn_record(number, strategy, branch, parent, turn))
        tick(self.record.checklist, read_log())
        await self.save(number)
        if number > 1 and self.record.branches[-1].first_turn == number:
            transcript().info(self.record.branch_tree(), source="auditor")  # a new branch


@solver
def persistent_audit(
    system_prompt: str,
    target: CliTarget,
    auditor: ModelFactory,
    max_turns: int = 20,
    compact_after: int = 8,
    keep_recent: int = 3,
    protocol: Protocol = "json",
) -> Solver:
    """A persistent auditor pursuing `metadata["user_goal"]` against the CLI target.

    Args:
        system_prompt: Auditor system prompt; formatted with `{strategies}` and the metadata.
        target: The CLI target (model under test with its tools).
        auditor: Returns the auditor model (called once per sample, inside the solver).
        max_turns: Messages the auditor may send (turns on abandoned branches count).
        compact_after: Recorded turns after which older turns are compacted in its memory.
        keep_recent: Turns kept in full once compaction starts.
        protocol: How the auditor answers: `json` (one JSON decision in text), `tools` (the
            Petri-style tools of `tools.py`) or `auto` (tools, the JSON text as fallback).

    Returns:
        A solver that plays the audit and stores its record (`RECORD_KEY`) for the scorer, also
        when a limit interrupts it.
    """

    mode = check_protocol("persistent_audit: protocol", protocol)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = auditor()
        goal = str(state.metadata["user_goal"])
        system = ChatMessageSystem(content=_auditor_system(system_prompt, state.metadata))
        record = AuditRecord(
            max_turns=max_turns,
            checklist=checklist_from(state.metadata["expected_actions"]),
            artifacts=list(state.metadata.get("expected_artifacts", [])),
            protocol=mode,
        )
        initial = await snapshot_workspace()
        record.initial_files = {p: f.digest for p, f in snapshot_files(initial).items()}
        audit = _Audit(target, record)
        await audit.save(0)
        reserved = {ToolDef(t).name for t in target.tools}
        try:
            for number in range(1, max_turns + 1):
                taken = reserved | {s.name for s in audit.state.synthetic}
                view, compacted = observation(
                    record, number, goal, compact_after, keep_recent,
                    _target_note(target, audit.state), _instruction(mode, record),
                )  # fmt: skip
                record.compactions += int(compacted)
                parsed = await generate_action(
                    model, [system, ChatMessageUser(content=view)], mode, AUDITOR_TOOLS,
                    calls_parser(number, taken), decision_parser(number, taken),
                    hint=_hint(mode, record),
                )  # fmt: skip
                record.decision_paths.append(parsed.path)
                record.parse_failures += [f"turn {number}: {f}" for f in parsed.failures]
                decision = parsed.value
                if decision is None:
                    record.auditor_failure = f"turn {number}: {parsed.error}"
                    record.ended_by = "auditor_failure"
                    break
                transcript().info(_decision_info(number, decision), source="auditor")
                if decision.end:
                    audit.act(number, "end", reason=decision.reason)
                    record.ended_by = "auditor"
                    break
                parent, reason = await audit.apply(number, decision)
                branch = audit.branch_for(number, parent, reason)
                await audit.play(
                    number, decision.strategy, decision.message, parent, branch, decision.prefill
                )
        except LimitExceededError as ex:
            record.ended_by = f"{ex.type} limit"
            raise
        finally:
            # also when a message/time limit interrupts the audit: the scorer needs the record,
            # stored first, since setting the messages raises again past a message limit
            store().set(RECORD_KEY, record.model_dump())
            transcript().info(record.branch_tree(), source="auditor")
            if record.rollback_failures:
                state.metadata["rollback_failures"] = list(record.rollback_failures)
            state.messages = audit.state.messages
        return state

    return solve


@solver
def direct_request(target: CliTarget) -> Solver:
    """One turn, no auditor: the target receives the sample input once (`strategy="direct"`).

    Args:
        target: The CLI target (model under test with its tools).

    Returns:
        A solver that plays the one turn, ticks the checklist from the action log and stores the
        audit record (`RECORD_KEY`) for the scorer. A limit that interrupts the turn (the target
        still calling tools at the message limit) leaves the turn played so far in the record,
        ended by that limit, so the judge still rates what the target did.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        record = AuditRecord(
            max_turns=1, checklist=checklist_from(state.metadata["expected_actions"])
        )
        initial = await snapshot_workspace()
        record.initial_files = {p: f.digest for p, f in snapshot_files(initial).items()}
        conversation = target.start()
        turn: TargetTurn | None = None
        try:
            set_position(1, 0)
            record.branches.append(Branch(id=0, parent_turn=0, reason="start", first_turn=1))
            turn = await target.respond(conversation, state.input_text)
            record.ended_by = "direct"
        except LimitExceededError as ex:
            record.ended_by = f"{ex.type} limit"
            raise
        finally:
            if turn is None and len(conversation.messages) > 1:  # interrupted mid-turn
                turn = TargetTurn(messages=conversation.messages[1:])
            if turn is not None:
                record.turns.append(turn_record(1, "direct", 0, 0, turn))
                tick(record.checklist, read_log())
            store().set(RECORD_KEY, record.model_dump())  # first: the messages may raise again
            state.messages = conversation.messages
        return state

    return solve
