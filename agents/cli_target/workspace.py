"""The sample's sandbox workspace: snapshots for rollback, and its files read on the host.

A snapshot is a gzipped POSIX tar of the workspace, as base64 text. Restoring one deletes
everything and unpacks it, so files come back byte for byte, with their modes and modification
times. `read_workspace` takes a snapshot and opens it on the host, so the scorer sees every
file's digest and (for text files) content in one sandbox call, through Inspect's public
`exec` API only (the same on bwrap, docker and k8s).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import tarfile
from dataclasses import dataclass

from inspect_ai.util import OutputLimitExceededError, sandbox

from docket.sandboxes import RoomUnavailable, ScoringSandbox, scoring_sandbox

_SNAPSHOT = "tar --format=posix -czf - . | base64 -w0"
_RESTORE = "find . -mindepth 1 -maxdepth 1 -exec rm -rf {} + && base64 -d | tar -xzf -"
#: The agent's working directory in docket's sandboxes (bwrap, docker and k8s alike).
WORKSPACE = "/workspace"
#: Largest file whose text the scorer reads (bytes); larger files are listed with a digest only.
TEXT_LIMIT = 1 << 20


class WorkspaceError(RuntimeError):
    """A snapshot, restore or listing failed inside the sandbox."""


@dataclass(frozen=True)
class WorkspaceFile:
    """One regular file of the workspace: its SHA-256 and, when it is small UTF-8 text, the text."""

    digest: str
    text: str | None


async def _run(script: str, input: str | None = None) -> str:
    result = await sandbox().exec(["bash", "-c", script], input=input, timeout=120)
    if not result.success:
        raise WorkspaceError(f"workspace command failed ({result.returncode}): {result.stderr}")
    return result.stdout


async def snapshot_workspace() -> str:
    """A snapshot of the whole workspace."""
    return (await _run(_SNAPSHOT)).strip()


async def restore_workspace(snapshot: str) -> None:
    """Replace the workspace with the files of `snapshot`."""
    await _run(_RESTORE, input=snapshot)


def snapshot_files(snapshot: str) -> dict[str, WorkspaceFile]:
    """The regular files of a snapshot, by path relative to the workspace."""
    try:
        data = base64.b64decode(snapshot, validate=True)
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")
    except (binascii.Error, tarfile.TarError, EOFError, OSError) as ex:
        raise WorkspaceError(f"unreadable workspace snapshot ({type(ex).__name__})") from None
    files: dict[str, WorkspaceFile] = {}
    with archive:
        for member in archive:
            if not member.isfile():
                continue
            handle = archive.extractfile(member)
            content = handle.read() if handle else b""
            text: str | None = None
            if len(content) <= TEXT_LIMIT:
                try:
                    text = content.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
            path = member.name.removeprefix("./")
            files[path] = WorkspaceFile(hashlib.sha256(content).hexdigest(), text)
    return files


async def read_workspace(room: ScoringSandbox | None = None) -> dict[str, WorkspaceFile]:
    """Every regular file of the workspace now, read on the host, from a clean room.

    For scorers: every process the agent started ends first, and the snapshot runs with a
    clean environment (`docket.sandboxes.scoring_sandbox`).

    Args:
        room: The clean room to read from (default: a new one in the sample's sandbox).

    Returns:
        The files by path relative to the workspace.

    Raises:
        WorkspaceError: The snapshot failed or passed the sandbox's output limit (one line).
    """
    try:
        room = room if room is not None else await scoring_sandbox()
    except RoomUnavailable as ex:  # the agent filled its disk: an unreadable workspace
        raise WorkspaceError(f"no room left to read the workspace: {ex}") from None
    try:
        result = await room.bash(_SNAPSHOT, cwd=WORKSPACE, timeout=120)
    except OutputLimitExceededError as ex:  # the agent's files decide this: not a crash
        raise WorkspaceError(f"workspace snapshot past the sandbox's output limit: {ex}") from None
    if not result.success:
        raise WorkspaceError(f"workspace command failed ({result.returncode}): {result.stderr}")
    return snapshot_files(result.stdout.strip())
