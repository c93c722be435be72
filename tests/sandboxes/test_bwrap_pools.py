"""Every host-wide pool a bwrap sample can draw from has a per-sample bound (issue 52 item 3).

Per pool: sample A takes all it can from a lingering exec and stops exactly at its bound;
sample B, alive at the same time, still draws from the same pool. Samples lease host uids of
their own as root (the per-uid pools), so these run as root only.
"""

from __future__ import annotations

import contextlib
import os
import resource
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import yaml
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import bash_session
from inspect_ai.util import SandboxEnvironmentSpec, SandboxUnavailableError, sandbox

from docket.sandboxes.bwrap.cgroup import detect
from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.rlimits import SERVICE_FILES, SERVICE_TASKS
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import (
    LINGERING_ATTACK,
    bwrap_sandbox,
    lingering,
    requires_own_uids,
)

pytestmark = requires_own_uids

#: Small, distinct bounds, so each test can reach its own quickly and tell them apart.
MAX_PROCESSES = 32
POOLS = BwrapConfig(
    memory_mb=512,
    max_processes=MAX_PROCESSES,
    max_file_size_mb=3,
    max_open_files=200,
    max_locked_memory_kb=64,
    max_pending_signals=96,
    max_msgqueue_kb=80,
    max_file_locks=70,
)

ATTACKS = {
    "open_files": """
def exhaust():
    while True:
        try:
            held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as ex:
            report = fail(ex.errno, max(held) + 1)  # fds 0..max in use
            os.close(held.pop())  # one free, to write /tmp/ready
            return report
""",
    "processes": """
def exhaust():
    while True:
        try:
            pid = os.fork()
        except OSError as ex:
            return fail(ex.errno, len(held))
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        held.append(pid)
""",
    "locked_memory": """
def exhaust():
    while True:
        page = mmap.mmap(-1, mmap.PAGESIZE)
        held.append(page)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        if libc.mlock(ctypes.c_void_p(address), ctypes.c_size_t(mmap.PAGESIZE)) != 0:
            return fail(ctypes.get_errno(), (len(held) - 1) * mmap.PAGESIZE // 1024)
""",
    "message_queues": """
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long),
                ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(Attr)]
def exhaust():
    attr = Attr(0, 1, 8192, 0)
    while True:
        fd = libc.mq_open(f"/q{len(held)}".encode(), os.O_CREAT | os.O_RDWR, 0o600, attr)
        if fd < 0:
            return fail(ctypes.get_errno(), len(held))
        held.append(fd)
""",
    "queued_signals": """
import signal, threading
def exhaust():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
    me = threading.get_ident()
    while True:
        try:
            signal.pthread_kill(me, signal.SIGRTMIN)  # tgkill: queued, counted per sample
        except OSError as ex:
            return fail(ex.errno, len(held))
        held.append(1)
""",
    "posix_timers": """
def exhaust():
    while True:
        timer = ctypes.c_void_p()
        if libc.timer_create(1, None, ctypes.byref(timer)) != 0:  # CLOCK_MONOTONIC, SIGALRM
            return fail(ctypes.get_errno(), len(held))
        held.append(timer)
""",
    "inotify_watches": """
def exhaust():
    os.makedirs("/tmp/watched", exist_ok=True)
    files = []
    for index in range(2000):
        path = f"/tmp/watched/{index}"
        open(path, "w").close()
        files.append(path.encode())
    while True:
        instance = libc.inotify_init1(0)
        if instance < 0:
            return fail(ctypes.get_errno(), len(held)) + " (instances)"
        for path in files:
            if libc.inotify_add_watch(instance, path, 2) < 0:  # IN_MODIFY
                return fail(ctypes.get_errno(), len(held))
            held.append(1)
""",
    "mapped_files": """
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
def exhaust():
    with open("/tmp/mapped", "wb") as out:
        out.write(bytes(4096))
    while True:
        fd = os.open("/tmp/mapped", os.O_RDONLY)
        address = libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        code = ctypes.get_errno()
        os.close(fd)  # the mapping keeps its file (a handle) without an fd
        if address in (None, ctypes.c_void_p(-1).value):
            return fail(code, len(held))
        held.append(address)
""",
    "sysv_shm": """
def exhaust():
    while True:
        if libc.shmget(0, 4096, 0o1600) < 0:  # IPC_PRIVATE, IPC_CREAT | 0600
            return fail(ctypes.get_errno(), len(held))
        held.append(1)
""",
}

#: B: use the same pool once; prints `ok`.
CHECKS = {
    "open_files": "import os; [os.open('/dev/null', os.O_RDONLY) for _ in range(150)]",
    "processes": "import os; pids = [os.fork() or os._exit(0) for _ in range(20)]",
    "locked_memory": (
        "import ctypes, mmap; page = mmap.mmap(-1, 4096); libc = ctypes.CDLL(None);"
        "address = ctypes.addressof(ctypes.c_char.from_buffer(page));"
        "assert libc.mlock(ctypes.c_void_p(address), ctypes.c_size_t(4096)) == 0"
    ),
    "message_queues": (
        "import ctypes, os; libc = ctypes.CDLL(None); attr = (ctypes.c_long * 8)(0, 1, 8192);"
        "assert libc.mq_open(b'/q0', os.O_CREAT | os.O_RDWR, 0o600, attr) >= 0"
    ),
    "queued_signals": (
        "import signal, threading; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN]);"
        "signal.pthread_kill(threading.get_ident(), signal.SIGRTMIN);"
        "assert signal.SIGRTMIN in signal.sigpending()"
    ),
    "posix_timers": (
        "import ctypes; t = ctypes.c_void_p();"
        "assert ctypes.CDLL(None).timer_create(1, None, ctypes.byref(t)) == 0"
    ),
    "sysv_shm": "import ctypes; assert ctypes.CDLL(None).shmget(0, 4096, 0o1600) >= 0",
    "inotify_watches": (
        "import ctypes; libc = ctypes.CDLL(None); instance = libc.inotify_init1(0);"
        "assert libc.inotify_add_watch(instance, b'/tmp', 2) >= 0"
    ),
    "mapped_files": (
        "import mmap, os; open('/tmp/m', 'wb').write(bytes(4096)); fd = os.open('/tmp/m', 0);"
        "maps = [mmap.mmap(fd, 4096, prot=mmap.PROT_READ) for _ in range(100)]"
    ),
}

WATCHES = "/proc/sys/fs/inotify/max_user_watches"
#: Where A must stop: exactly its bound (the number after "after").
EXPECTED = {
    # fds 0..199: RLIMIT_NOFILE = max_open_files
    "open_files": f"EMFILE after {POOLS.max_open_files}",
    # 64 KiB of RLIMIT_MEMLOCK, page by page
    "locked_memory": f"ENOMEM after {POOLS.max_locked_memory_kb}",
    # 80 KiB of RLIMIT_MSGQUEUE: each queue costs its 8 KiB message plus the kernel's bookkeeping
    # (under 1 KiB), so 9 fit and the 10th does not
    "message_queues": "EMFILE after 9",
    # RLIMIT_SIGPENDING counts queued signals and armed timers of the whole sample
    "queued_signals": f"EAGAIN after {POOLS.max_pending_signals}",
    "posix_timers": f"EAGAIN after {POOLS.max_pending_signals}",
    # fs.inotify.max_user_watches, counted for the sample's own host uid
    "inotify_watches": f"ENOSPC after {int(Path(WATCHES).read_text())}",
    # kernel.shmmni of the sample's own IPC namespace
    "sysv_shm": f"ENOSPC after {int(Path('/proc/sys/kernel/shmmni').read_text())}",
}


def attack_script(pool: str) -> str:
    """Sample A's lingering attack on `pool`."""
    return LINGERING_ATTACK.replace("{body}", textwrap.dedent(ATTACKS[pool]))


@contextlib.asynccontextmanager
async def two_samples() -> AsyncIterator[tuple[BwrapSandboxEnvironment, BwrapSandboxEnvironment]]:
    """Samples A and B, alive at the same time."""
    async with bwrap_sandbox(POOLS) as sample_a, bwrap_sandbox(POOLS) as sample_b:
        yield sample_a, sample_b


async def _still_works(pool: str, sb: BwrapSandboxEnvironment) -> None:
    check = await sb.exec(["python3", "-c", CHECKS[pool] + "; print('ok')"])
    assert (check.returncode, check.stdout, check.stderr) == (0, "ok\n", "")


@pytest.mark.parametrize("pool", sorted(EXPECTED))
async def test_a_sample_stops_at_its_bound_and_another_keeps_the_pool(pool: str) -> None:
    async with two_samples() as (sample_a, sample_b):
        async with lingering(sample_a, attack_script(pool), pool) as report:
            assert report == EXPECTED[pool]
            await _still_works(pool, sample_b)
            assert (await sample_a.exec(["echo", "alive"])).stdout == "alive\n"


async def test_tasks_stop_at_max_processes_and_another_sample_forks() -> None:
    async with two_samples() as (sample_a, sample_b):
        async with lingering(sample_a, attack_script("processes"), "processes") as report:
            # the agent's pids.max: the python process itself is one of the 32
            assert report == f"EAGAIN after {MAX_PROCESSES - 1}"
            await _still_works("processes", sample_b)
            assert (await sample_a.exec(["echo", "alive"])).stdout == "alive\n"


async def test_mapped_files_stop_at_the_map_count_and_another_sample_maps() -> None:
    """A mapping keeps its file after the fd is closed: per process, vm.max_map_count bounds
    these handles, not max_open_files (and in all, the memory cgroup: about 400 bytes each)."""
    maps = int(Path("/proc/sys/vm/max_map_count").read_text())
    async with two_samples() as (sample_a, sample_b):
        before = _files_in_use()
        async with lingering(sample_a, attack_script("mapped_files"), "mapped files") as report:
            taken = _files_in_use() - before
            errno_name, _, count = report.partition(" after ")
            # python itself holds a few hundred mappings of its own
            assert errno_name == "ENOMEM" and maps - 400 <= int(count) < maps
            assert int(count) - FILE_NR_MARGIN <= taken <= int(count) + FILE_NR_MARGIN
            await _still_works("mapped_files", sample_b)


def _limits(pid: int | str) -> dict[str, tuple[str, str]]:
    """/proc/PID/limits: name -> (soft, hard)."""
    found: dict[str, tuple[str, str]] = {}
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]:
        name, soft, hard = line[:26].strip(), *line[26:].split()[:2]
        found[name] = (soft, hard)
    return found


#: /proc/PID/limits names -> what every command of a POOLS sample runs under (soft = hard).
COMMAND_LIMITS = {
    "Max open files": str(POOLS.max_open_files),
    # with a cgroup, the sample's whole count (its pids.max), so the agent's pids.max binds
    "Max processes": str(MAX_PROCESSES + (SERVICE_TASKS if detect().available else 0)),
    "Max locked memory": str(POOLS.max_locked_memory_kb << 10),
    "Max pending signals": str(POOLS.max_pending_signals),
    "Max msgqueue size": str(POOLS.max_msgqueue_kb << 10),
    "Max file locks": str(POOLS.max_file_locks),
    "Max file size": str(3 << 20),
    "Max address space": str(512 << 20),
    "Max core file size": "1",
    "Max nice priority": "0",
    "Max realtime priority": "0",
}


async def test_every_process_of_a_sample_runs_under_explicit_limits() -> None:
    async with bwrap_sandbox(POOLS) as sb:
        result = await sb.exec(["cat", "/proc/self/limits"])
        assert result.returncode == 0
        own = {name: _limits_line(result.stdout, name) for name in COMMAND_LIMITS}
        assert own == {name: (value, value) for name, value in COMMAND_LIMITS.items()}
        # the exec service, its namespace inits and its spare command (which the service
        # makes after it hands this exec its request: on a busy machine the exec can end first)
        deadline = time.monotonic() + 10
        while len(_over_the_ceiling(sb)) < 3 and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        assert len(_over_the_ceiling(sb)) >= 3


def _over_the_ceiling(sb: BwrapSandboxEnvironment) -> list[str]:
    """The sample's processes, seen from the host (asserting that none has a limit above the
    exec service's): every process of its host uid but bwrap's own outside its namespaces,
    which runs nothing of the agent."""
    assert sb.uid is not None
    sample = [
        entry.name
        for entry in os.scandir("/proc")
        if entry.name.isdigit()
        and _real_uid(entry.name) == sb.uid.uid
        and entry.name != str(sb.session.process.pid)
    ]
    assert str(sb.session.child_pid) in sample
    ceiling = {
        **COMMAND_LIMITS,
        "Max open files": str(POOLS.max_open_files + SERVICE_FILES),
        "Max processes": str(MAX_PROCESSES + SERVICE_TASKS),
    }
    for pid in sample:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            limits = _limits(pid)
            for name, value in ceiling.items():
                if name in ("Max file size", "Max address space"):
                    continue  # the service unpacks Inspect's tools; its cgroup bounds it
                soft, hard = limits[name]
                assert hard != "unlimited" and int(hard) <= int(value), (pid, name, hard)
                assert soft == hard, (pid, name)
    return sample


@solver
def _limits_through_the_tool_server() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        shell = bash_session()
        seen = await shell(action="type_submit", input="cat /proc/self/limits")
        env = sandbox().as_type(BwrapSandboxEnvironment)
        state.metadata["seen"] = str(seen)
        state.metadata["processes"] = len(_over_the_ceiling(env))
        return state

    return solve


def test_the_tool_server_and_its_shells_run_under_the_same_limits(tmp_path: Path) -> None:
    # Inspect unpacks its tool bundle with an exec of the agent's: files of more than 3 MiB
    tools = POOLS.model_copy(update={"max_file_size_mb": 64})
    config = tmp_path / "bwrap.yaml"
    config.write_text(yaml.safe_dump(tools.model_dump(mode="json", exclude_defaults=True)))
    task = Task(
        dataset=[Sample(input="go")],
        solver=_limits_through_the_tool_server(),
        sandbox=SandboxEnvironmentSpec("bwrap", str(config)),
    )
    [log] = eval(task, model=get_model("docket/scripted", policy="refuse"), log_dir=str(tmp_path))
    assert log.status == "success", log.error
    [sample] = log.samples or []
    assert sample.error is None, sample.error
    seen = sample.metadata["seen"]
    expected = {**COMMAND_LIMITS, "Max file size": str(64 << 20)}
    own = {name: _limits_line(seen, name) for name in expected}
    assert own == {name: (value, value) for name, value in expected.items()}
    # the service, its spare, and the tool server's namespace: its init, server, shell, cat
    assert sample.metadata["processes"] >= 6


def _limits_line(text: str, name: str) -> tuple[str, str]:
    [line] = [line for line in text.splitlines() if line.startswith(name + " ")]
    soft, hard = line[26:].split()[:2]
    return soft, hard


def _real_uid(pid: str) -> int | None:
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
    return None


RAISE = """
import resource, sys
ceilings = {ceilings}
for name, ceiling in ceilings.items():
    number = getattr(resource, "RLIMIT_" + name)
    soft, hard = resource.getrlimit(number)
    for target, value in ((0, hard + 1), (1, ceiling + 1)):  # itself; its namespace init
        try:
            resource.prlimit(target, number, (value, value))
            print(name, "raised on", target or "itself")
        except (ValueError, OSError):
            pass
print("done")
"""


async def test_the_agent_cannot_raise_a_hard_limit() -> None:
    async with bwrap_sandbox(POOLS) as sb:
        ceilings = {  # the exec service's own (its namespace inits inherit them)
            "NOFILE": POOLS.max_open_files + SERVICE_FILES,
            "NPROC": MAX_PROCESSES + SERVICE_TASKS,
            "MEMLOCK": POOLS.max_locked_memory_kb << 10,
            "SIGPENDING": POOLS.max_pending_signals,
            "MSGQUEUE": POOLS.max_msgqueue_kb << 10,
            "CORE": 1,
            "RTPRIO": 0,
            "NICE": 0,
        }
        result = await sb.exec(["python3", "-c", RAISE.replace("{ceilings}", repr(ceilings))])
        assert (result.returncode, result.stdout, result.stderr) == (0, "done\n", "")


#: Attack E (issue 52): 8 processes each open files until the kernel refuses, then hold them.
ATTACK_E = """
import os, time
def take():
    held = []
    while True:
        try:
            held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            return held
children = []
for _ in range(8):
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in [reader, *children]:
            os.close(fd)
        held = take()
        os.close(held.pop())  # room for the report
        os.write(writer, str(len(held) + 1).encode())
        time.sleep(60)
        os._exit(0)
    os.close(writer)
    children.append(reader)
total = sum(int(os.read(reader, 64)) for reader in children)
with open("/tmp/ready.tmp", "w") as out:
    out.write(str(total))
os.rename("/tmp/ready.tmp", "/tmp/ready")
time.sleep(60)
"""
#: What file-nr may move by beyond the attack's own files: each of the 9 python processes maps
#: about 20 files (its libraries, held without an fd), and the shared host's other work opens
#: and closes files meanwhile (its counter is also per-CPU, read approximately).
FILE_NR_MARGIN = 2048


def _files_in_use() -> int:
    return int(Path("/proc/sys/fs/file-nr").read_text().split()[0])


async def test_attack_e_many_processes_cannot_take_the_hosts_file_handles() -> None:
    defaults = BwrapConfig()
    async with bwrap_sandbox(defaults) as sample_a, bwrap_sandbox(defaults) as sample_b:
        before = _files_in_use()
        async with lingering(sample_a, ATTACK_E, "file handles") as report:
            taken = _files_in_use() - before
            # each process stopped at fds 0..1023 (it had 0, 1, 2 and its pipe's end already)
            assert int(report) == 8 * (defaults.max_open_files - 4)
            assert taken <= 8 * defaults.max_open_files + FILE_NR_MARGIN, taken
            await _still_works("open_files", sample_b)


async def test_fanotify_groups_are_denied() -> None:
    # FAN_REPORT_FID: the one kind an unprivileged process may ask the kernel for (5.13+)
    script = (
        "import ctypes, errno; libc = ctypes.CDLL(None, use_errno=True);"
        "print(libc.fanotify_init(0x200, 0), errno.errorcode[ctypes.get_errno()])"
    )
    async with bwrap_sandbox(POOLS) as sb:
        result = await sb.exec(["python3", "-c", script])
        assert (result.returncode, result.stdout) == (0, "-1 EPERM\n")


#: A: loopback TCP connections whose sends nobody reads, until the kernel stops queueing (or
#: 300 MiB, 60 connections); says how many MiB it queued.
TCP_BUFFERS = """
import socket, time
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(256)
held, queued, chunk = [], 0, bytes(1 << 20)
while queued < (300 << 20) and len(held) < 60:
    a = socket.create_connection(server.getsockname())
    b, _ = server.accept()
    a.setblocking(False)
    held.append((a, b))
    try:
        while True:
            queued += a.send(chunk)
    except BlockingIOError:
        pass
with open("/tmp/ready.tmp", "w") as out:
    out.write(str(queued >> 20))
import os
os.rename("/tmp/ready.tmp", "/tmp/ready")
time.sleep(60)
"""
#: A: 60 UDP receivers that never read (8 MiB buffers each), flooded; says how many MiB the
#: kernel holds for UDP then (/proc/net/sockstat: the host's count, in pages).
UDP_BUFFERS = """
import os, socket, time
held = []
for _ in range(60):
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setblocking(False)
    held.append((receiver, sender))
    for _ in range(300):
        try:
            sender.sendto(bytes(60000), receiver.getsockname())
        except OSError:
            break
udp = next(line for line in open("/proc/net/sockstat") if line.startswith("UDP:"))
with open("/tmp/ready.tmp", "w") as out:
    out.write(str(int(udp.split()[-1]) * 4096 >> 20))
os.rename("/tmp/ready.tmp", "/tmp/ready")
time.sleep(60)
"""
TCP_CHECK = """
import socket
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
a = socket.create_connection(server.getsockname()); b, _ = server.accept()
a.sendall(bytes(1 << 20)); got = 0
while got < 1 << 20:
    got += len(b.recv(1 << 20))
print("ok")
"""


#: Past memory_mb (cgroup v2: memory.max; v1: memory.kmem.tcp.limit_in_bytes) every socket is
#: under memory pressure. TCP: each connection still queues its minimum (tens of KiB; at most
#: 60 x 0.2 MiB). UDP: the kernel drops what it cannot charge; the host's other UDP sockets
#: hold a few pages (4 MiB of margin). With no bound: the 300 MiB cap, and 60 x 8 MiB.
SOCKETS = {"tcp": (TCP_BUFFERS, 12), "udp": (UDP_BUFFERS, 4)}


@pytest.mark.skipif(not detect().available, reason=f"no usable cgroup: {detect().reason}")
@pytest.mark.parametrize("kind", sorted(SOCKETS))
async def test_socket_buffers_count_in_the_samples_memory(kind: str) -> None:
    script, margin = SOCKETS[kind]
    small = POOLS.model_copy(update={"memory_mb": 64})
    async with bwrap_sandbox(small) as sample_a, bwrap_sandbox(POOLS) as sample_b:
        async with lingering(sample_a, script, f"{kind} buffers") as report:
            assert int(report) <= 64 + margin, report
            result = await sample_b.exec(["python3", "-c", TCP_CHECK])
            assert (result.returncode, result.stdout) == (0, "ok\n")


async def test_a_limit_above_the_evaluators_hard_limit_is_one_line_at_start() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or hard >= 1 << 20:
        pytest.skip(f"the evaluator's hard RLIMIT_NOFILE ({hard}) leaves no room above it")
    with pytest.raises(SandboxUnavailableError) as raised:
        async with bwrap_sandbox(POOLS.model_copy(update={"max_open_files": hard + 1})):
            pass
    assert str(raised.value) == (
        f"bwrap could not start the sandbox: ValueError: cannot set RLIMIT_NOFILE to {hard + 1}: "
        f"the hard limit docket runs under is {hard} (lower the sandbox option, or raise the "
        "evaluator's hard limit)"
    )
