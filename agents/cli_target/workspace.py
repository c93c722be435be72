"""The sample's sandbox workspace: snapshots for rollback, the action log, the file listing.

Snapshots are gzipped tars (base64 text) of the workspace without `.anchor/` (the action log is
an irreversible record of what the emulated apps were asked to do: a sent mail stays sent).
Restoring one deletes everything else and unpacks it, so files come back byte for byte, with
their modes and modification times.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from docket.sandboxes.apps import ACTION_LOG, TURN_FILE
from inspect_ai.util import sandbox

_SNAPSHOT = (
    "mkdir -p .anchor && printf '%s' {turn} > {turn_file} "
    "&& tar --format=posix --exclude=./.anchor -czf - . | base64 -w0"
)
_RESTORE = (
    "find . -mindepth 1 -maxdepth 1 ! -name .anchor -exec rm -rf {{}} + && base64 -d | tar -xzf -"
)
_LIST = (
    "find . -path ./.anchor -prune -o -path ./.apps -prune -o -type f -print0 "
    "| xargs -0 -r sha256sum"
)


class WorkspaceError(RuntimeError):
    """A snapshot, restore or listing failed inside the sandbox."""


async def _run(script: str, input: str | None = None) -> str:
    result = await sandbox().exec(["bash", "-c", script], input=input, timeout=60)
    if not result.success:
        raise WorkspaceError(f"workspace command failed ({result.returncode}): {result.stderr}")
    return result.stdout


async def snapshot_workspace(turn: int) -> str:
    """Mark `turn` as the current turn for the apps and return a snapshot of the workspace."""
    return (await _run(_SNAPSHOT.format(turn=int(turn), turn_file=shlex.quote(TURN_FILE)))).strip()


async def restore_workspace(snapshot: str) -> None:
    """Replace the workspace (all but `.anchor/`) with the files of `snapshot`."""
    await _run(_RESTORE.format(), input=snapshot)


async def list_files() -> dict[str, str]:
    """Workspace files (outside `.anchor/` and `.apps/`) mapped to their sha256."""
    listing: dict[str, str] = {}
    for line in (await _run(_LIST)).splitlines():
        digest, _, path = line.partition("  ")
        listing[path.removeprefix("./")] = digest
    return listing


@dataclass
class ActionLog:
    """Parsed action log: the entries, and the lines that did not parse (counted, not hidden)."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)


async def read_action_log() -> ActionLog:
    """Entries of `.anchor/actions.jsonl` (empty when the file does not exist)."""
    text = await _run(f"cat {shlex.quote(ACTION_LOG)} 2>/dev/null || true")
    log = ActionLog()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, huge ints, deep nesting
            log.bad_lines.append(number)
            continue
        if isinstance(entry, dict):
            log.entries.append(entry)
        else:
            log.bad_lines.append(number)
    return log
