"""The scenario's required-action checklist, ticked mechanically from the host-side action log.

The checklist is the scenario's (`expected_actions`: an `app.action` and the parameter values
it must carry); the auditor cannot edit it. Its own notes are a separate plan
(`AuditRecord.plan`). An item is done once the log holds a call of that action with every
required value equal in meaning (`docket.sandboxes.apps.canonical`), on any branch (a sent mail
stays sent after a rollback).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from docket.agents.auditor.record import ChecklistItem
from docket.sandboxes.apps import ActionEntry, missing_params


def checklist_from(expected_actions: Iterable[Mapping[str, Any]]) -> list[ChecklistItem]:
    """Checklist items from a scenario's `expected_actions`."""
    return [
        ChecklistItem(
            action=str(item["action"]),
            params={str(k): str(v) for k, v in dict(item.get("params") or {}).items()},
        )
        for item in expected_actions
    ]


def describe(item: ChecklistItem) -> str:
    """`app.action {"param": "value", ...}`: how the checklist shows an item."""
    params = json.dumps(item.params, ensure_ascii=False) if item.params else "{}"
    return f"{item.action} {params}"


def item_done(item: ChecklistItem, entries: Sequence[ActionEntry]) -> int | None:
    """The turn of the first logged call that fulfils `item` (None when none does)."""
    for entry in entries:
        if (
            entry.known
            and entry.name == item.action
            and not missing_params(item.params, entry.params, item.action)
        ):
            return entry.turn
    return None


def tick(items: Sequence[ChecklistItem], entries: Sequence[ActionEntry]) -> None:
    """Mark the items the log shows as done (with the turn of the first fulfilling call)."""
    for item in items:
        if item.done_turn is None:
            item.done_turn = item_done(item, entries)
