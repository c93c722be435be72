"""exec semantics of the bwrap sandbox: timeouts, output limits, arguments, cleanup."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import anyio
import pytest
from inspect_ai.util import (
    OutputLimitExceededError,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
)

from docket.core.inspect_private import override_max_exec_output_size
from docket.sandboxes.bwrap import cgroup
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import bwrap_sandbox, host_processes_matching, requires_bwrap

pytestmark = requires_bwrap


async def test_timeout_kills_whole_tree_seen_from_host() -> None:
    marker = f"docket_marker_{uuid.uuid4().hex[:10]}"
    async with bwrap_sandbox() as sb:
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            await sb.exec(
                ["sh", "-c", f"(sleep 30; : {marker}) & sh -c 'sleep 30; : {marker}'; :"],
                timeout=1,
            )
        assert time.monotonic() - start < 5
        for _ in range(20):
            if not host_processes_matching(marker):
                break
            await anyio.sleep(0.1)
        assert host_processes_matching(marker) == []


async def test_output_limit_raises_and_stops_the_command() -> None:
    async with bwrap_sandbox() as sb:
        with override_max_exec_output_size(1024):
            with pytest.raises(OutputLimitExceededError) as info:
                await sb.exec(["yes"], timeout=20)
        assert "1 KiB" in str(info.value)
        assert info.value.truncated_output is not None
        assert len(info.value.truncated_output) == 1024
        result = await sb.exec(["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a"])
        assert len(result.stdout) == 5000


async def test_input_env_cwd_and_concurrency_flag() -> None:
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["cat"], input=b"\x00\x01bytes")).stdout == "\x00\x01bytes"
        result = await sb.exec(["sh", "-c", "echo $A; pwd"], env={"A": "1"}, cwd="/tmp")
        assert result.stdout == "1\n/tmp\n"
        env_path = await sb.exec(["sh", "-c", "echo $PATH"], env={"PATH": "/bin"})
        assert env_path.stdout == "/bin\n"
        assert (await sb.exec(["true"], concurrency=False)).success
        missing = await sb.exec(["ls"], cwd="no/such/dir")
        assert not missing.success


async def test_other_users_are_unsupported() -> None:
    async with bwrap_sandbox() as sb:
        for user in ("root", "0", "nobody"):
            with pytest.raises(SandboxUserUnsupportedError):
                await sb.exec(["whoami"], user=user)
        assert (await sb.exec(["whoami"], user="1000")).stdout == "agent\n"


async def test_missing_command_is_a_failed_result() -> None:
    async with bwrap_sandbox() as sb:
        result = await sb.exec(["no-such-command-here"])
        assert result.returncode == 127 and "not found" in result.stderr


async def test_cancellation_kills_and_cleanup_ends_the_sandbox() -> None:
    marker = f"docket_cancel_{uuid.uuid4().hex[:10]}"
    envs = await BwrapSandboxEnvironment.sample_init("docket-test", None, {})
    sb = envs["default"].as_type(BwrapSandboxEnvironment)
    async with anyio.create_task_group() as tg:
        tg.start_soon(sb.exec, ["sh", "-c", f"sleep 30; : {marker}"])
        for _ in range(50):
            await anyio.sleep(0.1)
            if host_processes_matching(marker):
                break
        assert host_processes_matching(marker), "the command should be visible while it runs"
        tg.cancel_scope.cancel()
    assert host_processes_matching(marker) == []  # gone when the cancelled exec returns
    assert (await sb.exec(["true"])).success  # the sandbox itself lives on
    service = sb.session.child_pid
    await BwrapSandboxEnvironment.sample_cleanup("docket-test", None, envs, interrupted=True)
    assert not Path(f"/proc/{service}").exists()
    assert sb.session._survivors() == []


async def test_exec_after_cleanup_is_a_clear_error() -> None:
    async with bwrap_sandbox() as sb:
        pass
    with pytest.raises(SandboxUnavailableError, match="sandbox of this sample is gone"):
        await sb.exec(["true"])


async def test_many_concurrent_execs_each_get_their_own_result() -> None:
    async with bwrap_sandbox() as sb:
        results: dict[int, str] = {}

        async def one(i: int) -> None:
            result = await sb.exec(["sh", "-c", f"sleep 0.$((RANDOM % 3)); echo {i}; exit {i}"])
            assert result.returncode == i
            results[i] = result.stdout

        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon(one, i)
        assert results == {i: f"{i}\n" for i in range(12)}


@pytest.mark.skipif(not cgroup.detect().available, reason="no writable cgroup here")
async def test_cli_cleanup_removes_cgroups_of_dead_evaluators() -> None:
    parent = cgroup.detect().parents[0]
    dead = subprocess.Popen(["true"])
    dead.wait()
    leftover = parent / f"{cgroup.PREFIX}{dead.pid}-0123456789ab"
    alive = parent / f"{cgroup.PREFIX}{os.getpid()}-0123456789ab"
    leftover.mkdir()
    alive.mkdir()
    try:
        await BwrapSandboxEnvironment.cli_cleanup(None)
        assert not leftover.exists()
        assert alive.exists()  # this evaluator still runs: its sandboxes are not leftovers
    finally:
        for path in (leftover, alive):
            if path.exists():
                path.rmdir()


def _children(pid: int) -> list[int]:
    """Host pids whose parent is `pid`."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(entry.name))
    return out


async def test_a_killed_spare_namespace_is_replaced_before_the_next_exec() -> None:
    """The service keeps one namespace prepared ahead (an init, then its command waiting for a
    request). An OOM kill in the sample's cgroup can take that command; the next exec must
    still run, also before the service has reaped the dead spare (its init is stopped here,
    so the service cannot learn of the death from a reap)."""
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["true"])).success
        service = sb.session.child_pid
        for _ in range(250):  # the spare's init forks its command on its own time (under load)
            spares = {init: _children(init) for init in _children(service)}
            inits = [init for init, commands in spares.items() if commands]
            waiting = [command for init in inits for command in spares[init]]
            if waiting:
                break
            await anyio.sleep(0.02)
        assert waiting, "the spare's prepared command should be there"
        for init in inits:
            os.kill(init, signal.SIGSTOP)
        try:
            for pid in waiting:
                os.kill(pid, signal.SIGKILL)
            for _ in range(100):  # dead (a zombie its stopped init has not reaped)
                if all(_state(pid) in ("Z", None) for pid in waiting):
                    break
                await anyio.sleep(0.02)
            for _ in range(3):
                result = await sb.exec(["echo", "alive"], timeout=10)
                assert result.stdout == "alive\n"
        finally:
            for init in inits:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(init, signal.SIGCONT)


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return None
