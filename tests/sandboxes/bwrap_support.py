"""Shared helpers for the bwrap sandbox tests (imported by test modules in this folder)."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from docket.core.inspect_private import PrerequisiteError
from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.probe import ensure_bwrap
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment


@functools.cache
def bwrap_problem() -> str | None:
    """Why bwrap cannot run here, or None when it can."""
    try:
        anyio.run(ensure_bwrap, BwrapConfig())
    except PrerequisiteError as ex:
        return str(ex.message)
    return None


#: Marks for tests that need a working bwrap (skipped, with the reason, when there is none).
skip_without_bwrap = pytest.mark.skipif(
    bwrap_problem() is not None, reason=f"bwrap unavailable: {bwrap_problem()}"
)
requires_bwrap = [pytest.mark.bwrap, skip_without_bwrap]
#: Marks for tests that need each sample to lease a host uid of its own (docket run as root).
requires_own_uids = [
    *requires_bwrap,
    pytest.mark.skipif(os.geteuid() != 0, reason="samples get host uids of their own as root"),
]


@asynccontextmanager
async def bwrap_sandbox(config: Any = None) -> AsyncIterator[BwrapSandboxEnvironment]:
    """One sample's sandbox, cleaned up on exit."""
    envs = await BwrapSandboxEnvironment.sample_init("docket-test", config, {})
    try:
        yield envs["default"].as_type(BwrapSandboxEnvironment)
    finally:
        await BwrapSandboxEnvironment.sample_cleanup("docket-test", config, envs, True)


def host_processes_matching(marker: str) -> list[str]:
    """Host command lines containing `marker` (seen from outside every sandbox)."""
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if marker in line and "ps -eo" not in line]


async def processes_gone(marker: str, within_s: float = 5.0) -> bool:
    """Whether no host process carries `marker` (polling up to `within_s`)."""
    deadline = time.monotonic() + within_s
    while host_processes_matching(marker):
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.1)
    return True


#: A lingering attack: `{body}` defines `exhaust()`, which takes what it can (keeping it in
#: `held`) and says how far it got (`fail(errno, count)`: "EMFILE after 200"); the script then
#: writes that to /tmp/ready and waits.
LINGERING_ATTACK = """
import ctypes, errno, mmap, os, time
libc = ctypes.CDLL(None, use_errno=True)
held = []

def fail(code, count):
    return f"{errno.errorcode[code]} after {count}"

{body}

report = exhaust()
with open("/tmp/ready.tmp", "w") as out:
    out.write(report)
os.rename("/tmp/ready.tmp", "/tmp/ready")
time.sleep(60)
"""


def ready_file(sb: BwrapSandboxEnvironment) -> Path:
    """A sample's /tmp/ready, seen from the host through its pid 1's root."""
    return Path(f"/proc/{sb.session.child_pid}/root/tmp/ready")


@asynccontextmanager
async def lingering(sb: BwrapSandboxEnvironment, script: str, what: str) -> AsyncIterator[str]:
    """A python `script` running in `sb` until the block ends; yields what it wrote to
    /tmp/ready (it must write that file, atomically, once it holds what it took, then wait)."""
    async with anyio.create_task_group() as tg:

        async def linger() -> None:
            with contextlib.suppress(TimeoutError):
                await sb.exec(["python3", "-c", script], timeout=60)

        tg.start_soon(linger)
        report = ready_file(sb)
        deadline = time.monotonic() + 30
        while not report.exists():
            assert time.monotonic() < deadline, f"the {what} attack never got ready"
            await anyio.sleep(0.05)
        yield report.read_text()
        tg.cancel_scope.cancel()
