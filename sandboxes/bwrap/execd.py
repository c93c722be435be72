"""docket's exec service: pid 1 of a bwrap sandbox, run there by the sandbox's own `python3`.

Standard library only (it runs on the system python inside the sandbox, never imports docket).
The host imports this module too, for the message framing (`encode`, `read_message`).

Channel: a unix stream socket whose other end only docket holds (fd number in argv[1]). Every
message is a 4-byte big-endian length and a UTF-8 JSON object; an exec request carries its
stdin/stdout/stderr pipe ends as SCM_RIGHTS. The service answers `ready`, then one `exit` per
exec with the status the kernel reported (never parsed from the command's output).

Per exec: the service forks a helper that unshares a new pid namespace and forks that
namespace's init; the init forks the command. Where the host built `execinit.c` (the init
message names it), the service spawns that native helper instead, which takes the same steps
with the same status lines: no copy of this interpreter per exec (`native_config` and
`native_request` are what it reads). The command drops every capability, gets
`no_new_privs`, rlimits and the seccomp programs, then `execve`s. When the command ends, its
init exits and the kernel kills whatever is left in the namespace before the init is reaped,
so `exit` is only sent once nothing the command started is alive ("detached" execs, used for
Inspect's tool-support server, keep their namespace until the sandbox ends; the service grants
a detached request only to the launcher it sealed, see `seal_tools`).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal.signal without its enum wrapper
import ctypes
import errno
import fcntl
import gc
import json
import os
import resource
import select
import selectors
import signal
import socket
import stat
import struct
import sys
from typing import Any

MAX_MESSAGE = 64 << 20
_HEADER = struct.Struct(">I")
_ENCODER = json.JSONEncoder(separators=(",", ":"))  # json.dumps builds one per call otherwise
_FDS_PER_MESSAGE = 3

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 38, 22
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_CAPBSET_DROP = 47, 4, 24
SECCOMP_MODE_FILTER = 2
KEYCTL_JOIN_SESSION_KEYRING = 1
_KEYCTL = {"x86_64": 250, "aarch64": 219}
_CAPABILITY_VERSION_3 = 0x20080522

#: Exit codes of a builtin file operation (a failure's reason travels on stderr as JSON).
BUILTIN_FAILED = 3
FILE_TOO_LARGE = 4


# -- framing (shared with the host) ----------------------------------------------------------


def encode(message: dict[str, Any]) -> bytes:
    """One framed message."""
    body = _ENCODER.encode(message).encode()
    return _HEADER.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    """Body length announced by a 4-byte header (ValueError when implausible)."""
    (length,) = _HEADER.unpack(header)
    if length > MAX_MESSAGE:
        raise ValueError(f"message of {length} bytes is over the {MAX_MESSAGE} limit")
    return length


def _recv_exact(sock: socket.socket, size: int, fds: list[int]) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk, ancillary, _flags, _addr = sock.recvmsg(
            size - len(data), socket.CMSG_SPACE(_FDS_PER_MESSAGE * 4)
        )
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds.extend(struct.unpack(f"{usable // 4}i", payload[:usable]))
        if not chunk:
            raise EOFError("channel closed")
        data += chunk
    return bytes(data)


def read_message(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """Block until one whole message (and the fds sent with it) has arrived."""
    fds: list[int] = []
    length = frame_length(_recv_exact(sock, _HEADER.size, fds))
    message = json.loads(_recv_exact(sock, length, fds))
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    return message, fds


def send_message(sock: socket.socket, message: dict[str, Any], fds: list[int] = ()) -> None:  # type: ignore[assignment]
    """Send one message, with `fds` attached to its first byte."""
    data = encode(message)
    sent = sock.sendmsg(
        [data],
        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else [],
    )
    if sent < len(data):
        sock.sendall(data[sent:])


# -- kernel interfaces -----------------------------------------------------------------------


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _bounding_set() -> list[int]:
    """Capabilities in this process's bounding set (CAP_SETPCAP, which drops them, last)."""
    with open("/proc/self/status") as status:
        line = next(row for row in status if row.startswith("CapBnd:"))
    mask = int(line.split()[1], 16)
    return sorted((cap for cap in range(64) if mask >> cap & 1), key=lambda cap: cap == 8)


class Privileges:
    """What `_drop_privileges` passes the kernel, built once by the service.

    Every command is forked from the service: built here, the capability structures and the
    seccomp programs cost the command only its system calls, not the ctypes objects (and the
    pages that building them writes) per exec.
    """

    def __init__(self, seccomp: list[bytes], bounding: Any = range(64)) -> None:
        self.bounding = tuple(bounding)
        self.cap_header = _CapHeader(_CAPABILITY_VERSION_3, 0)
        self.cap_data = (_CapData * 2)()  # all zero: nothing effective, permitted, inheritable
        self.buffers = [ctypes.create_string_buffer(program, len(program)) for program in seccomp]
        self.programs = [
            _SockFprog(len(program) // 8, ctypes.addressof(buffer))
            for program, buffer in zip(seccomp, self.buffers, strict=True)
        ]


def _drop_privileges(privileges: Privileges) -> None:
    """No capabilities (none inheritable, ambient or bounding), no_new_privs, then filters."""
    prctl = _libc.prctl
    _check(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient caps")
    for cap in privileges.bounding:
        if prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            _check(-1, f"drop capability {cap} from the bounding set")
    header, data = ctypes.byref(privileges.cap_header), ctypes.byref(privileges.cap_data)
    _check(_libc.capset(header, data), "capset")
    _check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    for fprog in privileges.programs:
        _check(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def _fresh_session_keyring() -> None:
    """Leave the evaluator's session keyring behind (an anonymous one of our own instead)."""
    number = _KEYCTL.get(os.uname().machine)
    if number is not None and _libc.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        _check(-1, "join a new session keyring")


# -- the sandbox's filesystem ----------------------------------------------------------------


def _setup_mounts(spec: dict[str, Any]) -> None:
    """One size- and inode-limited tmpfs for the sample, bound at each writable place.

    A mount namespace of our own (we hold CAP_SYS_ADMIN in the sandbox's user namespace only)
    is where a tmpfs can get `nr_inodes`, which bwrap has no option for.
    """
    _check(_libc.unshare(CLONE_NEWNS), "unshare mount namespace")
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    staging = spec["staging"]
    options = f"size={spec['size']},nr_inodes={spec['inodes']},mode=755"
    _mount("docket", staging, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for name, target, mode in spec["binds"]:
        path = os.path.join(staging, name)
        os.mkdir(path)
        os.chmod(path, int(mode, 8))
        _mount(path, target, None, MS_BIND | MS_REC, None)
    _check(_libc.umount2(staging.encode(), MNT_DETACH), f"umount {staging}")
    if spec.get("ptys"):
        spec["ptys_problem"] = _private_ptys(int(spec["ptys"]))
    for source, target in spec.get("read_only", []):
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        _mount(source, target, None, MS_BIND | MS_REC, None)
        _mount(source, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)


def _private_ptys(limit: int) -> str | None:
    """A devpts instance of the sandbox's own holding at most `limit` ptys (over bwrap's,
    which has no limit but the host's `kernel.pty.max`); None, or why it could not be made."""
    options = f"newinstance,ptmxmode=0666,mode=0620,max={limit}"
    try:
        _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, options)
    except OSError as ex:
        return str(ex)
    return None


def _private_proc() -> None:
    """A mount namespace and a /proc of the exec's own, so pids in /proc are its pids.

    (Unlike bwrap's own /proc, /proc/sys is not made read-only: the commands hold no
    capability, so the kernel refuses them every write there anyway.)
    """
    _check(_libc.unshare(CLONE_NEWNS), "unshare mount namespace")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)


# -- Inspect's tool support, sealed ----------------------------------------------------------


def _open_dir_nofollow(path: str) -> int:
    """An fd on the directory `path`, walked one component at a time without symlinks."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in [p for p in path.split("/") if p]:
            if part in (".", ".."):
                raise OSError(errno.EINVAL, f"{path} is not a plain absolute path")
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            step = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def _clear_dir(fd: int, depth: int = 0) -> None:
    """Remove everything below the directory `fd` (never following a symlink); best effort."""
    if depth > 64:
        return
    for entry in list(os.scandir(fd)):
        try:
            if entry.is_dir(follow_symlinks=False):
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    _clear_dir(sub, depth + 1)
                finally:
                    os.close(sub)
                os.rmdir(entry.name, dir_fd=fd)
            else:
                os.unlink(entry.name, dir_fd=fd)
        except OSError:
            pass


def seal_tools(spec: dict[str, Any], bundle_fd: int, staging: str) -> tuple[int, int]:
    """Put Inspect's tool-support tree where the agent cannot change it; (st_dev, st_ino) of
    its launcher.

    The tree comes from `bundle_fd` (the archive the host checked against Inspect's own), not
    from what the agent's disk holds: it is unpacked onto a tmpfs of its own, which is then
    made read-only as a whole (superblock), and moved over the agent-writable directory
    Inspect extracted into (whose contents are removed). Only the server's state directories
    (`writable`) stay writable, as binds of directories on the agent's disk. Exec namespaces
    made from now on see the sealed tree; the rename of its mount point fails there (EBUSY).
    """
    import tarfile

    target = _open_dir_nofollow(spec["path"])
    mounted = False
    try:
        info = os.fstat(target)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise OSError(errno.EPERM, f"{spec['path']} is not a directory of the agent's")
        with os.fdopen(bundle_fd, "rb", closefd=False) as raw:
            raw.seek(0)
            archive = tarfile.open(fileobj=raw, mode="r:*")
            members = archive.getmembers()
            size = sum(m.size for m in members) + 4096 * (len(members) + 16) + (1 << 20)
            options = f"size={size},nr_inodes={len(members) + 16},mode=700"
            _mount("docket-tools", staging, "tmpfs", MS_NOSUID | MS_NODEV, options)
            mounted = True
            extra = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
            archive.extractall(staging, numeric_owner=True, **extra)  # type: ignore[arg-type]
        for name in spec["writable"]:
            os.makedirs(os.path.join(staging, name), mode=0o700, exist_ok=True)
        os.chmod(staging, 0o700)
        launcher = os.stat(os.path.join(staging, spec["launcher"]), follow_symlinks=False)
        if not stat.S_ISREG(launcher.st_mode):
            raise OSError(errno.EINVAL, "the bundle has no launcher")
        _mount("none", staging, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
        _clear_dir(target)  # what Inspect unpacked on the agent's disk
        for name in spec["writable"]:
            try:
                os.mkdir(name, 0o700, dir_fd=target)
            except FileExistsError:
                pass  # left by _clear_dir (too deep): the agent's own directory, as it was
            state = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=target)
            try:
                _mount(f"/proc/self/fd/{state}", os.path.join(staging, name), None, MS_BIND, None)
            finally:
                os.close(state)
        _mount(staging, f"/proc/self/fd/{target}", None, MS_MOVE, None)
        return launcher.st_dev, launcher.st_ino
    except BaseException:
        if mounted:
            _libc.umount2(staging.encode(), MNT_DETACH)
        raise
    finally:
        os.close(target)
        os.close(bundle_fd)


def _sealed_launcher(argv0: str, sealed: list[int] | None) -> int | None:
    """An fd on `argv0` when it is the sealed tool-support launcher (same inode), else None."""
    if not sealed:
        return None
    try:
        fd = os.open(argv0, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and [info.st_dev, info.st_ino] == list(sealed):
        return fd
    os.close(fd)
    return None


# -- one exec ---------------------------------------------------------------------------------


def _builtin(name: str, args: list[Any]) -> int:
    """read_file/write_file inside the sandbox: regular files only, never blocking on a FIFO."""
    path = args[0]
    try:
        if name == "read":
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            info = os.fstat(fd)
            _regular_or_fail(info.st_mode)
            if info.st_size > int(args[1]):
                return FILE_TOO_LARGE
            os.set_blocking(fd, True)
            while chunk := os.read(fd, 1 << 20):
                os.write(1, chunk)
            return 0
        if name == "write":
            parent = os.path.dirname(path)
            if parent and not os.path.isdir(parent):
                os.makedirs(parent, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            try:
                fd = os.open(path, flags, 0o644)
            except OSError as ex:  # a FIFO without a reader
                if ex.errno != errno.ENXIO:
                    raise
                _regular_or_fail(os.stat(path).st_mode)
                raise
            _regular_or_fail(os.fstat(fd).st_mode)
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
            while chunk := os.read(0, 1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            return 0
        raise OSError(errno.EINVAL, f"unknown builtin {name}")
    except OSError as ex:
        code = ex.errno or errno.EIO
        reason = {"errno": code, "message": ex.strerror or os.strerror(code)}
        os.write(2, json.dumps(reason).encode())
        return BUILTIN_FAILED


def _regular_or_fail(mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory")
    if not stat.S_ISREG(mode):
        kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"
        raise PermissionError(errno.EPERM, f"not a regular file ({kind})")


#: Linux rlimits Python's `resource` module does not name (the same number on every arch).
_RLIMIT_NUMBERS = {"RLIMIT_LOCKS": 10}


def _rlimit_number(name: str) -> int:
    number = getattr(resource, name, None)
    return _RLIMIT_NUMBERS[name] if number is None else int(number)


def set_rlimits(limits: dict[str, int], headroom: bool = False) -> None:
    """Set each limit as soft = hard (ValueError naming the limit when the kernel refuses).

    With `headroom` (the exec service's own), a value above the hard limit docket runs under
    is lowered to it instead.
    """
    numbered = [(name, _rlimit_number(name), value) for name, value in limits.items()]
    if headroom:
        numbered = [
            (name, number, _under_hard(value, resource.getrlimit(number)[1]))
            for name, number, value in numbered
        ]
    _set_numbered_rlimits(numbered)


def _under_hard(value: int, hard: int) -> int:
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def _set_numbered_rlimits(limits: list[tuple[str, int, int]]) -> None:
    """`set_rlimits` with each limit's number looked up already (by the service, once)."""
    for name, number, value in limits:
        try:
            resource.setrlimit(number, (value, value))
        except (ValueError, OSError):
            raise ValueError(_over_hard(name, value, resource.getrlimit(number)[1])) from None


def check_rlimits(limits: dict[str, int]) -> None:
    """ValueError naming the first limit above this process's hard limit (which nothing in the
    sandbox can raise)."""
    for name, value in limits.items():
        hard = resource.getrlimit(_rlimit_number(name))[1]
        if hard != resource.RLIM_INFINITY and value > hard:
            raise ValueError(_over_hard(name, value, hard))


def _over_hard(name: str, value: int, hard: int) -> str:
    return (
        f"cannot set {name} to {value}: the hard limit docket runs under is {hard} "
        "(lower the sandbox option, or raise the evaluator's hard limit)"
    )


#: errnos that mean a kernel resource ran out (for now): that exec fails alone, with exit 126.
_RESOURCE_ERRNOS = frozenset(
    (errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.ETOOMANYREFS)
)


def _setup_failure(report_fd: int, step: str, ex: BaseException) -> None:
    """Report a failed step in one line (`busy` when a kernel resource ran out), then exit."""
    kind = "busy" if isinstance(ex, OSError) and ex.errno in _RESOURCE_ERRNOS else "setup"
    try:
        line = f"{kind} {step}: {type(ex).__name__}: {ex}".replace("\n", " ")
        os.write(report_fd, line.encode() + b"\n")
    finally:
        os._exit(127)


#: The prepared command's fds: the failure pipe to its namespace init, its request socket, and
#: (with a cgroup) the agent cgroup's `cgroup.procs`.
_REPORT_FD, _REQUEST_FD, _AGENT_CGROUP_FD = 3, 4, 5


def _prepared_command(requests: socket.socket, report_fd: int, limits: dict[str, Any]) -> None:
    """pid 2 of a fresh exec namespace: get everything but the request ready, then run it.

    Before the request: a new session, default signals, rlimits, no capabilities,
    no_new_privs and the seccomp filters. After it: `oom_score_adj=1000` (the agent, not the
    service or the next exec's spare, is the OOM killer's first choice), its pipes, its cwd,
    then `execve` (or a file builtin).
    Failures go to the namespace init on `_REPORT_FD` as one line.
    """
    agent_cgroup = limits.get("agent_cgroup_fd", -1)
    keep = [report_fd, requests.fileno()] + ([agent_cgroup] if agent_cgroup >= 0 else [])
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in keep]
    for target, fd in enumerate(high, start=_REPORT_FD):
        os.dup2(fd, target, inheritable=False)
    os.closerange(_REPORT_FD + len(high), 65536)
    step = "session"
    try:
        os.setsid()
        step = "signals"
        for number in _RESET_SIGNALS:
            _signal.signal(number, _signal.SIG_DFL)
        _signal.set_wakeup_fd(-1)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
        step = "dumpable"
        _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "set dumpable")  # own /proc/self
        step = "rlimits"
        _set_numbered_rlimits(limits["numbered_rlimits"])
        step = "privileges"
        _drop_privileges(limits["privileges"])
    except BaseException as ex:
        _setup_failure(_REPORT_FD, step, ex)
    channel = socket.socket(fileno=_REQUEST_FD)
    try:
        request, fds = read_message(channel)
    except (EOFError, OSError, ValueError):
        os._exit(0)  # the sandbox is ending
    try:  # only now: a spare waiting for its request is not the OOM killer's choice
        adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(adj, b"1000")
        finally:
            os.close(adj)
    except BaseException as ex:
        _setup_failure(_REPORT_FD, "oom_score_adj", ex)
    if agent_cgroup >= 0:  # into the agent's cgroup (its pids.max), out of the service's
        try:
            os.write(_AGENT_CGROUP_FD, b"0")
            os.close(_AGENT_CGROUP_FD)
        except BaseException as ex:
            _setup_failure(_REPORT_FD, "agent cgroup", ex)
    launcher = None  # detached only for the sealed launcher itself, run through this fd
    if request.get("detached") and request.get("argv"):
        launcher = _sealed_launcher(request["argv"][0], limits.get("tools"))
    detached = int(launcher is not None)
    os.write(_REPORT_FD, f"request {int(request['id'])} {detached}\n".encode())
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    channel.close()
    try:
        os.chdir(request["cwd"])
    except OSError as ex:
        os.write(2, f"cannot change directory to {request['cwd']}: {ex.strerror}\n".encode())
        os._exit(1)
    builtin = request.get("builtin")
    if builtin:  # Python code: past the file size limit a write fails with EFBIG, not a signal
        _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
        _signal.signal(_signal.SIGPIPE, _signal.SIG_IGN)
        os._exit(_builtin(builtin, request.get("args", [])))
    try:
        if launcher is not None:
            os.execve(launcher, request["argv"], request["env"])
        _execvpe(request["argv"][0], request["argv"], request["env"])
    except OSError as ex:
        os.write(_REPORT_FD, f"error {ex.errno or errno.EIO}\n".encode())
    except BaseException:
        os.write(_REPORT_FD, f"error {errno.EIO}\n".encode())
    os._exit(127)


#: Signals a command starts with at their default action (the service ignores or handles them).
_RESET_SIGNALS = (_signal.SIGPIPE, _signal.SIGXFSZ, _signal.SIGCHLD, _signal.SIGTERM)


def _execvpe(file: str, argv: list[str], env: dict[str, str]) -> None:
    """`os.execvpe` without its `warnings` context (all `get_exec_path` needs it for is a
    bytes key, which a JSON request never has): the same search of the env's PATH (else
    `os.defpath`), and the same error when no entry runs."""
    if os.path.dirname(file):
        os.execve(file, argv, env)
    saved: OSError | None = None
    last: OSError | None = None
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        try:
            os.execve(os.path.join(directory, file), argv, env)
        except (FileNotFoundError, NotADirectoryError) as ex:
            last = ex
        except OSError as ex:
            last = ex
            saved = saved or ex
    raise saved or last or FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), file)


def _result_message(id: int, status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        return {"op": "exit", "id": id, "signal": os.WTERMSIG(status)}
    return {"op": "exit", "id": id, "code": os.WEXITSTATUS(status)}


def _end_namespace() -> None:
    """As pid 1 of the namespace: kill every other process in it and reap them all."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def _read_all(fd: int) -> str:
    data = bytearray()
    while chunk := os.read(fd, 4096):
        data += chunk
    os.close(fd)
    return data.decode(errors="replace")


def _namespace_init(
    channel: socket.socket, requests: socket.socket, status_fd: int, limits: dict[str, Any]
) -> None:
    """pid 1 of a fresh exec namespace, made (with its /proc and its prepared command) before
    the request arrives. When the command ends it kills and reaps the rest of the namespace,
    then reports on docket's channel itself (a detached exec's namespace lives on instead).
    """
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
    try:
        _private_proc()
    except BaseException as ex:
        _setup_failure(status_fd, "proc", ex)
    try:
        report, report_end = os.pipe()
        command = os.fork()
    except OSError as ex:  # EAGAIN: the sample's pids.max (or EMFILE)
        _setup_failure(status_fd, "fork the command", ex)
    if command == 0:
        try:
            _prepared_command(requests, report_end, limits)
        finally:
            os._exit(127)
    os.close(report_end)
    requests.close()
    if limits.get("agent_cgroup_fd", -1) >= 0:  # only its command needs it, once
        os.close(limits["agent_cgroup_fd"])
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == command:
            break
    lines = dict(line.partition(" ")[::2] for line in _read_all(report).splitlines())
    if "request" not in lines:  # it never got a request: it failed to get ready, or we end
        kind = "busy" if "busy" in lines else "setup"
        reason = lines.get(kind, "the prepared command ended before its request")
        os.write(status_fd, f"{kind} {reason}\n".encode())
        os._exit(0)
    id, detached = (int(x) for x in lines["request"].split())
    os.write(status_fd, f"exit {status}\n".encode())
    if not detached:
        _end_namespace()
    message = _result_message(id, status)
    if "error" in lines:
        message = {"op": "exit", "id": id, "error": int(lines["error"])}
    os.write(status_fd, b"reported\n")
    send_message(channel, message)
    if detached:
        _end_namespace_when_empty()
    os._exit(0)


def _end_namespace_when_empty() -> None:
    """A detached exec's init: reap until nothing is left (the sandbox's end kills the rest)."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


#: clone(2) numbers: a child in a new pid namespace without a helper process in between.
_CLONE = {"x86_64": 56, "aarch64": 220}


def _clone_into_new_pid_namespace() -> int:
    """fork() into a new pid namespace (the child is its pid 1); -1 where not available.

    A raw clone skips Python's after-fork hooks, which only matter with threads or locks held
    (the service has neither, and ctypes has released the GIL during the call).
    """
    number = _CLONE.get(os.uname().machine)
    if number is None:
        return -1
    pid = int(_libc.syscall(number, CLONE_NEWPID | signal.SIGCHLD, 0, 0, 0, 0))
    if pid < 0:
        _check(-1, "clone into a new pid namespace")
    return pid


def _prepare(channel: socket.socket, status_fd: int, limits: dict[str, Any]) -> socket.socket:
    """Make a pid namespace and its init (which prepares a command); returns the request socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    init = _clone_into_new_pid_namespace()
    if init > 0:
        os.write(status_fd, f"init {init}\n".encode())
        theirs.close()
        return ours
    if init == 0:
        try:
            ours.close()
            _namespace_init(channel, theirs, status_fd, limits)
        finally:
            os._exit(0)
    helper = os.fork()  # no raw clone here: a helper unshares, then forks the init
    if helper:
        theirs.close()
        return ours
    try:  # the helper (and the init it forks) never return into the service's frames
        ours.close()
        _check(_libc.unshare(CLONE_NEWPID), "unshare pid namespace")
        init = os.fork()
        if init == 0:
            try:
                _namespace_init(channel, theirs, status_fd, limits)
            finally:
                os._exit(0)
        os.write(status_fd, f"init {init}\n".encode())
    except BaseException as ex:
        _setup_failure(status_fd, "pid namespace", ex)
    finally:
        os._exit(0)


# -- the native path (execinit.c) -------------------------------------------------------------


def native_config(limits: dict[str, Any]) -> bytes:
    """The limits every native exec namespace applies, as `execinit` reads them.

    Layout (native byte order): b"DKX1"; the bounding set to drop (count, u32 each); the
    agent's rlimits (count, then resource u32, value i64, name length u32, name); the seccomp
    programs (count, then length u32 and the BPF code); the sealed launcher (u32 flag, st_dev
    and st_ino as u64).
    """
    privileges: Privileges = limits["privileges"]
    parts = [b"DKX1", struct.pack("=I", len(privileges.bounding))]
    parts += [struct.pack("=I", cap) for cap in privileges.bounding]
    parts.append(struct.pack("=I", len(limits["numbered_rlimits"])))
    for name, number, value in limits["numbered_rlimits"]:
        parts += [struct.pack("=IqI", number, value, len(name)), name.encode()]
    parts.append(struct.pack("=I", len(privileges.buffers)))
    parts += [struct.pack("=I", len(buffer.raw)) + buffer.raw for buffer in privileges.buffers]
    tools = limits.get("tools")
    parts.append(struct.pack("=IQQ", 1, *tools) if tools else struct.pack("=IQQ", 0, 0, 0))
    return b"".join(parts)


#: `valid` of a native request: it runs; execve would refuse its argv or env (Python's
#: `os.execve` raises ValueError there: the exec reports EIO); its cwd is unusable (exit 127).
_RUNS, _BAD_EXEC, _BAD_CWD = b"0", b"1", b"2"


def native_request(message: dict[str, Any]) -> bytes:
    """An exec request as `execinit` reads it: a 4-byte length and NUL-terminated fields
    (id, detached, valid, cwd, builtin, argv, env as KEY=VALUE, the builtin's args; each
    list led by its length), every string as `os.execve` would encode it."""
    valid = _RUNS
    try:
        argv = [os.fsencode(arg) for arg in message.get("argv") or []]
        env = [
            os.fsencode(key) + b"=" + os.fsencode(value)
            for key, value in (message.get("env") or {}).items()
        ]
        if any(b"\0" in item for item in argv + env) or (argv and not argv[0]):
            raise ValueError("embedded null byte, or an empty argv[0]")
        if any(not key or "=" in key[1:] for key in message.get("env") or {}):
            raise ValueError("illegal environment variable name")
    except (TypeError, ValueError, AttributeError):  # UnicodeEncodeError is a ValueError
        valid, argv, env = _BAD_EXEC, [], []
    try:
        cwd = os.fsencode(message["cwd"])
        if b"\0" in cwd:
            raise ValueError("embedded null byte")
    except (KeyError, TypeError, ValueError):
        valid, cwd = _BAD_CWD, b"/"
    builtin = str(message.get("builtin") or "").encode()
    args: list[bytes] = []
    try:
        raw = message.get("args") or []
        args = [os.fsencode(raw[0])] + [str(int(value)).encode() for value in raw[1:2]]
        if b"\0" in args[0]:
            args = []
    except (IndexError, TypeError, ValueError):
        args = []
    fields = [str(int(message["id"])).encode(), b"1" if message.get("detached") else b"0"]
    fields += [valid, cwd, builtin]
    for items in (argv, env, args):
        fields += [str(len(items)).encode(), *items]
    body = b"\0".join(fields) + b"\0"
    return struct.pack("=I", len(body)) + body


def _spawn_native(
    path: str, config_fd: int, channel: socket.socket, status_fd: int, cgroup_fd: int
) -> socket.socket:
    """`_prepare` through `execinit`: spawned (vfork and exec, no copy of this interpreter),
    it makes the pid namespace, its init and the prepared command; returns the request
    socket. The fds it needs are inheritable for the spawn only (`config_fd`, the channel
    and the agent cgroup's stay so: nothing else is ever executed from the service)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        theirs.set_inheritable(True)
        os.set_inheritable(status_fd, True)
        fds = (config_fd, status_fd, theirs.fileno(), channel.fileno(), cgroup_fd)
        os.posix_spawn(path, [path, *map(str, fds)], {})
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return ours


# -- the service loop ------------------------------------------------------------------------


class _Exec:
    """One prepared namespace, then the exec it runs."""

    def __init__(self, status_fd: int, requests: socket.socket) -> None:
        self.id: int | None = None
        self.status_fd = status_fd
        self.requests: socket.socket | None = requests
        self.detached = False
        self.init_pid = 0
        self.kill_requested = False
        self.wait_status: int | None = None
        self.error: int | None = None
        self.setup: str | None = None
        self.busy = False  # setup failed for want of a kernel resource (the service lives on)
        self.reported = False
        self.native = False  # prepared by execinit: its request goes as `native_request`


class Service:
    """The loop: requests from docket, status lines from exec namespaces, SIGCHLD."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        # poll, not epoll: epoll watches are a per-uid pool the agent can exhaust (ENOSPC)
        self.selector = selectors.PollSelector()
        self.execs: dict[int, _Exec] = {}
        self.by_init: dict[int, _Exec] = {}
        self.spare: _Exec | None = None
        self.limits: dict[str, Any] = {}
        self.staging = ""
        self.agent_cgroup_fd = -1
        #: `execinit`'s path when execs take the native path, and the fd of its limits
        self.native: str | None = None
        self.native_config_fd = -1
        #: `end` requests waiting for the namespaces they killed to be reaped: (id, entries)
        self.ending: list[tuple[int, list[_Exec]]] = []
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        self.wake = wake_read
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def start(self, init: dict[str, Any]) -> None:
        self.limits = {
            "privileges": Privileges(
                [bytes.fromhex(program) for program in init.get("seccomp", [])], _bounding_set()
            ),
            "rlimits": init.get("rlimits", {}),
            "numbered_rlimits": [
                (name, _rlimit_number(name), value)
                for name, value in init.get("rlimits", {}).items()
            ],
            "agent_cgroup_fd": self.agent_cgroup_fd,
        }
        set_rlimits(init.get("service_rlimits", {}), headroom=True)  # before it forks
        check_rlimits(self.limits["rlimits"])  # the agent's: refused at start, not per exec
        _fresh_session_keyring()
        _setup_mounts(init["mounts"])
        self.staging = init["mounts"]["staging"]
        _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "set non-dumpable")
        native = self.start_native(init["native"]) if init.get("native") else None
        ready = {"op": "ready", "ptys": init["mounts"].get("ptys_problem"), "native": native}
        send_message(self.sock, ready)

    def start_native(self, path: str) -> str | bool:
        """Take the native path if `path` runs here (True), else say why not (one line)."""
        try:
            pid = os.posix_spawn(path, [path, "--check"], {})
            _pid, status = os.waitpid(pid, 0)
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                raise OSError(errno.ENOEXEC, f"its check ended with wait status {status}")
            self.write_native_config()
            self.sock.set_inheritable(True)
            if self.agent_cgroup_fd >= 0:
                os.set_inheritable(self.agent_cgroup_fd, True)
        except OSError as ex:
            return f"{path} cannot run here ({type(ex).__name__}: {ex})"
        self.native = path
        return True

    def write_native_config(self) -> None:
        """(Re)write the limits `execinit` reads, to a fresh memfd (the old one is closed)."""
        fd = os.memfd_create("docket-execinit", 0)
        try:
            data = memoryview(native_config(self.limits))
            while data:
                data = data[os.write(fd, data) :]
        except BaseException:
            os.close(fd)
            raise
        if self.native_config_fd >= 0:
            os.close(self.native_config_fd)
        self.native_config_fd = fd

    def run(self) -> None:
        gc.freeze()  # forked children then copy fewer pages (no collector writes to them)
        gc.disable()
        self.sock.setblocking(True)
        self.selector.register(self.sock, selectors.EVENT_READ, None)
        self.selector.register(self.wake, selectors.EVENT_READ, None)
        self.spare = self.try_prepare()
        while True:
            for key, _ in self.selector.select():
                if key.fileobj is self.sock:
                    try:
                        message, fds = read_message(self.sock)
                    except (EOFError, OSError, ValueError):
                        return  # docket is gone: the sandbox ends with us
                    self.handle(message, fds)
                elif key.fileobj == self.wake:
                    _drain(self.wake)
                    self.reap()
                else:
                    self.read_status(key.data)

    def prepare(self) -> _Exec:
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        try:
            if self.native:
                requests = _spawn_native(
                    self.native,
                    self.native_config_fd,
                    self.sock,
                    write_end,
                    self.agent_cgroup_fd,
                )
            else:
                requests = _prepare(self.sock, write_end, self.limits)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        entry = _Exec(read_end, requests)
        entry.native = self.native is not None
        self.selector.register(read_end, selectors.EVENT_READ, entry)
        return entry

    def try_prepare(self) -> _Exec | None:
        """A spare namespace, or None when the kernel refuses one for now (EAGAIN from clone,
        EMFILE, ENOMEM, ...): the next exec tries again, and fails alone if it still cannot."""
        try:
            return self.prepare()
        except OSError:
            return None

    def take_spare(self) -> _Exec:
        """The prepared namespace for the next exec: the spare while its command still waits
        for a request, else a fresh one (the spare lives in the sample's cgroup: an exec that
        hits the memory limit can get it killed)."""
        entry, self.spare = self.spare, None
        if entry is not None and entry.requests is not None and _waiting(entry.requests):
            return entry
        if entry is not None and entry.requests is not None:
            entry.requests.close()  # its init reports and is reaped as any other
            entry.requests = None
        return self.prepare()

    def handle(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        if op == "exec":
            self.start_exec(int(message["id"]), message, fds)
            for fd in fds:
                os.close(fd)
            if self.spare is None:
                self.spare = self.try_prepare()
        elif op == "seal":
            self.seal(message, fds)
        elif op == "end":
            for fd in fds:
                os.close(fd)
            self.end_all(int(message["id"]))
        elif op == "kill":
            target = self.execs.get(int(message["id"]))
            if target is not None:
                target.kill_requested = True
                self.kill(target)
        else:
            for fd in fds:
                os.close(fd)

    def seal(self, message: dict[str, Any], fds: list[int]) -> None:
        """Seal Inspect's tool support (once); the spare, made before, is replaced."""
        reply: dict[str, Any] = {"op": "exit", "id": int(message["id"])}
        try:
            if self.limits.get("tools") or len(fds) != 1:
                raise OSError(errno.EALREADY, "already sealed, or no bundle")
            self.limits["tools"] = list(seal_tools(message, fds.pop(), self.staging))
            if self.native:
                self.write_native_config()
            reply["code"] = 0
        except Exception as ex:
            reply["setup"] = f"seal: {type(ex).__name__}: {ex}"
        for fd in fds:
            os.close(fd)
        if reply.get("code") == 0 and self.spare is not None:
            spare, self.spare = self.spare, None
            if spare.requests is not None:
                spare.requests.close()  # its init reports and is reaped as any other
                spare.requests = None
            self.spare = self.try_prepare()
        send_message(self.sock, reply)

    def start_exec(self, id: int, message: dict[str, Any], fds: list[int]) -> None:
        """Hand exec `id` to a prepared namespace; if the kernel refuses what that takes, the
        exec alone fails (one line, naming the errno) and the service goes on."""
        try:
            entry = self.take_spare()
        except OSError as ex:
            self.refuse(id, f"cannot make its pid namespace: {ex}")
            return
        entry.id = id
        entry.detached = bool(message.get("detached"))
        self.execs[id] = entry
        assert entry.requests is not None
        try:
            if entry.native:
                _send_native(entry.requests, native_request(message), fds)
            else:
                send_message(entry.requests, message, fds)
        except OSError as ex:  # ETOOMANYREFS: too many fds in flight; the command ends unrun
            entry.setup, entry.busy = f"cannot pass the command its pipes: {ex}", True
        entry.requests.close()
        entry.requests = None

    def end_all(self, id: int) -> None:
        """SIGKILL the namespace init of every exec still alive, detached ones (Inspect's tool
        server and everything its shells started) included; answer `id` once all are reaped,
        so nothing any exec started is alive when the answer arrives."""
        self.read_unclaimed_inits()
        entries = list(self.execs.values())
        for entry in entries:
            entry.kill_requested = True  # an init not announced yet is killed when it is
            self.kill(entry)
        self.ending.append((id, entries))
        self.answer_ended()

    def answer_ended(self) -> None:
        """Answer each `end` request whose namespaces have all been reaped."""
        waiting = []
        for id, entries in self.ending:
            left = [entry for entry in entries if entry.id in self.execs]
            if left:
                waiting.append((id, left))
            else:
                send_message(self.sock, {"op": "exit", "id": id, "code": 0, "ended": len(entries)})
        self.ending = waiting

    def refuse(self, id: int, why: str) -> None:
        """Report exec `id` as not started for want of a kernel resource."""
        send_message(self.sock, {"op": "exit", "id": id, "setup": why, "busy": True})

    def kill(self, entry: _Exec) -> None:
        """SIGKILL the exec's namespace init (not yet reaped, so its pid is still ours)."""
        if entry.init_pid and entry.init_pid in self.by_init:
            try:
                os.kill(entry.init_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def read_status(self, entry: _Exec) -> bool:
        """Read status lines; False once nothing more is there for now."""
        if entry.status_fd < 0:
            return False
        try:
            data = os.read(entry.status_fd, 4096)
        except BlockingIOError:
            return False
        if not data:
            self.selector.unregister(entry.status_fd)
            os.close(entry.status_fd)
            entry.status_fd = -1
            if not entry.init_pid:  # the helper failed before it made the namespace
                self.finish(entry)
            return False
        for line in data.decode().splitlines():
            kind, _, value = line.partition(" ")
            if kind == "init":
                entry.init_pid = int(value)
                self.by_init[entry.init_pid] = entry
                if entry.kill_requested:
                    self.kill(entry)
            elif kind == "exit":
                entry.wait_status = int(value)
            elif kind == "reported":
                entry.reported = True
            elif kind == "error":
                entry.error = int(value)
            elif kind in ("setup", "busy") and not entry.busy:
                entry.setup, entry.busy = value, kind == "busy"
        return True

    def finish(self, entry: _Exec) -> None:
        """The namespace init is gone: report the exec unless its init already did."""
        if entry is self.spare:
            self.spare = None
            if entry.requests is not None:
                entry.requests.close()
            return
        if entry.id is None:
            return
        self.execs.pop(entry.id, None)
        if self.ending:
            self.answer_ended()
        if entry.reported:
            return
        entry.reported = True
        message: dict[str, Any] = {"op": "exit", "id": entry.id}
        if entry.setup is not None:
            message["setup"] = entry.setup
            message["busy"] = entry.busy
        elif entry.error is not None:
            message["error"] = entry.error
        elif entry.wait_status is None:
            message["killed"] = True
        else:
            message = _result_message(entry.id, entry.wait_status)
        send_message(self.sock, message)

    def reap(self) -> None:
        """Reap children; a reaped namespace init means nothing of its exec is alive."""
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            entry = self.by_init.pop(pid, None)
            if entry is None:
                self.read_unclaimed_inits()
                entry = self.by_init.pop(pid, None)
            if entry is None:
                continue  # a helper, never an init
            while entry.status_fd >= 0 and self.read_status(entry):
                pass
            self.finish(entry)

    def read_unclaimed_inits(self) -> None:
        """Read the status lines of namespaces whose init pid is not known yet.

        An init's `init` line is written (by the service, or by the helper before it exits)
        before the service can reap that init, but the loop may see SIGCHLD first: without
        this, an init that died at once (its fork refused: EAGAIN) was never reported.
        """
        for key in list(self.selector.get_map().values()):
            entry = key.data
            if isinstance(entry, _Exec) and not entry.init_pid and entry.status_fd >= 0:
                self.read_status(entry)


def _send_native(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    """Send a native request, with `fds` attached to its first byte."""
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]
    sent = sock.sendmsg([data], ancillary if fds else [])
    if sent < len(data):
        sock.sendall(data[sent:])


def _waiting(requests: socket.socket) -> bool:
    """Whether a prepared command still holds its end of the request socket (it never
    writes there, so anything readable is the end of file its death left)."""
    poller = select.poll()
    poller.register(requests.fileno(), select.POLLIN)
    return not poller.poll(0)


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 512):
                return
        except BlockingIOError:
            return


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    os.closerange(3, sock.fileno())
    os.closerange(sock.fileno() + 1, 65536)
    service = Service(sock)
    try:
        message, fds = read_message(sock)
        if message.get("agent_cgroup") and fds:  # the agent cgroup's cgroup.procs (host-opened)
            service.agent_cgroup_fd = fds.pop(0)
        for fd in fds:
            os.close(fd)
        service.start(message)
    except Exception as ex:  # tell docket in one line, then end the sandbox
        send_message(sock, {"op": "error", "message": f"{type(ex).__name__}: {ex}"})
        return
    service.run()


if __name__ == "__main__":
    main()
