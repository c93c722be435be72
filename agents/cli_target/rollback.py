"""Rollback points: everything the target can write, saved after a turn and put back on rollback.

A rollback point is one gzipped POSIX tar, as base64 text, of every folder the target can
write and later read: the workspace, its home (`$HOME`), `/tmp`, `/var/tmp` (where it is not a
link to `/tmp`) and `/dev/shm`. Restoring one empties those folders and unpacks it, so files,
folders, modes and modification times (the folders' own too) come back as they were, and a
listing after a rollback is the listing before the branch. Inspect's own tool-support and
service folders (`SANDBOX_TOOLS_DIR`, `sandbox-services` under `/var/tmp`) are left alone:
its tool server runs from them.

What a rollback point cannot hold (running processes, inode numbers, change times, the
host-side app log) is listed in benchmarks/anchor/README.md.

A point larger than `POINT_LIMIT`, or one the sandbox fails to write (a folder the target
made unreadable, a timeout), raises `RollbackPointError` with the reason: the caller records
it and offers no rollback to that turn, so the target cannot turn its audit into an error.
"""

from __future__ import annotations

import posixpath

from inspect_ai.util import OutputLimitExceededError, sandbox

from docket.core.inspect_private import SANDBOX_CLI

#: Folders restored on rollback, relative to `/` (`$HOME` is added as the sandbox reports it).
ROOTS = ("workspace", "tmp", "var/tmp", "dev/shm")
#: Inspect's folders under `/var/tmp` (`/tmp` in bwrap), kept as they are: its tool server.
KEPT = (posixpath.basename(posixpath.dirname(SANDBOX_CLI)), "sandbox-services")
#: Largest rollback point, in base64 characters (Inspect caps an exec's output at 10 MiB).
POINT_LIMIT = 8 << 20
_TIMEOUT_S = 120


class RollbackPointError(RuntimeError):
    """A rollback point could not be saved or put back; the message says why."""


def _roots_script() -> str:
    """Bash that sets `roots` (existing real folders, `$HOME` among them) and `cd`s to `/`."""
    kept = " ".join(f"{base}/{name}" for base in ("tmp", "var/tmp") for name in KEPT)
    return (
        "cd / && roots=() && for r in " + " ".join(ROOTS) + ' "${HOME#/}"; do '
        '[ -d "$r" ] && [ ! -L "$r" ] && [[ " ${roots[*]} " != *" $r "* ]] && roots+=("$r"); '
        f"done; kept=({kept})"
    )


def _save_script() -> str:
    excludes = "--anchored $(printf -- '--exclude=%s ' \"${kept[@]}\")"
    return (
        f"set -o pipefail; {_roots_script()}; "
        f'tar --format=posix {excludes} -czf - "${{roots[@]}}" | base64 -w0 '
        f"| head -c {POINT_LIMIT + 1}"
    )


def _restore_script() -> str:
    skip = "$(printf -- '! -path %s ' \"${kept[@]}\")"
    return (
        f"set -e; {_roots_script()}; "
        f'find "${{roots[@]}}" -mindepth 1 -maxdepth 1 {skip} -exec chmod -R u+rwx {{}} + '
        "2>/dev/null || true; "
        f'find "${{roots[@]}}" -mindepth 1 -maxdepth 1 {skip} -exec rm -rf {{}} +; '
        "base64 -d | tar -xzpf - -C /"
    )


async def save_point() -> str:
    """A rollback point of everything the target can write now.

    Returns:
        The point, as base64 text.

    Raises:
        RollbackPointError: Larger than `POINT_LIMIT`, or the sandbox could not write it.
    """
    try:
        result = await sandbox().exec(["bash", "-c", _save_script()], timeout=_TIMEOUT_S)
    except OutputLimitExceededError:
        raise RollbackPointError(_too_large()) from None
    except TimeoutError:
        raise RollbackPointError(f"saving the files took over {_TIMEOUT_S} s") from None
    if len(result.stdout) > POINT_LIMIT:
        raise RollbackPointError(_too_large())
    if not result.success:
        raise RollbackPointError(f"saving the files failed ({result.returncode}): " + _tail(result))
    return result.stdout


async def restore_point(point: str) -> None:
    """Put back everything the target can write as it was when `point` was saved.

    Args:
        point: A point from `save_point`.

    Raises:
        RollbackPointError: The sandbox could not put the files back.
    """
    try:
        result = await sandbox().exec(
            ["bash", "-c", _restore_script()], input=point, timeout=_TIMEOUT_S
        )
    except TimeoutError:
        raise RollbackPointError(f"restoring the files took over {_TIMEOUT_S} s") from None
    if not result.success:
        raise RollbackPointError(
            f"restoring the files failed ({result.returncode}): " + _tail(result)
        )


def _too_large() -> str:
    return (
        f"the target's files are over the rollback point limit ({POINT_LIMIT >> 20} MiB of "
        "base64 gzipped tar)"
    )


def _tail(result: object) -> str:
    stderr = str(getattr(result, "stderr", "")).strip().splitlines()
    return stderr[-1][:200] if stderr else "no error text"
