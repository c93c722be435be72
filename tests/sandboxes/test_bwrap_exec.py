"""exec semantics of the bwrap sandbox: timeouts, output limits, arguments, cleanup."""

from __future__ import annotations

import time
import uuid

import anyio
import pytest
from bwrap_support import bwrap_sandbox, host_processes_matching, requires_bwrap
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from docket.sandboxes.bwrap.workspace import PREFIX, base_dir, create_sample_dirs
from inspect_ai.util import OutputLimitExceededError, SandboxUserUnsupportedError
from inspect_ai.util._sandbox.limits import override_max_exec_output_size

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


async def test_cancellation_kills_and_cleanup_removes_workspace() -> None:
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
    await anyio.sleep(0.3)
    assert host_processes_matching(marker) == []
    assert sb.dirs.root.exists()
    await BwrapSandboxEnvironment.sample_cleanup("docket-test", None, envs, interrupted=True)
    assert not sb.dirs.root.exists()


async def test_cleanup_copes_with_read_only_entries() -> None:
    async with bwrap_sandbox() as sb:
        await sb.exec(["sh", "-c", "mkdir -p ro/deep && touch ro/deep/f && chmod -R a-w ro"])
        root = sb.dirs.root
    assert not root.exists()


async def test_task_cleanup_and_cli_cleanup_remove_leftovers() -> None:
    kept = create_sample_dirs("docket-leftover-task", None)
    await BwrapSandboxEnvironment.task_cleanup("docket-leftover-task", None, cleanup=False)
    assert kept.root.exists()
    await BwrapSandboxEnvironment.task_cleanup("docket-leftover-task", None, cleanup=True)
    assert not kept.root.exists()

    orphan = create_sample_dirs("docket-orphan-task", None)
    other = create_sample_dirs("docket-orphan-task", None)
    await BwrapSandboxEnvironment.cli_cleanup(orphan.id)
    assert not orphan.root.exists() and other.root.exists()
    await BwrapSandboxEnvironment.cli_cleanup(other.id)
    assert not other.root.exists()
    assert not list(base_dir().glob(f"{PREFIX}{orphan.id}*"))
