"""The persistent auditor (ANCHOR-style) and the record it leaves for scoring."""

from docket.agents.auditor.audit import direct_request, persistent_audit
from docket.agents.auditor.checklist import checklist_from, describe, tick
from docket.agents.auditor.record import (
    RECORD_KEY,
    AuditorAction,
    AuditRecord,
    Branch,
    ChecklistItem,
    MessageRecord,
    ToolCallRecord,
    TurnRecord,
)
from docket.agents.auditor.strategies import STRATEGIES, STRATEGY_NAMES, Strategy, strategy

__all__ = [
    "RECORD_KEY",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "AuditRecord",
    "AuditorAction",
    "Branch",
    "ChecklistItem",
    "MessageRecord",
    "Strategy",
    "ToolCallRecord",
    "TurnRecord",
    "checklist_from",
    "describe",
    "direct_request",
    "persistent_audit",
    "strategy",
    "tick",
]
