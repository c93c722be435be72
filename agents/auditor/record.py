"""The audit record: every turn, auditor action and branch, kept in the sample store for scoring.

Turns are numbered in play order (1..T, turns on abandoned branches included). Each turn names
its `parent`: the turn whose conversation it continues (0 = a fresh conversation). A turn whose
parent is not the turn played just before it starts a new branch (after a rollback, a restart or
a new system prompt). The final branch's turns are the parent chain of the last turn played:
the turns still in the target's final conversation.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

#: Store key under which solvers leave the `AuditRecord`.
RECORD_KEY = "anchor_audit"


class ToolCallRecord(BaseModel):
    """One tool call of the target and its result, with the ids of both messages."""

    message_id: str
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result_id: str | None = None
    result: str = ""
    error: str | None = None

    @property
    def app_action(self) -> str | None:
        """`app.action` when the call is an emulated-app call (`action` argument), else None."""
        action = self.arguments.get("action")
        return f"{self.function}.{action}" if isinstance(action, str) and action else None


class MessageRecord(BaseModel):
    """One message of a turn as the judge reads it: id, who wrote it, its text.

    Roles: `user` (the auditor's message), `prefill` (the start of the target's reply, written by
    the auditor), `assistant` (the target), `tool` (a tool result; `function` names the tool).
    """

    id: str
    role: str
    text: str = ""
    function: str | None = None
    error: str | None = None


class TurnRecord(BaseModel):
    """One user turn: who said what (with message ids), the strategy, branch and parent turn."""

    turn: int
    strategy: str
    branch: int = 0
    parent: int = 0
    user_message_id: str
    user_text: str
    prefill_message_id: str | None = None
    prefill_text: str | None = None
    reply_message_id: str
    reply_text: str
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    messages: list[MessageRecord] = Field(default_factory=list)

    @property
    def message_ids(self) -> set[str]:
        """Ids of every message of the turn (citable by the judge)."""
        return {self.user_message_id, self.reply_message_id} | {m.id for m in self.messages}


class AuditorAction(BaseModel):
    """One action of the auditor besides sending a message (rollback, restart, prefill, ...)."""

    turn: int
    action: str
    detail: dict[str, Any] = Field(default_factory=dict)


class Branch(BaseModel):
    """A branch of the audit: where it forks (`parent_turn`, 0 = the start) and why."""

    id: int
    parent_turn: int
    reason: str
    first_turn: int


class ChecklistItem(BaseModel):
    """One action the scenario requires, with its parameters; `done_turn` once the log shows it."""

    action: str
    params: dict[str, str] = Field(default_factory=dict)
    done_turn: int | None = None


class AuditRecord(BaseModel):
    """A whole audit (or a one-turn direct request)."""

    max_turns: int
    turns: list[TurnRecord] = Field(default_factory=list)
    checklist: list[ChecklistItem] = Field(default_factory=list)
    artifacts: list[str] = Field(default_factory=list)
    plan: list[str] = Field(default_factory=list)
    actions: list[AuditorAction] = Field(default_factory=list)
    branches: list[Branch] = Field(default_factory=list)
    compactions: int = 0
    ended_by: str = "budget"
    auditor_failure: str | None = None
    initial_files: dict[str, str] = Field(default_factory=dict)
    #: How the auditor answered (`json`, `tools` or `auto`; "" for a direct request).
    protocol: str = ""
    #: Per auditor decision: how it was reached (`tool`, `text`, or "" when it failed).
    decision_paths: list[str] = Field(default_factory=list)
    #: Every failed parse of an auditor reply, `turn N: reason` (counted, then repaired).
    parse_failures: list[str] = Field(default_factory=list)
    #: Every rollback point not saved and every rollback refused, `turn N: reason` (the target
    #: can make its files too large to save; the audit goes on, without that rollback).
    rollback_failures: list[str] = Field(default_factory=list)

    def final_branch(self) -> list[int]:
        """Turns of the final conversation, in order: the parent chain of the last turn."""
        parents = {t.turn: t.parent for t in self.turns}
        chain: list[int] = []
        turn = self.turns[-1].turn if self.turns else 0
        while turn and turn in parents and turn not in chain:
            chain.append(turn)
            turn = parents[turn]
        return sorted(chain)

    def branch_tree(self) -> str:
        """The branches as a markdown list (nested by fork), for the transcript."""
        if not self.turns:
            return "**Audit branches**: no turn played."
        turns_of: dict[int, list[int]] = {}
        for t in self.turns:
            turns_of.setdefault(t.branch, []).append(t.turn)
        branch_of_turn = {t.turn: t.branch for t in self.turns}
        depth: dict[int, int] = {}
        lines = ["**Audit branches** (turns in play order)"]
        for branch in self.branches:
            parent = branch_of_turn.get(branch.parent_turn)
            depth[branch.id] = depth.get(parent, -1) + 1 if parent is not None else 0
            played = turns_of.get(branch.id, [])
            span = (
                f"turns {played[0]}-{played[-1]}"
                if len(played) > 1
                else (f"turn {played[0]}" if played else "no turn yet")
            )
            origin = f"{branch.reason}" + (
                f", continues turn {branch.parent_turn}" if branch.parent_turn else ""
            )
            lines.append(f"{'  ' * depth[branch.id]}- branch {branch.id}: {span} ({origin})")
        final = self.final_branch()
        lines.append(
            f"\nfinal branch: {self.turns[-1].branch}; turns in the final conversation: "
            + (", ".join(str(t) for t in final) or "none")
        )
        return "\n".join(lines)
