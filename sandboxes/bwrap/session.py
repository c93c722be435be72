"""One sample's long-lived sandbox, seen from the host: start, exec, tear down.

`SandboxSession.start` runs bwrap with the exec service (`execd.py`) as the sandbox's pid 1,
moves it into the sample's cgroup before it runs anything, and waits for `ready`. Each
`exec` sends one request (with fresh pipes for stdin/stdout/stderr) and waits for the
service's `exit` message; the output never decides how a command ended. `close` kills the
sandbox's pid 1 from outside (through a pidfd), so the kernel ends every process in it, and
then checks that no process of the sandbox's user namespace is left.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import logging
import os
import re
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.util import SandboxUnavailableError

from . import execd, native
from .cgroup import CgroupSupport, SampleCgroup
from .config import BwrapConfig
from .layout import WORKSPACE, BwrapBinary, launch_plan
from .rlimits import SERVICE_TASKS

logger = logging.getLogger(__name__)

#: Environment of the bwrap process itself (the sandbox's own is set by the exec service).
_HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
_START_TIMEOUT = 30.0
_KILL_WAIT = 10.0
#: Seconds the exec service gets to end and reap every exec namespace (`end_processes`).
END_WAIT = 60.0
_SERVICE_SOURCE = Path(execd.__file__).read_bytes()


@dataclass(frozen=True)
class RawResult:
    """Exit status and captured output of one exec."""

    returncode: int
    stdout: bytes
    stderr: bytes


class StreamLimitExceeded(Exception):
    """An output stream passed its byte limit; the exec was killed."""

    def __init__(self, stream: str, head: bytes) -> None:
        super().__init__(f"{stream} exceeded its limit")
        self.stream = stream
        self.head = head


class ExecFailed(OSError):
    """The command could not be started (execve failed); errno says why."""


class SandboxGone(SandboxUnavailableError):
    """The sample's sandbox (its exec service) is no longer running."""


def _nonblocking_pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    return read_end, write_end


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None and fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class SandboxSession:
    """A running sandbox and the channel to its exec service."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        channel: socket.socket,
        child_pid: int,
        cgroup: SampleCgroup | None,
    ) -> None:
        self.process = process
        self.channel = channel
        self.child_pid = child_pid
        self.cgroup = cgroup
        self.pidfd = os.pidfd_open(child_pid)
        self.user_ns: int | None = None
        #: Why the sandbox has no devpts of its own with at most PTY_MAX ptys (None: it has).
        self.ptys_problem: str | None = None
        #: Whether execs take the native path (`execinit`); why not is logged once.
        self.native = False
        #: Held open from the handshake until teardown's survivor scan: while it is open the
        #: kernel cannot free the namespace, so its inode number cannot pass to a namespace of
        #: another sample (a freed number is reused at once), whose processes that scan would
        #: then kill as "survivors".
        self._user_ns_fd: int | None = None
        self._status_fd: int | None = None
        self._ids = itertools.count(1)
        self._buffer = bytearray()
        self._mailbox: dict[int, dict[str, Any]] = {}
        self._read_lock = anyio.Lock()
        self._send_lock = anyio.Lock()
        self._gone: str | None = None
        self._closed = False

    # -- start -----------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        binary: BwrapBinary,
        config: BwrapConfig,
        *,
        run_as: int | None,
        seccomp: tuple[bytes, ...],
        cgroups: CgroupSupport,
        rlimits: dict[str, int] | None = None,
        service_rlimits: dict[str, int] | None = None,
    ) -> SandboxSession:
        """Start a sandbox and wait until its service is ready (SandboxUnavailableError if not)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        status_read, status_write = _nonblocking_pipe()
        helper = native.helper()
        plan, command = launch_plan(binary, config, _SERVICE_SOURCE, theirs.fileno(), helper)
        plan.options += ["--json-status-fd", str(status_write)]
        args_fd = plan.args_fd()
        ids: dict[str, Any] = {}
        if run_as is not None:
            ids = {"user": run_as, "group": run_as, "extra_groups": []}
        cgroup: SampleCgroup | None = None
        process: subprocess.Popen[bytes] | None = None
        try:
            if cgroups.available:
                cgroup = SampleCgroup(
                    cgroups,
                    config.memory_mb,
                    _tasks_limit(config.max_processes),
                    agent_tasks=config.max_processes,
                )
            # Popen from the event loop's thread: bwrap's --die-with-parent follows the thread
            process = subprocess.Popen(
                ["bwrap", "--args", str(args_fd), "--", *command],
                executable=binary.path,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=[*plan.fds, theirs.fileno(), status_write],
                cwd="/",
                env=_HOST_ENV,
                start_new_session=True,
                **ids,
            )
        except BaseException:
            plan.close()
            _close(status_read, status_write)
            ours.close()
            theirs.close()
            if cgroup is not None:
                cgroup.remove()
            raise
        plan.close()
        theirs.close()
        _close(status_write)
        try:
            with anyio.fail_after(_START_TIMEOUT):
                child_pid = await _child_pid(status_read)
            if child_pid is None:
                raise _start_failure(process, "bwrap exited before starting the sandbox")
            try:
                if cgroup is not None:
                    cgroup.attach(child_pid)
                session = cls(process, ours, child_pid, cgroup)
            except ProcessLookupError:
                raise _start_failure(process, "its pid 1 exited as it started") from None
        except BaseException:
            _close(status_read)
            _kill_process(process)
            ours.close()
            if cgroup is not None:
                cgroup.remove()
            raise
        session._status_fd = status_read  # bwrap writes its pid 1's exit code there at the end
        try:
            with anyio.fail_after(_START_TIMEOUT):
                await session._handshake(
                    config,
                    seccomp,
                    (rlimits or {}, service_rlimits or {}),
                    plan.late_binds,
                    helper is not None,
                )
        except BaseException as ex:
            with anyio.CancelScope(shield=True):
                await session.close()
            if isinstance(ex, TimeoutError):
                raise SandboxUnavailableError(
                    "bwrap could not start the sandbox: its exec service did not answer"
                ) from None
            raise
        return session

    async def _handshake(
        self,
        config: BwrapConfig,
        seccomp: tuple[bytes, ...],
        rlimits: tuple[dict[str, int], dict[str, int]],
        late_binds: list[tuple[str, str]],
        helper: bool = False,
    ) -> None:
        from .layout import HELPER_PATH, PTY_MAX, STAGING, WRITABLE

        size = (config.max_disk_mb << 20) if config.max_disk_mb else 0
        mounts = {
            "staging": STAGING,
            "size": str(size) if size else "50%",
            "inodes": str(config.max_inodes) if config.max_inodes else "0",
            "binds": [list(entry) for entry in WRITABLE],
            "read_only": [list(pair) for pair in late_binds],
            "ptys": PTY_MAX,
        }
        self.channel.setblocking(False)
        init = {"op": "init", "mounts": mounts, "seccomp": [p.hex() for p in seccomp]}
        if helper:
            init["native"] = HELPER_PATH
        agent_fd = self.cgroup.agent_procs_fd() if self.cgroup is not None else None
        try:
            await self._send(
                {
                    **init,
                    "rlimits": rlimits[0],
                    "service_rlimits": rlimits[1],
                    "agent_cgroup": agent_fd is not None,
                },
                [agent_fd] if agent_fd is not None else None,
            )
        finally:
            _close(agent_fd)
        try:
            reply = await self._read_message()
        except (EOFError, OSError, ValueError):
            raise _start_failure(self.process, "the sandbox's exec service did not start") from None
        if reply.get("op") != "ready":
            raise SandboxUnavailableError(
                f"bwrap could not start the sandbox: {reply.get('message', reply)}"
            )
        self.ptys_problem = reply.get("ptys")
        self.native = reply.get("native") is True
        if isinstance(reply.get("native"), str):
            native.unusable(reply["native"])
        self._hold_user_ns()

    def _hold_user_ns(self) -> None:
        """Open pid 1's user namespace (checked through the pidfd to still be that process)."""
        try:
            fd = os.open(f"/proc/{self.child_pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            raise self._mark_gone("its pid 1 exited during the handshake") from None
        try:
            signal.pidfd_send_signal(self.pidfd, 0)  # still our pid 1, not a reused pid
        except OSError:
            _close(fd)
            raise self._mark_gone("its pid 1 exited during the handshake") from None
        self._user_ns_fd = fd
        self.user_ns = os.fstat(fd).st_ino

    # -- channel ---------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        data = memoryview(execd.encode(message))
        async with self._send_lock:
            ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _pack_fds(fds))] if fds else []
            while data:
                try:
                    sent = self.channel.sendmsg([data], ancillary)
                except BlockingIOError:
                    await anyio.wait_writable(self.channel)
                    continue
                except OSError as ex:
                    raise self._mark_gone(f"its exec service is unreachable ({ex})") from None
                data, ancillary = data[sent:], []

    async def _read_message(self) -> dict[str, Any]:
        while True:
            if len(self._buffer) >= 4:
                length = execd.frame_length(bytes(self._buffer[:4]))
                if len(self._buffer) >= 4 + length:
                    body = bytes(self._buffer[4 : 4 + length])
                    del self._buffer[: 4 + length]
                    message = json.loads(body)
                    if not isinstance(message, dict):
                        raise ValueError("a message must be a JSON object")
                    return message
            try:
                chunk = self.channel.recv(1 << 16)
            except BlockingIOError:
                await anyio.wait_readable(self.channel)
                continue
            if not chunk:
                raise EOFError("the exec service closed its channel")
            self._buffer += chunk

    def _mark_gone(self, why: str) -> SandboxGone:
        if self._gone is None:
            last = _last_line(self.process)
            self._gone = f"{why}; {self._cause()}" + (f"; its last words: {last}" if last else "")
        return SandboxGone(
            f"the bwrap sandbox of this sample is gone: {self._gone}; the sample cannot go on"
        )

    def _cause(self) -> str:
        """Why the sandbox ended, as far as the host can tell: OOM kills and refused forks in
        its cgroup, and how its exec service (bwrap's pid 1) ended."""
        causes: list[str] = []
        events = self.cgroup.events() if self.cgroup is not None else {}
        if events.get("oom_kill"):
            causes.append(f"the OOM killer ended {events['oom_kill']} of its processes")
        if events.get("pids_max"):
            causes.append(f"its pids.max refused {events['pids_max']} fork(s) of the service")
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=0.5)  # bwrap ends right after its pid 1
        code = _exit_code(self._status_fd)
        if code is None:
            causes.append("its exec service's end is unknown")
        elif code > 128:
            number = code - 128
            name = signal.Signals(number).name if number in signal.valid_signals() else number
            causes.append(f"its exec service was killed by {name}")
        else:
            causes.append(f"its exec service exited with status {code}")
        return "cause: " + ", ".join(causes)

    async def _wait_exit(self, id: int) -> dict[str, Any]:
        while True:
            if id in self._mailbox:
                return self._mailbox.pop(id)
            if self._gone is not None:
                raise self._mark_gone(self._gone)
            async with self._read_lock:
                if id in self._mailbox:
                    continue
                try:
                    message = await self._read_message()
                except (EOFError, OSError, ValueError) as ex:
                    raise self._mark_gone(f"its exec service stopped ({ex})") from None
                if message.get("op") == "exit":
                    self._mailbox[int(message["id"])] = message

    # -- exec ------------------------------------------------------------------------------

    async def exec(
        self,
        argv: list[str] | None,
        *,
        input: bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float | None,
        stdout_limit: int,
        stderr_limit: int,
        detached: bool = False,
        builtin: str | None = None,
        args: list[Any] | None = None,
    ) -> RawResult:
        """Run one command (or builtin file operation) and wait until all of it is gone.

        Raises TimeoutError after `timeout` seconds, StreamLimitExceeded when a stream passes
        its limit, ExecFailed when the command cannot be started, SandboxGone when the
        sandbox died; in every case nothing the exec started is left running.
        """
        if self._gone is not None or self._closed:
            raise self._mark_gone(self._gone or "it was closed")
        id = next(self._ids)
        stdin_read, stdin_write = (
            os.pipe() if input is not None else (os.open(os.devnull, os.O_RDONLY), -1)
        )
        out_read, out_write = _nonblocking_pipe()
        err_read, err_write = _nonblocking_pipe()
        if stdin_write >= 0:
            os.set_blocking(stdin_write, False)
        request = {
            "op": "exec",
            "id": id,
            "argv": argv,
            "cwd": cwd,
            "env": env,
            "detached": detached,
            "builtin": builtin,
            "args": args or [],
        }
        try:
            await self._send(request, [stdin_read, out_write, err_write])
        finally:
            _close(stdin_read, out_write, err_write)
        buffers = {out_read: bytearray(), err_read: bytearray()}
        limits = {out_read: stdout_limit, err_read: stderr_limit}
        drained = {out_read: anyio.Event(), err_read: anyio.Event()}
        overflow: list[int] = []
        failures: list[BaseException] = []
        outcome: dict[str, Any] = {}
        finished = False
        stdin_box = [stdin_write]  # _feed closes it (EOF for the command) and marks it -1
        try:
            with anyio.fail_after(timeout):
                async with anyio.create_task_group() as tg:

                    async def drain(fd: int) -> None:
                        sink = buffers[fd]
                        while True:
                            try:
                                chunk = os.read(fd, 1 << 16)
                            except BlockingIOError:
                                await anyio.wait_readable(fd)
                                continue
                            if not chunk:
                                break
                            sink += chunk
                            if len(sink) > limits[fd]:
                                overflow.append(fd)
                                tg.cancel_scope.cancel()
                                return
                        drained[fd].set()

                    async def wait() -> None:
                        try:
                            outcome.update(await self._wait_exit(id))
                        except SandboxGone as ex:
                            failures.append(ex)
                            tg.cancel_scope.cancel()
                            return
                        if detached:  # a server it started may hold inherited pipes
                            with anyio.move_on_after(0.2):
                                for event in drained.values():
                                    await event.wait()
                            tg.cancel_scope.cancel()

                    tg.start_soon(drain, out_read)
                    tg.start_soon(drain, err_read)
                    tg.start_soon(wait)
                    if stdin_box[0] >= 0:
                        tg.start_soon(_feed, stdin_box, input or b"")
            finished = bool(outcome) and not overflow
        finally:
            if not finished:
                with anyio.CancelScope(shield=True):
                    await self._kill(id, outcome)
            _close(out_read, err_read, stdin_box[0])
        if failures:
            raise failures[0]
        if overflow:
            fd = overflow[0]
            name = "stdout" if fd == out_read else "stderr"
            raise StreamLimitExceeded(name, bytes(buffers[fd][: limits[fd]]))
        return _result(outcome, argv, bytes(buffers[out_read]), bytes(buffers[err_read]))

    async def seal_tools(self, bundle: bytes) -> str | None:
        """Have the service seal Inspect's tool support from `bundle` (see `toolsupport`).

        Returns None once sealed (later calls change nothing), else why not, in one line.
        """
        from .toolsupport import LAUNCHER, SERVER_STATE, TOOLS_DIR

        if self._gone is not None or self._closed:
            return "the sandbox is gone"
        id = next(self._ids)
        fd = os.memfd_create("docket-tools")
        try:
            view = memoryview(bundle)
            while view:
                view = view[os.write(fd, view) :]
            request = {
                "op": "seal",
                "id": id,
                "path": TOOLS_DIR,
                "launcher": LAUNCHER,
                "writable": list(SERVER_STATE),
            }
            await self._send(request, [fd])
        finally:
            _close(fd)
        outcome = await self._wait_exit(id)
        return None if outcome.get("code") == 0 else str(outcome.get("setup", outcome))

    async def end_processes(self) -> int:
        """End every process any exec started, Inspect's tool server and its shells included.

        The exec service SIGKILLs the pid namespace init of every exec still alive (the
        kernel then kills everything in that namespace) and answers once it has reaped them.

        Returns:
            How many exec namespaces were ended.

        Raises:
            TimeoutError: Not every namespace was reaped within `END_WAIT` seconds (a process
                the kernel cannot kill yet).
        """
        if self._gone is not None:
            raise self._mark_gone(self._gone)
        id = next(self._ids)
        await self._send({"op": "end", "id": id})
        with anyio.move_on_after(END_WAIT) as waited:
            outcome = await self._wait_exit(id)
        if waited.cancelled_caught:
            raise TimeoutError(f"the agent's processes were not all gone after {END_WAIT:g} s")
        return int(outcome.get("ended", 0))

    async def _kill(self, id: int, outcome: dict[str, Any]) -> None:
        """Kill exec `id`'s namespace and wait (bounded) until the service reports it gone."""
        if outcome or self._gone is not None:
            return
        with contextlib.suppress(SandboxUnavailableError):
            await self._send({"op": "kill", "id": id})
            with anyio.move_on_after(_KILL_WAIT):
                outcome.update(await self._wait_exit(id))

    # -- teardown --------------------------------------------------------------------------

    async def close(self) -> list[int]:
        """Kill the sandbox from outside and make sure nothing of it survives.

        Returns the host pids of survivors that had to be killed separately (normally none).
        """
        if self._closed:
            return []
        self._closed = True
        self._gone = self._gone or "it was closed"
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        with anyio.move_on_after(_KILL_WAIT):
            while self.process.poll() is None:
                await anyio.sleep(0.005)
        if self.process.poll() is None:
            _kill_process(self.process)
        survivors = self._survivors()
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self.cgroup is not None:
            survivors += self.cgroup.remove()
        _close(self.pidfd, self._user_ns_fd, self._status_fd)
        self._user_ns_fd = self._status_fd = None
        self.channel.close()
        if self.process.stderr is not None:
            self.process.stderr.close()
        if survivors:
            logger.error("bwrap sandbox: killed %d process(es) left after teardown", len(survivors))
        return survivors

    def _survivors(self) -> list[int]:
        """Host pids still in this sandbox's user namespace."""
        if self.user_ns is None:
            return []
        found: list[int] = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{entry.name}/ns/user").st_ino == self.user_ns:
                        found.append(int(entry.name))
        return found

    @property
    def alive(self) -> bool:
        return self._gone is None and self.process.poll() is None


def _tasks_limit(max_processes: int | None) -> int | None:
    return max_processes + SERVICE_TASKS if max_processes else None


def _pack_fds(fds: list[int]) -> bytes:
    import struct

    return struct.pack(f"{len(fds)}i", *fds)


async def _feed(box: list[int], data: bytes) -> None:
    """Write `data` to the pipe in `box[0]`, then close it (the command sees EOF)."""
    view = memoryview(data)
    try:
        while view:
            try:
                view = view[os.write(box[0], view) :]
            except BlockingIOError:
                await anyio.wait_writable(box[0])
    except OSError:
        pass  # the command exited (or closed stdin) before reading everything
    _close(box[0])
    box[0] = -1


async def _child_pid(status_fd: int) -> int | None:
    """bwrap's first JSON status document names the sandbox's pid 1 (host pid)."""
    data = bytearray()
    while b"}" not in data:
        try:
            chunk = os.read(status_fd, 4096)
        except BlockingIOError:
            await anyio.wait_readable(status_fd)
            continue
        if not chunk:
            return None
        data += chunk
    document = json.loads(bytes(data[: data.index(b"}") + 1]))
    return int(document["child-pid"])


def _exit_code(status_fd: int | None) -> int | None:
    """The `exit-code` bwrap wrote on its JSON status fd when its pid 1 ended (128 + signal
    for a signal), if it has."""
    if status_fd is None:
        return None
    data = bytearray()
    with contextlib.suppress(OSError):
        while chunk := os.read(status_fd, 4096):
            data += chunk
    found = re.search(rb'"exit-code"\s*:\s*(\d+)', bytes(data))
    return int(found.group(1)) if found else None


def _start_failure(process: subprocess.Popen[bytes], fallback: str) -> SandboxUnavailableError:
    """bwrap's own first error line (it writes `bwrap: ...` on stderr and exits)."""
    detail = fallback
    with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
        process.wait(timeout=5)
        if process.stderr is not None:
            os.set_blocking(process.stderr.fileno(), False)
            text = (process.stderr.read() or b"").decode(errors="replace").strip()
            if text:
                detail = text.splitlines()[0]
    return SandboxUnavailableError(f"bwrap could not start the sandbox: {detail}")


def _last_line(process: subprocess.Popen[bytes]) -> str:
    """The last line the sandbox wrote on its stderr (a crash of the exec service), if any."""
    if process.stderr is None or process.stderr.closed:
        return ""
    with contextlib.suppress(OSError, ValueError):
        os.set_blocking(process.stderr.fileno(), False)
        text = (process.stderr.read() or b"").decode(errors="replace").strip()
        return text.splitlines()[-1][:300] if text else ""
    return ""


def _kill_process(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_KILL_WAIT)


def _result(
    outcome: dict[str, Any], argv: list[str] | None, stdout: bytes, stderr: bytes
) -> RawResult:
    if "setup" in outcome and outcome.get("busy"):  # a kernel resource ran out: this exec only
        line = f"bwrap sandbox: cannot start the command: {outcome['setup']}\n"
        return RawResult(126, stdout, stderr + line.encode())
    if "setup" in outcome:
        raise SandboxUnavailableError(
            f"the bwrap sandbox could not prepare the command ({outcome['setup']})"
        )
    if "error" in outcome:
        code = int(outcome["error"])
        name = argv[0] if argv else "builtin"
        if code == errno.ENOENT:
            return RawResult(127, stdout, stderr + f"{name}: command not found\n".encode())
        raise ExecFailed(code, os.strerror(code), name)
    if "signal" in outcome:
        return RawResult(128 + int(outcome["signal"]), stdout, stderr)
    if outcome.get("killed"):
        return RawResult(137, stdout, stderr)
    return RawResult(int(outcome.get("code", 0)), stdout, stderr)


__all__ = [
    "ExecFailed",
    "RawResult",
    "SandboxGone",
    "SandboxSession",
    "StreamLimitExceeded",
    "WORKSPACE",
]
