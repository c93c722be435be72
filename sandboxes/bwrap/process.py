"""Run one bwrap process: feed stdin, cap output, enforce the timeout, kill the whole tree."""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from subprocess import DEVNULL, PIPE

import anyio
from anyio.abc import ByteReceiveStream, Process

#: Environment of the bwrap process itself (the sandbox's own is set with --setenv).
_HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}

#: How long to wait for a killed process to be reaped before giving up on it.
_REAP_TIMEOUT = 10.0


@dataclass(frozen=True)
class RawResult:
    """Exit status and captured output of one run."""

    returncode: int
    stdout: bytes
    stderr: bytes


class StreamLimitExceeded(Exception):
    """An output stream passed its byte limit; the process tree was killed."""

    def __init__(self, stream: str, head: bytes) -> None:
        super().__init__(f"{stream} exceeded its limit")
        self.stream = stream
        self.head = head


def _kill_tree(process: Process) -> None:
    """SIGKILL bwrap's process group; --die-with-parent then tears down the pid namespace."""
    if process.returncode is not None:
        return
    # Not process.kill(): Popen polls (and may reap) first, racing asyncio's child watcher.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _close(process: Process) -> None:
    """Release pipes and transports; `aclose` only once reaped, as it waits without bound."""
    if process.returncode is not None:
        with contextlib.suppress(Exception):
            await process.aclose()
        return
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()


async def run_process(
    argv: list[str],
    *,
    input: bytes | None,
    stdout_limit: int,
    stderr_limit: int,
    timeout: float | None,
    run_as: int | None,
) -> RawResult:
    """Run `argv` in a new session; `run_as` switches uid/gid first (only used as root).

    Raises TimeoutError after `timeout` seconds and StreamLimitExceeded when a stream passes
    its limit; in both cases (and on cancellation) the process group is killed first.
    """
    ids: dict[str, object] = {}
    if run_as is not None:
        ids = {"user": run_as, "group": run_as, "extra_groups": []}
    process = await anyio.open_process(
        argv,
        stdin=PIPE if input is not None else DEVNULL,
        stdout=PIPE,
        stderr=PIPE,
        cwd="/",
        env=_HOST_ENV,
        start_new_session=True,
        **ids,  # type: ignore[arg-type]
    )
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    overflow: list[str] = []

    async def drain(name: str, stream: ByteReceiveStream | None, limit: int) -> None:
        if stream is None:
            return
        sink = buffers[name]
        async for chunk in stream:
            sink += chunk
            if len(sink) > limit:
                overflow.append(name)
                _kill_tree(process)
                return

    async def feed() -> None:
        if process.stdin is None:
            return
        try:
            if input:
                await process.stdin.send(input)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the command exited (or closed stdin) before reading everything
        finally:
            with contextlib.suppress(Exception):
                await process.stdin.aclose()

    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, "stdout", process.stdout, stdout_limit)
                tg.start_soon(drain, "stderr", process.stderr, stderr_limit)
                tg.start_soon(feed)
            returncode = await process.wait()
    except BaseException:
        with anyio.CancelScope(shield=True):
            _kill_tree(process)
            with anyio.move_on_after(_REAP_TIMEOUT):
                await process.wait()
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await _close(process)
    if overflow:
        limit = stdout_limit if overflow[0] == "stdout" else stderr_limit
        raise StreamLimitExceeded(overflow[0], bytes(buffers[overflow[0]][:limit]))
    return RawResult(returncode, bytes(buffers["stdout"]), bytes(buffers["stderr"]))
