"""`-T config=` of `docket/anchor_direct` and `docket/anchor_audit`: the target's tool timeout
and step budget, the auditor's compaction and how the auditor and judges answer (the common
options stay task parameters)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from docket.core.task_config import TaskConfig


class AnchorDirectConfig(TaskConfig):
    """The less common knobs of `docket/anchor_direct` (`-T config=FILE.yaml`)."""

    tool_timeout: int = Field(30, ge=1, description="Seconds each tool call may run.")
    max_steps: int = Field(
        8, ge=1, description="Generations per user turn before the target is stopped."
    )
    judge_protocol: Literal["json", "tools", "auto", "schema"] = Field(
        "auto",
        description="How judges answer: auto (the submit_verdict tool, JSON text as "
        "fallback), tools, json or schema (Inspect's response_schema).",
    )


class AnchorAuditConfig(AnchorDirectConfig):
    """The less common knobs of `docket/anchor_audit` (`-T config=FILE.yaml`): those of
    `docket/anchor_direct`, the auditor's compaction and its protocol."""

    compact_after: int = Field(
        8, ge=1, description="Turns after which the auditor's older turns are compacted."
    )
    auditor_protocol: Literal["json", "tools", "auto"] = Field(
        "auto",
        description="How the auditor answers: auto (its Petri-style tools, the JSON decision "
        "in text as fallback), tools or json.",
    )
