"""The audit record: every turn the auditor played, kept in the sample store for the scorer."""

from __future__ import annotations

from pydantic import BaseModel, Field

#: Store key under which solvers leave the `AuditRecord`.
RECORD_KEY = "anchor_audit"


class ToolCallRecord(BaseModel):
    """One tool call of the target: the assistant message id, tool name and argument text."""

    message_id: str
    function: str
    arguments: str


class TurnRecord(BaseModel):
    """One user turn: who said what (with message ids), the strategy and any rollback."""

    turn: int
    strategy: str
    branch_from: int | None = None
    user_message_id: str
    user_text: str
    reply_message_id: str
    reply_text: str
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)


class AuditRecord(BaseModel):
    """A whole audit (or a one-turn direct request)."""

    max_turns: int
    turns: list[TurnRecord] = Field(default_factory=list)
    todo: list[str] = Field(default_factory=list)
    done: dict[str, int] = Field(default_factory=dict)
    rollbacks: list[tuple[int, int]] = Field(default_factory=list)
    compactions: int = 0
    ended_by: str = "budget"
    auditor_failure: str | None = None
    initial_files: dict[str, str] = Field(default_factory=dict)
