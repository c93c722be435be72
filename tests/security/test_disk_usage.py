"""The disk-limit watchdog's measure and pass-through behaviour (no sandbox needed)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from docket.sandboxes.bwrap.disk import MIB, DiskLimitExceeded, disk_usage, run_within_disk_limit


def test_disk_usage_counts_inodes_once_and_ignores_symlinks(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data").write_bytes(os.urandom(MIB))
    alone = disk_usage(tmp_path)
    assert MIB <= alone < MIB + 64 * 1024
    os.link(tmp_path / "sub" / "data", tmp_path / "hard")  # same inode: counted once
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(2 * MIB))
    (tmp_path / "link").symlink_to(outside)  # not followed
    (tmp_path / "sparse").open("wb").truncate(64 * MIB)  # allocates nothing
    assert disk_usage(tmp_path) - alone < 64 * 1024
    assert disk_usage(tmp_path / "missing") == 0


async def test_watchdog_passes_results_and_errors_through(tmp_path: Path) -> None:
    async def answer() -> int:
        await anyio.sleep(0.3)  # long enough for one check
        return 42

    async def fail() -> int:
        raise TimeoutError("slow")

    assert await run_within_disk_limit(answer, tmp_path, 1) == 42
    assert await run_within_disk_limit(answer, tmp_path, None) == 42
    with pytest.raises(TimeoutError, match="slow"):
        await run_within_disk_limit(fail, tmp_path, 1)


async def test_watchdog_cancels_a_command_over_the_limit(tmp_path: Path) -> None:
    cancelled = anyio.Event()

    async def fill() -> int:
        (tmp_path / "f").write_bytes(os.urandom(2 * MIB))
        try:
            await anyio.sleep(30)
        finally:
            cancelled.set()
        return 0

    with anyio.fail_after(10):
        with pytest.raises(DiskLimitExceeded, match="max_disk_mb=1"):
            await run_within_disk_limit(fill, tmp_path, 1)
    assert cancelled.is_set()
