"""The exec service's two paths, native (`execinit.c`) and Python, hold the same properties.

Each test runs once per path (`DOCKET_BWRAP_NATIVE`); the rest of `tests/sandboxes/` runs on
whichever path the machine has (native wherever a C compiler is installed).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import struct
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from docket.sandboxes.bwrap import execd, native
from docket.sandboxes.bwrap.layout import HOME
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from docket.sandboxes.bwrap.session import ExecFailed
from tests.sandboxes.bwrap_support import bwrap_sandbox, host_processes_matching, skip_without_bwrap

#: Limits a command must run under (soft = hard), as /proc/self/limits names them.
LIMITS = {"max_open_files": 300, "max_processes": 40, "max_file_size_mb": 5}
EXPECTED_LIMITS = {"Max open files": "300", "Max file size": str(5 << 20)}


@pytest.fixture(params=["native", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Which path the service takes (the native one skipped where it cannot be built)."""
    monkeypatch.setenv("DOCKET_BWRAP_NATIVE", "1" if request.param == "native" else "0")
    if request.param == "native" and native.helper() is None:
        pytest.skip("no native exec helper here (no C compiler)")
    yield request.param


async def _run(sb: BwrapSandboxEnvironment, script: str, **kwargs: Any) -> tuple[int, str, str]:
    result = await sb.exec(["sh", "-c", script], **kwargs)
    return result.returncode, result.stdout, result.stderr


def _status(text: str) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


@pytest.mark.bwrap
@skip_without_bwrap
async def test_a_command_holds_nothing_of_the_service(path: str) -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        assert sb.session.native == (path == "native")
        code, out, _ = await _run(sb, "cat /proc/$$/status; echo; cat /proc/$$/limits")
        assert code == 0
        status = _status(out)
        for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert status[field] == "0000000000000000", field
        assert (status["NoNewPrivs"], status["Seccomp"], status["Seccomp_filters"]) == (
            "1",
            "2",
            "2",
        )
        assert status["Pid"] == "2" and status["PPid"] == "1"  # its own pid namespace
        for name, value in EXPECTED_LIMITS.items():
            line = next(row for row in out.splitlines() if row.startswith(name))
            assert line[26:].split()[:2] == [value, value], name
        # its session, its oom_score_adj, and no way into its namespace init (pid 1)
        script = (
            "cat /proc/self/oom_score_adj; ps -o sid= -p $$; "
            "cat /proc/1/environ >/dev/null 2>&1 || echo denied; ls /proc/1/fd 2>&1 | head -1; "
            "ls /proc/self/fd"
        )
        code, out, _ = await _run(sb, script)
        adj, sid, denied, fds, *own = out.split("\n")
        assert (adj, sid.strip(), denied) == ("1000", "2", "denied")
        assert "Permission denied" in fds
        assert sorted(own[:-1]) == ["0", "1", "2", "3"]  # stdio, and ls's own directory


@pytest.mark.bwrap
@skip_without_bwrap
async def test_exit_codes_signals_io_and_errors(path: str) -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        assert await _run(sb, "echo out; echo err >&2; exit 7") == (7, "out\n", "err\n")
        assert (await _run(sb, "kill -TERM $$"))[0] == 128 + 15
        assert (await sb.exec(["cat"], input="piped")).stdout == "piped"
        env = await sb.exec(["sh", "-c", 'echo "$A|$PWD"'], env={"A": "b c"}, cwd="/tmp")
        assert env.stdout == "b c|/tmp\n"
        missing = await sb.exec(["no-such-command"])
        assert (missing.returncode, missing.stderr) == (127, "no-such-command: command not found\n")
        assert (await sb.exec(["true"], env={"PATH": "/nowhere:/usr/bin"})).returncode == 0
        with pytest.raises(PermissionError):
            await sb.exec(["/etc/passwd"])
        with pytest.raises(ExecFailed) as failed:
            await sb.session.exec(
                ["true"],
                input=None,
                cwd="/",
                env={"A=B": "c"},
                timeout=10,
                stdout_limit=100,
                stderr_limit=100,
            )
        assert failed.value.errno == errno.EIO  # what execve refuses before the kernel
        moved = await sb.exec(["true"], cwd="/no/such/dir")
        assert moved.returncode == 1 and "cannot change directory to /no/such/dir" in moved.stderr
        # a daemon the command leaves is killed with its namespace
        marker = f"docket_native_{uuid.uuid4().hex[:10]}"
        assert (await _run(sb, f"setsid sh -c 'sleep 300; : {marker}' &"))[0] == 0
        for _ in range(40):
            if not host_processes_matching(marker):
                break
            await anyio.sleep(0.05)
        assert host_processes_matching(marker) == []


@pytest.mark.bwrap
@skip_without_bwrap
async def test_file_builtins(path: str) -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        await sb.write_file("deep/er/file.txt", "hello")
        assert await sb.read_file("deep/er/file.txt") == "hello"
        await sb.write_file("deep/er/file.txt", b"\x00\xff")
        assert await sb.read_file("deep/er/file.txt", text=False) == b"\x00\xff"
        await sb.write_file(f"{HOME}/x", "y")
        assert await sb.read_file(f"{HOME}/x") == "y"
        with pytest.raises(FileNotFoundError):
            await sb.read_file("nothing-here")
        with pytest.raises(IsADirectoryError):
            await sb.read_file("/tmp")
        with pytest.raises(IsADirectoryError):
            await sb.write_file("/tmp", "x")
        assert (await _run(sb, "mkfifo /tmp/fifo && echo a > /workspace/plain"))[0] == 0
        with pytest.raises(PermissionError, match="FIFO"):
            await sb.read_file("/tmp/fifo")
        with pytest.raises(PermissionError, match="FIFO"):
            await sb.write_file("/tmp/fifo", "x")
        with pytest.raises(NotADirectoryError) as info:  # its parent is a file
            await sb.write_file("plain/child", "x")
        assert info.value.errno == errno.EEXIST
        with pytest.raises(OSError):
            await sb.write_file("/etc/passwd", "x")


def test_a_request_is_encoded_as_execinit_reads_it() -> None:
    message = {
        "op": "exec",
        "id": 9,
        "argv": ["sh", "-c", "true"],
        "cwd": "/w",
        "env": {"A": "1"},
        "detached": False,
        "builtin": None,
        "args": [],
    }
    body = b"9\x000\x000\x00/w\x00\x003\x00sh\x00-c\x00true\x001\x00A=1\x000\x00"
    assert execd.native_request(message) == struct.pack("=I", len(body)) + body
    read = {**message, "argv": None, "env": {}, "builtin": "read", "args": ["/f", 10]}
    body = b"9\x000\x000\x00/w\x00read\x000\x000\x002\x00/f\x0010\x00"
    assert execd.native_request(read) == struct.pack("=I", len(body)) + body
    for bad in ({"env": {"A=B": "c"}}, {"argv": ["a\x00b"]}, {"argv": [""]}, {"argv": [1]}):
        assert execd.native_request({**message, **bad})[4:].split(b"\x00")[2] == b"1"
    assert execd.native_request({**message, "cwd": None})[4:].split(b"\x00")[2] == b"2"


def test_the_limits_are_encoded_as_execinit_reads_them() -> None:
    limits = {
        "privileges": execd.Privileges([b"\x06\x00\x00\x00\x00\x00\xff\x7f"], [3, 8]),
        "numbered_rlimits": [("RLIMIT_NOFILE", 7, 300)],
        "tools": [5, 6],
    }
    assert execd.native_config(limits) == (
        b"DKX1"
        + struct.pack("=III", 2, 3, 8)
        + struct.pack("=IIqI", 1, 7, 300, 13)
        + b"RLIMIT_NOFILE"
        + struct.pack("=II", 1, 8)
        + b"\x06\x00\x00\x00\x00\x00\xff\x7f"
        + struct.pack("=IQQ", 1, 5, 6)
    )


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_execinit_compiles_without_warnings() -> None:
    done = subprocess.run(
        ["cc", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", str(native.SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.bwrap
@skip_without_bwrap
async def test_without_a_compiler_one_line_and_the_python_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DOCKET_BWRAP_NATIVE", "1")
    monkeypatch.setenv("CC", "no-such-compiler-here")
    native._built.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            assert native.helper() is None
            assert native.helper() is None
            async with bwrap_sandbox() as sb:
                assert not sb.session.native
                assert (await sb.exec(["sh", "-c", "exit 3"])).returncode == 3
    finally:
        native._built.cache_clear()
    lines = [r.getMessage() for r in caplog.records if "native exec helper" in r.getMessage()]
    assert len(lines) == 1 and "no C compiler" in lines[0]


@pytest.mark.bwrap
@skip_without_bwrap
async def test_a_helper_that_cannot_run_there_is_one_line_and_the_python_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DOCKET_BWRAP_NATIVE", "1")
    monkeypatch.setattr(native, "_built", lambda: b"#!/no/such/interpreter\n")
    with caplog.at_level(logging.WARNING):
        async with bwrap_sandbox() as sb:
            assert not sb.session.native
            assert (await sb.exec(["sh", "-c", "exit 4"])).returncode == 4
    lines = [r.getMessage() for r in caplog.records if "Python path" in r.getMessage()]
    assert len(lines) == 1 and "cannot run here" in lines[0]


def test_native_is_off_with_the_environment_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_BWRAP_NATIVE", "0")
    assert native.helper() is None and not native.enabled()
    monkeypatch.delenv("DOCKET_BWRAP_NATIVE")
    assert native.enabled()
    assert os.environ.get("DOCKET_BWRAP_NATIVE") is None
