"""Resource exhaustion attempts: memory balloon, disk fill, output flood."""

from __future__ import annotations

import time

import pytest
from inspect_ai.util import OutputLimitExceededError

from docket.core.inspect_private import (
    override_max_exec_output_size,
    override_max_read_file_size,
)
from docket.sandboxes.bwrap.config import BwrapConfig
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

LIMITS = BwrapConfig(memory_mb=128, max_processes=16, max_file_size_mb=2)
MIB = 1024 * 1024


@pytest.mark.escape(
    "Memory balloon (allocate 1 GiB)", "RLIMIT_AS per process and the memory cgroup (memory_mb=128)"
)
async def test_memory_balloon_fails() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        balloon = await sb.exec(["python3", "-c", "b = bytearray(1 << 30)"], timeout=30)
        assert not balloon.success and "MemoryError" in balloon.stderr
        tail = await sb.exec(["sh", "-c", "head -c 1G /dev/zero | tail -n 1 >/dev/null"])
        assert not tail.success  # tail buffers a newline-free stream and hits the limit
        assert (await sb.exec(["python3", "-c", "b = bytearray(16 << 20)"])).success


@pytest.mark.escape("Disk fill with one large file", "RLIMIT_FSIZE (max_file_size_mb=2)")
async def test_large_file_is_cut_at_the_limit() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        fill = await sb.exec(["sh", "-c", "head -c 64M /dev/zero > big"], timeout=30)
        assert not fill.success
        assert int((await sb.exec(["stat", "-c", "%s", "big"])).stdout) <= 2 * MIB
        with pytest.raises(OSError, match="File too large"):
            await sb.write_file("big2", b"x" * (3 * MIB))


@pytest.mark.escape(
    "Disk fill with many files below the file-size limit",
    "the sample's tmpfs is max_disk_mb=8 in size: the kernel answers ENOSPC",
)
async def test_many_files_are_capped() -> None:
    config = BwrapConfig(**{**LIMITS.model_dump(), "max_disk_mb": 8})
    fill = "for i in $(seq 1 400); do head -c 1M /dev/zero > f$i || exit 1; done"
    async with bwrap_sandbox(config) as sb:
        result = await sb.exec(["sh", "-c", fill], timeout=60)  # 400 MiB unless stopped
        assert not result.success and "No space left on device" in result.stderr
        used = await sb.exec(["du", "-sk", "/workspace"])
        assert 6 * 1024 < int(used.stdout.split()[0]) <= 8 * 1024
        assert (await sb.exec(["sh", "-c", "rm f*"])).success  # deleting is always allowed
        assert (await sb.exec(["sh", "-c", "head -c 1M /dev/zero > ok"])).success


FLOOD = "exec output limit: the process tree is killed and OutputLimitExceededError raised"


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(s, marks=pytest.mark.escape(f"Output flood (endless `yes` on {s})", FLOOD))
        for s in ("stdout", "stderr")
    ],
)
async def test_output_flood_is_cut(stream: str) -> None:
    redirect = "" if stream == "stdout" else " >&2"
    async with bwrap_sandbox(LIMITS) as sb:
        start = time.monotonic()
        with override_max_exec_output_size(64 * 1024):
            with pytest.raises(OutputLimitExceededError) as info:
                await sb.exec(["sh", "-c", f"yes{redirect}"], timeout=60)
        assert time.monotonic() - start < 30
        assert info.value.truncated_output is not None
        assert len(info.value.truncated_output) == 64 * 1024


@pytest.mark.escape(
    "Read a file larger than the read limit", "read_file size check (read limit) before reading"
)
async def test_large_read_is_refused() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        assert (await sb.exec(["sh", "-c", "head -c 1M /dev/zero > big"])).success
        with override_max_read_file_size(64 * 1024):
            with pytest.raises(OutputLimitExceededError):
                await sb.read_file("big", text=False)


@pytest.mark.escape(
    "Memory balloon through RAM-backed tmpfs (/dev, /dev/shm), which RLIMIT_AS does not count",
    "/dev is read-only; /dev/shm is on the sample's tmpfs (max_disk_mb=32)",
)
async def test_tmpfs_balloon_is_capped() -> None:
    config = BwrapConfig(**{**LIMITS.model_dump(), "max_disk_mb": 32})
    async with bwrap_sandbox(config) as sb:
        assert not (await sb.exec(["sh", "-c", "head -c 1M /dev/zero > /dev/balloon"])).success
        fill = "for i in 1 2 3 4 5 6 7 8 9; do head -c 2M /dev/zero > /dev/shm/f$i || exit 1; done"
        assert (await sb.exec(["sh", "-c", fill])).success  # 18 MiB: usable, in 2 MiB files
        more = "for i in $(seq 10 60); do head -c 2M /dev/zero > /dev/shm/f$i || exit 1; done"
        result = await sb.exec(["sh", "-c", more], timeout=30)
        assert not result.success and "No space left" in result.stderr
        used = await sb.exec(["du", "-sm", "/dev/shm"])
        assert int(used.stdout.split()[0]) <= 32
        assert (await sb.exec(["sh", "-c", "echo ok > /dev/null"])).success
