"""Escape attempts through host-wide kernel pools and caches (issue 30, items 3 and 5).

AIO reserves from the host's `fs.aio-max-nr`; io_uring runs operations (a socket of a family
the filter denies, say) that no seccomp filter sees; `posix_fadvise(DONTNEED)` on a host file
seen through the overlay evicts the host's page cache (a timing channel between samples);
user xattrs on the sample's tmpfs are not counted in `max_disk_mb`.
"""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import textwrap
from pathlib import Path

import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

LIMITS = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=16, max_disk_mb=16)
pyseccomp = pytest.importorskip("pyseccomp", exc_type=ImportError)

#: (syscall, arguments) of every AIO and io_uring entry point; each must fail with EPERM.
ASYNC_IO_CALLS: list[tuple[str, list[object]]] = [
    ("io_setup", [16, "ctx"]),
    ("io_submit", [0, 0, 0]),
    ("io_getevents", [0, 0, 0, 0, 0]),
    ("io_pgetevents", [0, 0, 0, 0, 0, 0]),
    ("io_destroy", [0]),
    ("io_cancel", [0, 0, 0]),
    ("io_uring_setup", [8, "params"]),
    ("io_uring_enter", [0, 0, 0, 0, 0, 0]),
    ("io_uring_register", [0, 0, 0, 0]),
]

#: Runs the named calls ("ctx"/"params" become zeroed buffers), prints [name, result, errno].
SYSCALLS = textwrap.dedent(
    """
    import ctypes, json, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    out = []
    for name, number, args in json.loads(sys.stdin.read()):
        conv = [ctypes.create_string_buffer(256) if a in ("ctx", "params") else
                ctypes.c_long(a) for a in args]
        result = libc.syscall(number, *conv)
        out.append([name, result, ctypes.get_errno() if result == -1 else 0])
    print(json.dumps(out))
    """
)

#: io_uring by hand: a ring, one IORING_OP_SOCKET(AF_VSOCK, SOCK_STREAM) and its completion.
#: argv: io_uring_setup and io_uring_enter numbers. Prints {"setup": errno|0, "socket": res}.
URING_SOCKET = textwrap.dedent(
    """
    import ctypes, json, mmap, struct, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    SETUP, ENTER = int(sys.argv[1]), int(sys.argv[2])
    params = ctypes.create_string_buffer(120)
    ring = libc.syscall(SETUP, 8, params)
    if ring < 0:
        print(json.dumps({"setup": ctypes.get_errno(), "socket": None}))
        sys.exit(0)
    p = struct.unpack("<10I8IQ8IQ", params.raw[:120])
    sq_entries, cq_entries = p[0], p[1]
    sq_head, sq_tail, sq_mask, _, _, _, sq_array = p[10:17]
    cq_off = p[19:27]
    cq_head, cq_tail, cq_mask, cqes = cq_off[0], cq_off[1], cq_off[2], cq_off[5]
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    sq = mmap.mmap(ring, sq_array + sq_entries * 4, mmap.MAP_SHARED, prot, offset=0)
    cq = mmap.mmap(ring, cqes + cq_entries * 16, mmap.MAP_SHARED, prot, offset=0x8000000)
    sqes = mmap.mmap(ring, sq_entries * 64, mmap.MAP_SHARED, prot, offset=0x10000000)
    sqe = bytearray(64)
    struct.pack_into("<BBHiQ", sqe, 0, 45, 0, 0, 40, 1)  # IORING_OP_SOCKET, AF_VSOCK, STREAM
    sqes[0:64] = bytes(sqe)
    tail = struct.unpack_from("I", sq, sq_tail)[0]
    struct.pack_into("I", sq, sq_array + (tail & struct.unpack_from("I", sq, sq_mask)[0]) * 4, 0)
    struct.pack_into("I", sq, sq_tail, tail + 1)
    entered = libc.syscall(ENTER, ring, 1, 1, 1, None, 0)
    head = struct.unpack_from("I", cq, cq_head)[0]
    mask = struct.unpack_from("I", cq, cq_mask)[0]
    res = struct.unpack_from("Qi", cq, cqes + (head & mask) * 16)[1] if entered >= 0 else None
    print(json.dumps({"setup": 0, "socket": res}))
    """
)


def _number(name: str) -> int:
    return int(pyseccomp.resolve_syscall(pyseccomp.system_arch(), name))


@pytest.mark.escape(
    "AIO and io_uring: io_setup reserving the host's fs.aio-max-nr, io_submit/io_getevents/"
    "io_pgetevents/io_destroy/io_cancel, io_uring_setup/enter/register",
    "docket's default seccomp profile denies every AIO and io_uring syscall: EPERM",
)
async def test_every_aio_and_io_uring_syscall_is_denied() -> None:
    calls = json.dumps([[name, _number(name), args] for name, args in ASYNC_IO_CALLS])
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["python3", "-c", SYSCALLS], input=calls, timeout=60)
        outcomes = json.loads(result.stdout)
    assert [(n, r, e) for n, r, e in outcomes if (r, e) != (-1, errno.EPERM)] == []
    assert [n for n, _r, _e in outcomes] == [n for n, _a in ASYNC_IO_CALLS]


@pytest.mark.escape(
    "Create an AF_VSOCK socket through io_uring (IORING_OP_SOCKET), which a direct "
    "socket(AF_VSOCK) cannot",
    "io_uring_setup is denied (EPERM), so no ring exists to submit the operation on",
)
async def test_no_vsock_socket_through_io_uring() -> None:
    numbers = [str(_number("io_uring_setup")), str(_number("io_uring_enter"))]
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["python3", "-c", URING_SOCKET, *numbers], timeout=60)
        assert result.success, result.stderr
        direct = await sb.exec(["python3", "-c", "import socket; socket.socket(40, 1)"])
    assert json.loads(result.stdout) == {"setup": errno.EPERM, "socket": None}
    assert "Operation not permitted" in direct.stderr


# -- page cache ------------------------------------------------------------------------------


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]  # fmt: skip
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def _cached_pages(path: Path) -> tuple[int, int]:
    """(pages of `path` in the host's page cache, pages in all), by mincore on a mapping that
    is never touched (so the mapping itself faults nothing in)."""
    size = path.stat().st_size
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value)
        vector = ctypes.create_string_buffer(pages)
        try:
            assert _libc.mincore(address, size, vector) == 0
        finally:
            _libc.munmap(address, size)
    finally:
        os.close(fd)
    return sum(byte & 1 for byte in vector.raw), pages


#: Pages of the watched file the host's own memory reclaim may evict during the test.
RECLAIM_SLACK = 4


def _host_file() -> Path:
    """A host file under /usr that nothing maps (so DONTNEED could evict all of it)."""
    for candidate in sorted(Path("/usr/lib").glob("python3*/pydoc_data/topics.py")):
        if candidate.stat().st_size > 1 << 16:
            return candidate
    pytest.skip("no unmapped host file under /usr to watch")


FADVISE = (
    "import os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n"
    "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)\n"
    "print('advised')\n"
)


@pytest.mark.escape(
    "Evict the host's page cache of a /usr file through the overlay "
    "(posix_fadvise DONTNEED: a timing channel between samples)",
    "seccomp answers fadvise64(POSIX_FADV_DONTNEED) with success and does nothing",
)
async def test_fadvise_dontneed_leaves_the_host_page_cache_alone() -> None:
    path = _host_file()
    path.read_bytes()  # cache all of it
    before, pages = _cached_pages(path)
    assert before == pages
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["python3", "-c", FADVISE, str(path)])
    assert result.stdout == "advised\n", result.stderr
    # DONTNEED would drop every page; the kernel's own reclaim on a loaded host may drop one or
    # two of its 185 meanwhile, which is no timing channel an agent controls.
    cached, _ = _cached_pages(path)
    assert cached >= pages - RECLAIM_SLACK, (cached, pages)


# -- xattrs ------------------------------------------------------------------------------------

XATTRS = textwrap.dedent(
    """
    import errno, os, shutil
    open("f", "w").close()
    stored = 0
    try:
        for i in range(10000):
            os.setxattr("f", f"user.k{i}", b"x" * 4000)
            stored += 4000
        print("stored", stored)
    except OSError as ex:
        print("refused", errno.errorcode[ex.errno], stored)
    for call in (lambda: os.setxattr("f", "user.a", b"1", follow_symlinks=False),
                 lambda: os.setxattr(os.open("f", os.O_RDONLY), "user.a", b"1")):
        try:
            call()
        except OSError as ex:
            print(errno.errorcode[ex.errno])
    shutil.copy2("f", "g")  # copystat copies xattrs where there are any; none here
    print(os.listxattr("f"), os.path.exists("g"))
    """
)


@pytest.mark.escape(
    "Store data past max_disk_mb in user.* xattrs on the sample's tmpfs (40 MB at max_disk_mb=16)",
    "seccomp refuses setxattr/lsetxattr/fsetxattr with ENOTSUP (no xattrs on the sample's disk)",
)
async def test_xattrs_cannot_store_data_past_max_disk_mb() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["python3", "-c", XATTRS], timeout=120)
        copied = await sb.exec(["sh", "-c", "echo a > s && cp -a s t && tar cf x.tar s t && cat t"])
    assert result.stdout.splitlines() == [
        "refused ENOTSUP 0", "ENOTSUP", "ENOTSUP", "[] True",
    ], result.stderr  # fmt: skip
    assert copied.success and copied.stdout == "a\n" and copied.stderr == ""
