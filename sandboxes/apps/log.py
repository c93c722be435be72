"""The host-side action log: every app call and tool command of the target, hash-chained.

The log lives in the sample's store on the host (key `ACTION_LOG_KEY`), written only by the tool
handlers that run outside the sandbox, so nothing the target runs inside its workspace can edit
or delete it. Each entry carries the SHA-256 of the previous entry and of its own content
(`digest`); `verify_chain` recomputes the chain at scoring time, and again on any saved log
(the store is part of the Inspect log), so an entry edited, dropped or reordered afterwards
breaks the chain at that entry.

The solver tells the handlers where the audit stands (turn and branch) through `set_position`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.util import store
from pydantic import BaseModel, Field

#: Store keys of the log and of the current (turn, branch).
ACTION_LOG_KEY = "anchor_actions"
POSITION_KEY = "anchor_position"
GENESIS = "0" * 64


class ActionEntry(BaseModel):
    """One recorded action: an app call, a shell/python command, a file write, a synthetic tool."""

    seq: int
    turn: int
    branch: int
    tool: str
    action: str
    params: dict[str, str] = Field(default_factory=dict)
    kind: str
    known: bool = True
    prev: str = GENESIS
    digest: str = ""

    @property
    def name(self) -> str:
        """`app.action` (apps), `shell.bash` / `shell.write_file` (commands), `synthetic.NAME`."""
        return f"{self.tool}.{self.action}"


def _digest(entry: Mapping[str, Any]) -> str:
    body = {k: v for k, v in entry.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def chain_entry(previous: Sequence[ActionEntry], **fields: Any) -> ActionEntry:
    """A new entry linked to the last of `previous` (sequence number and hash)."""
    prev = previous[-1].digest if previous else GENESIS
    entry = ActionEntry(seq=len(previous) + 1, prev=prev, **fields)
    entry.digest = _digest(entry.model_dump())
    return entry


def verify_chain(entries: Sequence[Mapping[str, Any]]) -> str | None:
    """None when the chain is intact, else one line naming the first entry that breaks it."""
    prev = GENESIS
    for index, raw in enumerate(entries, start=1):
        if not isinstance(raw, Mapping):
            return f"entry {index}: not an object"
        if raw.get("seq") != index:
            return f"entry {index}: sequence number {raw.get('seq')!r}, expected {index}"
        if raw.get("prev") != prev:
            return f"entry {index}: does not link to the entry before it"
        if raw.get("digest") != _digest(raw):
            return f"entry {index}: content does not match its digest"
        prev = str(raw["digest"])
    return None


def set_position(turn: int, branch: int) -> None:
    """Record the current turn and branch; later actions are logged under them."""
    store().set(POSITION_KEY, {"turn": int(turn), "branch": int(branch)})


def read_log() -> list[ActionEntry]:
    """The sample's action log (empty when nothing was recorded)."""
    stored: list[dict[str, Any]] = store().get(ACTION_LOG_KEY, [])
    return [ActionEntry.model_validate(e) for e in stored]


def record_action(
    tool: str, action: str, params: Mapping[str, object], kind: str, known: bool = True
) -> ActionEntry:
    """Append one action at the current position to the sample's log and return it."""
    position = store().get(POSITION_KEY, {"turn": 0, "branch": 0})
    entries = read_log()
    entry = chain_entry(
        entries,
        turn=position["turn"],
        branch=position["branch"],
        tool=tool,
        action=action,
        params={str(k): str(v) for k, v in params.items()},
        kind=kind,
        known=known,
    )
    store().set(ACTION_LOG_KEY, [*(e.model_dump() for e in entries), entry.model_dump()])
    return entry
