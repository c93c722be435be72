"""Escape attempts (v3) on the kernel's per-uid pools: one sample starves another.

The kernel counts some limits per host uid, whatever the namespaces. Sample A exhausts one pool
(and keeps it exhausted from a lingering exec); sample B, running at the same time, must still
`exec`, `write_file` and use that very pool itself, and A's own exec service must live on.
Each sample runs as a host uid of its own (`host_uid_range`), so these need docket to run as
root; as non-root they are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import (
    LINGERING_ATTACK,
    bwrap_sandbox,
    lingering,
    requires_own_uids,
)

pytestmark = requires_own_uids

LIMITS = BwrapConfig(memory_mb=512, max_processes=64, max_file_size_mb=4)
EPOLL_SYSCTL = Path("/proc/sys/fs/epoll/max_user_watches")
#: Watches sample A may add while the test lowers fs.epoll.max_user_watches to this many more
#: than any uid already holds (restored right after).
EPOLL_HEADROOM = 10_000

#: Sample A: exhaust the pool (`exhaust()` says how far it got), say so in /tmp/ready, linger.
_ATTACK = LINGERING_ATTACK

ATTACKS = {
    "unix_fds": """
import array, socket
def exhaust():
    fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(250)]
    payload = array.array("i", fds).tobytes()
    sent = 0
    while True:
        a, b = socket.socketpair()
        held.append((a, b))
        a.setblocking(False)
        try:
            while True:
                a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, payload)])
                sent += len(fds)
        except BlockingIOError:
            continue
        except OSError as ex:
            return fail(ex.errno, sent)
""",
    "epoll": """
import select
def exhaust():
    fds = [os.pipe()[0] for _ in range(100)]
    added = 0
    while True:
        ep = select.epoll()
        held.append(ep)
        for fd in fds:
            try:
                ep.register(fd, select.EPOLLIN)
            except OSError as ex:
                return fail(ex.errno, added)
            added += 1
""",
    "inotify": """
def exhaust():
    made = 0
    while True:
        if libc.inotify_init1(0) < 0:
            return fail(ctypes.get_errno(), made)
        made += 1
""",
    "pipe_pages": """
import fcntl
def exhaust():
    grown = 0
    while True:
        r, w = os.pipe()
        held.append((r, w))
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: 256 pages
        except OSError as ex:
            return fail(ex.errno, grown)
        grown += 1
""",
    "signals": """
import signal, threading
def exhaust():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
    queued = 0
    me = threading.get_ident()
    while True:
        try:
            signal.pthread_kill(me, signal.SIGRTMIN)  # tgkill: queued, counted per uid
        except OSError as ex:
            return fail(ex.errno, queued)
        queued += 1
""",
}

#: Sample B: use the same pool once; prints `ok <detail>`.
CHECKS = {
    "unix_fds": """
import array, socket
a, b = socket.socketpair()
a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0]).tobytes())])
print("ok sent")
""",
    "epoll": """
import os, select
ep = select.epoll()
ep.register(os.pipe()[0], select.EPOLLIN)
print("ok registered")
""",
    "inotify": """
import ctypes, os
fd = ctypes.CDLL(None, use_errno=True).inotify_init1(0)
print("ok" if fd >= 0 else "failed", os.strerror(ctypes.get_errno()) if fd < 0 else "made")
""",
    "pipe_pages": """
import fcntl, os
r, w = os.pipe()
before = fcntl.fcntl(w, 1032)  # F_GETPIPE_SZ
print("ok", before, fcntl.fcntl(w, 1031, 1 << 20))
""",
    "signals": """
import signal, threading
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
signal.pthread_kill(threading.get_ident(), signal.SIGRTMIN)
print("ok", signal.SIGRTMIN in signal.sigpending())
""",
}

EXPECTED_CHECK = {
    "unix_fds": "ok sent\n",
    "epoll": "ok registered\n",
    "inotify": "ok made\n",
    "pipe_pages": "ok 65536 1048576\n",
    "signals": "ok True\n",
}


def attack_script(pool: str) -> str:
    """Sample A's lingering attack on `pool`."""
    return _ATTACK.replace("{body}", textwrap.dedent(ATTACKS[pool]))


def _epoll_watches_by_uid() -> dict[int, int]:
    """Epoll watches each uid holds now (tfd lines of every epoll fd's fdinfo)."""
    found: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            status = Path(f"/proc/{entry.name}/status").read_text()
            uid = int(status.split("Uid:")[1].split()[0])
            for info in os.scandir(f"/proc/{entry.name}/fdinfo"):
                with contextlib.suppress(OSError):
                    watches = Path(info.path).read_text().count("tfd:")
                    found[uid] = found.get(uid, 0) + watches
    return found


@contextlib.contextmanager
def low_epoll_limit() -> Iterator[int]:
    """fs.epoll.max_user_watches lowered to EPOLL_HEADROOM above the busiest uid, restored."""
    original = EPOLL_SYSCTL.read_text().strip()
    limit = max(_epoll_watches_by_uid().values(), default=0) + EPOLL_HEADROOM
    try:
        EPOLL_SYSCTL.write_text(str(limit))
    except OSError as ex:
        pytest.skip(f"cannot lower fs.epoll.max_user_watches here: {ex}")
    try:
        yield limit
    finally:
        EPOLL_SYSCTL.write_text(original)


@contextlib.asynccontextmanager
async def exhausted(pool: str, sample_a: BwrapSandboxEnvironment) -> AsyncIterator[str]:
    """`pool` exhausted by a lingering exec of sample A (ended on exit); yields its report."""
    async with lingering(sample_a, attack_script(pool), pool) as report:
        yield report


@contextlib.asynccontextmanager
async def two_samples() -> AsyncIterator[tuple[BwrapSandboxEnvironment, BwrapSandboxEnvironment]]:
    """Samples A and B, alive at the same time."""
    async with bwrap_sandbox(LIMITS) as sample_a, bwrap_sandbox(LIMITS) as sample_b:
        yield sample_a, sample_b


async def _sample_b_still_works(pool: str, sample_b: BwrapSandboxEnvironment) -> None:
    check = await sample_b.exec(["python3", "-c", textwrap.dedent(CHECKS[pool])])
    assert (check.returncode, check.stdout, check.stderr) == (0, EXPECTED_CHECK[pool], "")
    await sample_b.write_file("note.txt", f"written while {pool} was exhausted")
    assert await sample_b.read_file("note.txt") == f"written while {pool} was exhausted"


def _prefix_and_count(report: str) -> tuple[str, int]:
    name, _, count = report.partition(" after ")
    return name, int(count)


@pytest.mark.escape(
    "Starve another sample of fds in flight over unix sockets (RLIMIT_NOFILE per uid)",
    "each concurrent sample runs as a host uid of its own (host_uid_range), its commands "
    "under max_open_files; its exec service may hold 1024 more, so its next exec still runs",
)
async def test_unix_fds_in_flight_are_per_sample() -> None:
    async with two_samples() as (sample_a, sample_b):
        async with exhausted("unix_fds", sample_a) as report:
            name, sent = _prefix_and_count(report)
            assert name == "ETOOMANYREFS"
            # the kernel refuses once more than max_open_files are in flight (250 a message)
            assert LIMITS.max_open_files < sent <= LIMITS.max_open_files + 250
            await _sample_b_still_works("unix_fds", sample_b)
            # A's own service, allowed more open files than its commands, still passes pipes
            own = await sample_a.exec(["echo", "alive"])
            assert (own.returncode, own.stdout, own.stderr) == (0, "alive\n", "")


@pytest.mark.escape(
    "Starve another sample's exec service of epoll watches (fs.epoll.max_user_watches per uid)",
    "a host uid of its own per sample; the exec service uses poll(2), not epoll",
)
async def test_epoll_watches_are_per_sample() -> None:
    with low_epoll_limit() as limit:
        async with two_samples() as (sample_a, sample_b), exhausted("epoll", sample_a) as report:
            name, added = _prefix_and_count(report)
            assert name == "ENOSPC" and limit - 256 <= added <= limit
            await _sample_b_still_works("epoll", sample_b)
            own = await sample_a.exec(["echo", "alive"])  # A's own service needs no watch
            assert (own.returncode, own.stdout) == (0, "alive\n")


@pytest.mark.escape(
    "Starve another sample of inotify instances (fs.inotify.max_user_instances per uid)",
    "each concurrent sample runs as a host uid of its own (host_uid_range)",
)
async def test_inotify_instances_are_per_sample() -> None:
    allowed = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    async with two_samples() as (sample_a, sample_b), exhausted("inotify", sample_a) as report:
        assert report == f"EMFILE after {allowed}"
        await _sample_b_still_works("inotify", sample_b)
        assert (await sample_a.exec(["echo", "alive"])).stdout == "alive\n"


@pytest.mark.escape(
    "Shrink another sample's pipes (fs.pipe-user-pages-soft per uid)",
    "each concurrent sample runs as a host uid of its own (host_uid_range)",
)
async def test_pipe_pages_are_per_sample() -> None:
    soft = int(Path("/proc/sys/fs/pipe-user-pages-soft").read_text())
    async with two_samples() as (sample_a, sample_b), exhausted("pipe_pages", sample_a) as report:
        name, grown = _prefix_and_count(report)
        # 256 pages a pipe; the service's own few pipes (16 pages each) count too
        assert name == "EPERM" and soft // 256 - 2 <= grown <= soft // 256
        await _sample_b_still_works("pipe_pages", sample_b)
        assert (await sample_a.exec(["echo", "alive"])).stdout == "alive\n"


@pytest.mark.escape(
    "Starve another sample of queued signals (RLIMIT_SIGPENDING per uid)",
    "each concurrent sample runs as a host uid of its own (host_uid_range)",
)
async def test_queued_signals_are_per_sample() -> None:
    pending = LIMITS.max_pending_signals
    async with two_samples() as (sample_a, sample_b), exhausted("signals", sample_a) as report:
        assert report == f"EAGAIN after {pending}"
        await _sample_b_still_works("signals", sample_b)
        assert (await sample_a.exec(["echo", "alive"])).stdout == "alive\n"


async def test_concurrent_samples_run_as_distinct_host_uids() -> None:
    async with bwrap_sandbox(LIMITS) as one, bwrap_sandbox(LIMITS) as two:
        uids = {sb.uid.uid if sb.uid else None for sb in (one, two)}
        first, last = LIMITS.host_uid_range
        assert len(uids) == 2 and all(uid is not None and first <= uid <= last for uid in uids)
        for sb in (one, two):  # the host sees the sandbox's pid 1 as that uid
            status = Path(f"/proc/{sb.session.child_pid}/status").read_text()
            real = int(status.split("Uid:")[1].split()[0])
            assert sb.uid is not None and real == sb.uid.uid
