"""The per-sample disk limit (`max_disk_mb`): a watchdog that kills a command filling the disk.

bwrap has no disk quota, so while a command runs the sample's host directories are measured
(first after `_FIRST_CHECK_S`, then every `_MIN_INTERVAL_S` or ten times the last walk's
duration, whichever is longer) and the command's process tree is killed once they pass the
limit. A command may overshoot by what it writes between two checks.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

MIB = 1 << 20
_FIRST_CHECK_S = 0.2
_MIN_INTERVAL_S = 0.5


class DiskLimitExceeded(OSError):
    """The sample's files passed `max_disk_mb`; the running command was killed."""

    def __init__(self, limit_mb: int, used: int) -> None:
        super().__init__(
            errno.ENOSPC,
            f"the sample's files use {used // MIB} MiB, over the bwrap sandbox's "
            f"max_disk_mb={limit_mb}; the command was killed (delete files to continue)",
        )


def disk_usage(root: Path) -> int:
    """Bytes allocated under `root`: each inode once, symlinks not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(root)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                except OSError:
                    continue
                if (info.st_dev, info.st_ino) not in seen:
                    seen.add((info.st_dev, info.st_ino))
                    total += info.st_blocks * 512
    return total


async def run_within_disk_limit(
    run: Callable[[], Awaitable[T]], root: Path, limit_mb: int | None
) -> T:
    """Await `run()`, cancelling it (which kills its process tree) once `root` passes the limit.

    Raises DiskLimitExceeded when the watchdog stopped the command.
    """
    if limit_mb is None:
        return await run()
    results: list[T] = []
    errors: list[Exception] = []
    over: list[int] = []

    async def command(scope: anyio.CancelScope) -> None:
        try:
            results.append(await run())
        except Exception as ex:  # re-raised below, outside the task group
            errors.append(ex)
        scope.cancel()

    async def watchdog(scope: anyio.CancelScope) -> None:
        delay = _FIRST_CHECK_S
        while True:
            await anyio.sleep(delay)
            started = time.monotonic()
            used = await anyio.to_thread.run_sync(disk_usage, root, abandon_on_cancel=True)
            if used > limit_mb * MIB:
                over.append(used)
                scope.cancel()
                return
            delay = max(_MIN_INTERVAL_S, 10 * (time.monotonic() - started))

    async with anyio.create_task_group() as tg:
        tg.start_soon(command, tg.cancel_scope)
        tg.start_soon(watchdog, tg.cancel_scope)
    if over and not results:
        raise DiskLimitExceeded(limit_mb, over[0])
    if errors:
        raise errors[0]
    return results[0]
