"""Shared helpers for the bwrap sandbox tests (imported by test modules in this folder)."""

from __future__ import annotations

import functools
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
