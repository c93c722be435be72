"""Escape attempts on processes: host processes, fork bombs, outliving exec, setuid, userns."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.probe import ensure_bwrap, run_as_uid
from tests.sandboxes.bwrap_support import (
    bwrap_sandbox,
    processes_gone,
    requires_bwrap,
)

pytestmark = requires_bwrap

LIMITS = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=1)


@pytest.fixture
def host_sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A host process (as the sandbox's own host uid, so only namespaces protect it)."""
    run_as = run_as_uid(LIMITS)
    ids: dict[str, Any] = {"user": run_as, "group": run_as} if run_as is not None else {}
    marker = f"docket_host_{uuid.uuid4().hex[:10]}"
    proc = subprocess.Popen(["sh", "-c", f"sleep 60; : {marker}"], **ids)
    yield proc
    proc.kill()
    proc.wait(timeout=10)


@pytest.mark.escape(
    "See and signal a host process (same host uid)",
    "pid namespace: host pids do not exist inside",
)
async def test_host_processes_are_invisible_and_unsignalable(
    host_sleeper: subprocess.Popen[bytes],
) -> None:
    pid = host_sleeper.pid
    script = (
        f"ps -eo args | grep -c 'docket_hos[t]_'; ls /proc | grep -c '^[0-9]'; "
        f"cat /proc/{pid}/cmdline; kill -9 {pid} && echo killed; kill -STOP {pid}; :"
    )
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["sh", "-c", script])
    lines = result.stdout.split()
    assert lines[0] == "0" and int(lines[1]) < 8 and "killed" not in result.stdout
    assert host_sleeper.poll() is None  # still running
    state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    assert state == "S"  # sleeping, not stopped


@pytest.mark.escape(
    "Fork bomb",
    "cgroup pids.max (max_processes; RLIMIT_NPROC without a cgroup) and the exec timeout",
)
async def test_fork_bomb_is_contained() -> None:
    marker = f"docket_bomb_{uuid.uuid4().hex[:10]}"
    async with bwrap_sandbox(LIMITS) as sb:
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            await sb.exec(["bash", "-c", f"b(){{ b | b & }}; b; sleep 60; : {marker}"], timeout=3)
        assert time.monotonic() - start < 15
        count = await sb.exec(
            ["python3", "-c", _COUNT_FORKS], timeout=30
        )  # how far one process gets
        assert LIMITS.max_processes is not None
        assert 0 < int(count.stdout) < LIMITS.max_processes
        assert (await sb.exec(["true"])).success
    assert await processes_gone(marker)


_COUNT_FORKS = """
import os, time
n = 0
for _ in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
print(n)
"""


@pytest.mark.escape(
    "Keep a process running after exec times out (background, setsid, nohup)",
    "the timeout SIGKILLs the exec's namespace init; the kernel kills everything in it",
)
async def test_processes_do_not_outlive_a_timeout() -> None:
    marker = f"docket_outlive_{uuid.uuid4().hex[:10]}"
    script = (
        f"(sleep 60; : {marker}) & setsid sh -c 'sleep 60; : {marker}' & "
        f"nohup sh -c 'sleep 60; : {marker}' >/dev/null 2>&1 & sleep 60"
    )
    async with bwrap_sandbox(LIMITS) as sb:
        with pytest.raises(TimeoutError):
            await sb.exec(["sh", "-c", script], timeout=1)
        assert await processes_gone(marker)


@pytest.mark.escape(
    "Keep a daemon running after exec returns (double fork, setsid) and write later",
    "each exec has its own pid namespace: when the command exits, its init does and the kernel "
    "kills the rest",
)
async def test_processes_do_not_outlive_their_exec() -> None:
    marker = f"docket_daemon_{uuid.uuid4().hex[:10]}"
    daemon = f"sleep 1; echo late > /workspace/late; sleep 60; : {marker}"
    script = f"setsid sh -c '{daemon}' </dev/null >/dev/null 2>&1 & echo started"
    async with bwrap_sandbox(LIMITS) as sb:
        start = time.monotonic()
        result = await sb.exec(["sh", "-c", script], timeout=30)
        assert result.stdout == "started\n" and time.monotonic() - start < 10
        assert await processes_gone(marker)
        await anyio.sleep(1.5)
        assert (await sb.exec(["test", "-e", "/workspace/late"])).returncode == 1


@pytest.fixture
def setuid_id() -> Iterator[Path]:
    """A host folder holding a setuid-root copy of `id` (only root can make one)."""
    if os.geteuid() != 0:
        pytest.skip("only root can create a setuid-root binary")
    folder = Path(tempfile.mkdtemp(prefix="docket-escape-suid-"))
    folder.chmod(0o755)
    binary = folder / "id"
    shutil.copy("/usr/bin/id", binary)
    os.chown(binary, 0, 0)
    binary.chmod(0o4755)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.escape(
    "Gain root through setuid binaries (a setuid-root `id`, su, mount)",
    "no_new_privs, and root is unmapped in the user namespace, so setuid bits do nothing",
)
async def test_setuid_binaries_give_no_privilege(setuid_id: Path) -> None:
    config = BwrapConfig(**{**LIMITS.model_dump(), "ro_binds": {str(setuid_id): "/suid"}})
    async with bwrap_sandbox(config) as sb:
        assert (await sb.exec(["stat", "-c", "%A", "/suid/id"])).stdout.startswith("-rws")
        assert (await sb.exec(["/suid/id", "-u"])).stdout == "1000\n"
        status = (await sb.exec(["grep", "-E", "NoNewPrivs|CapEff", "/proc/self/status"])).stdout
        assert "NoNewPrivs:\t1" in status and "CapEff:\t0000000000000000" in status
        su = await sb.exec(["su", "-c", "id -u", "root"], input="", timeout=10)
        assert not su.success and su.stdout != "0\n"
        mount = await sb.exec(["mount", "-t", "tmpfs", "none", "/workspace"], timeout=10)
        assert not mount.success


@pytest.mark.escape(
    "Gain capabilities in a nested user namespace (unshare -Ur)",
    "bwrap --disable-userns, and seccomp denies unshare/clone of new namespaces",
)
async def test_nested_user_namespaces_are_disabled() -> None:
    binary = await ensure_bwrap(LIMITS)
    if not binary.disable_userns:
        pytest.skip("this bwrap has no --disable-userns")
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["unshare", "-Ur", "id", "-u"], timeout=10)
        assert not result.success and result.stdout != "0\n"
