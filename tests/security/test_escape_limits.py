"""Attempts past the sample's memory, disk and inode limits, and at the file operations.

Each attempt runs under small limits and would cost the host at most a few hundred MiB for a
moment if a guard were missing.
"""

from __future__ import annotations

import time

import anyio
import pytest

from docket.sandboxes.bwrap import cgroup
from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

MIB = 1 << 20
#: A large file-size limit, so only the disk limit (max_disk_mb=8) can stop these attempts.
DISK = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=4096, max_disk_mb=8)
TMPFS = "the sample's tmpfs is max_disk_mb=8 in size: the kernel answers ENOSPC"

MEMFD_FILL = """
import os
fd = os.memfd_create("balloon")
written = 0
try:
    for _ in range(512):
        os.write(fd, b"x" * (1 << 20))
        written += 1
finally:
    print(written, flush=True)
"""


@pytest.mark.skipif(not cgroup.detect().available, reason=f"no cgroup: {cgroup.detect().reason}")
@pytest.mark.escape(
    "Memory past memory_mb through memfd_create (shared memory RLIMIT_AS does not count)",
    "the sample's memory cgroup (memory_mb=128) counts memfd pages",
)
async def test_memfd_cannot_pass_the_memory_limit() -> None:
    config = BwrapConfig(memory_mb=128, max_processes=32, max_disk_mb=16)
    async with bwrap_sandbox(config) as sb:
        result = await sb.exec(["python3", "-c", MEMFD_FILL], timeout=60)
        written = int(result.stdout.split()[0]) if result.stdout.strip() else 0
        assert not result.success and written < 128, (result.returncode, written)
        assert (await sb.exec(["echo", "alive"])).stdout == "alive\n"


@pytest.mark.escape("Disk past max_disk_mb with fallocate of gigabytes in one call", TMPFS)
async def test_fallocate_cannot_pass_the_disk_limit() -> None:
    async with bwrap_sandbox(DISK) as sb:
        result = await sb.exec(["fallocate", "-l", "1G", "big"], timeout=30)
        assert not result.success and "No space left on device" in result.stderr
        used = await sb.exec(["du", "-sk", "/workspace"])
        assert int(used.stdout.split()[0]) <= 8 * 1024


UNLINKED_FILL = """
import os
f = open("held", "wb")
os.unlink("held")
written = 0
try:
    for _ in range(64):
        f.write(b"x" * (1 << 20)); f.flush(); written += 1
except OSError as ex:
    print(written, ex.strerror)
"""


@pytest.mark.escape("Disk past max_disk_mb through an unlinked file held open", TMPFS)
async def test_unlinked_file_cannot_pass_the_disk_limit() -> None:
    async with bwrap_sandbox(DISK) as sb:
        result = await sb.exec(["python3", "-c", UNLINKED_FILL], timeout=30)
        written, _, reason = result.stdout.strip().partition(" ")
        assert int(written) <= 8 and reason == "No space left on device", result


@pytest.mark.escape("Disk past max_disk_mb at the bottom of a 1 500-deep directory tree", TMPFS)
async def test_deep_tree_cannot_pass_the_disk_limit() -> None:
    async with bwrap_sandbox(DISK) as sb:
        result = await sb.exec(["python3", "-c", DEEP + FILL_LEAF], timeout=60)
        assert not result.success and "No space left on device" in result.stderr, result
        used = await sb.exec(["df", "-k", "--output=used", "/workspace"])
        assert int(used.stdout.split()[-1]) <= 8 * 1024


#: A 1 500-deep chain of directories from the cwd, leaving the cwd at its bottom.
DEEP = """
import os
for _ in range(1500):
    os.mkdir("d")
    os.chdir("d")
"""
FILL_LEAF = """
with open("f", "wb") as f:
    for _ in range(64):
        f.write(b"x" * (1 << 20))
"""

INODE_FILL = """
import os
made = 0
try:
    for i in range(40000):
        open(f"f{i}", "w").close(); made += 1
except OSError as ex:
    print(made, ex.strerror)
"""


@pytest.mark.escape(
    "Inode exhaustion (40 000 empty files) starving other samples and the next sample_init",
    "each sample's tmpfs has its own nr_inodes (max_inodes=1000); nothing is on the host disk",
)
async def test_inode_exhaustion_stays_in_its_sample() -> None:
    config = BwrapConfig(memory_mb=256, max_processes=32, max_inodes=1000)
    async with bwrap_sandbox(config) as sb, bwrap_sandbox(config) as neighbour:
        start = time.monotonic()
        result = await sb.exec(["python3", "-c", INODE_FILL], timeout=60)
        made, _, reason = result.stdout.strip().partition(" ")
        assert int(made) < 1000 and reason == "No space left on device", result
        assert time.monotonic() - start < 30
        await neighbour.write_file("still.txt", "fine")
        assert await neighbour.read_file("still.txt") == "fine"
        async with bwrap_sandbox(config) as later:
            assert (await later.exec(["touch", "new"])).success


@pytest.mark.escape(
    "Kill sample_cleanup (and `inspect sandbox cleanup`) with a 1 500-deep directory",
    "the sample's files live on its tmpfs, which the kernel frees with the sandbox; "
    "cleanup never walks a tree",
)
async def test_deep_directory_does_not_break_cleanup() -> None:
    envs = await BwrapSandboxEnvironment.sample_init("docket-test", DISK, {})
    sb = envs["default"].as_type(BwrapSandboxEnvironment)
    assert (await sb.exec(["python3", "-c", DEEP + "open('leaf', 'w').write('x')"])).success
    with anyio.fail_after(20):
        await BwrapSandboxEnvironment.sample_cleanup("docket-test", DISK, envs, False)
        await BwrapSandboxEnvironment.cli_cleanup(None)
    assert sb.session._survivors() == []


@pytest.mark.escape(
    "Hang read_file/write_file on a FIFO (300 s each)",
    "the file builtins open with O_NONBLOCK and refuse anything but a regular file",
)
async def test_file_operations_refuse_fifos_at_once() -> None:
    async with bwrap_sandbox(DISK) as sb:
        assert (await sb.exec(["mkfifo", "pipe"])).success
        with anyio.fail_after(20):
            with pytest.raises(PermissionError, match="not a regular file"):
                await sb.read_file("pipe")
            with pytest.raises(PermissionError, match="not a regular file"):
                await sb.write_file("pipe", "data")
            with pytest.raises(PermissionError, match="not a regular file"):
                await sb.read_file("/dev/zero")
        await sb.write_file("plain.txt", "ok")
        assert await sb.read_file("plain.txt") == "ok"
