"""What one sample's sandbox is made of: the bwrap options, and the data they copy in.

Options travel to bwrap through a memfd (`--args`), so nothing of the host's paths is on any
command line; files the sandbox needs a private copy of (identity files, `/etc` files, the
exec service) travel as memfds too (`--ro-bind-data`). Directories from the host are mounted
as read-only overlays where the kernel allows it, so every sandbox has its own inodes for
them (one sample cannot lock a file another sample sees), else as read-only binds.
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docket.core.inspect_private import PrerequisiteError

from .config import BwrapConfig

SANDBOX_USER = "agent"
SANDBOX_UID = 1000
HOSTNAME = "sandbox"
WORKSPACE = "/workspace"
HOME = f"/home/{SANDBOX_USER}"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Where the exec service lives in the sandbox, and where it mounts the sample's tmpfs first.
SERVICE_DIR = "/.docket"
SERVICE_PATH = f"{SERVICE_DIR}/execd.py"
#: The exec service's native per-exec helper (`execinit.c`), where it is built.
HELPER_PATH = f"{SERVICE_DIR}/execinit"
STAGING = f"{SERVICE_DIR}/disk"
PYTHON = "/usr/bin/python3"
#: ptys one sandbox may hold at once (its own devpts instance's `max`; the host's pool,
#: `kernel.pty.max`, is shared by every sandbox and the host).
PTY_MAX = 64

#: Host top-level entries mirrored read-only (or as the same symlink) into the sandbox.
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: Host /etc entries shells, the dynamic loader and common runtimes need; all read-only.
_ETC_ENTRIES = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone",
    "ssl", "ca-certificates", "ca-certificates.conf", "bash.bashrc", "profile", "profile.d",
    "inputrc", "mime.types", "magic", "magic.mime", "os-release", "debian_version",
    "protocols", "services", "terminfo", "python3",
)  # fmt: skip

_IDENTITY_FILES = {
    "passwd": (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}:{SANDBOX_USER}:{HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ),
    "group": f"root:x:0:\n{SANDBOX_USER}:x:{SANDBOX_UID}:\nnogroup:x:65534:\n",
    "hosts": f"127.0.0.1 localhost\n127.0.1.1 {HOSTNAME}\n::1 localhost\n",
    "hostname": f"{HOSTNAME}\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
}

#: Writable places, all on the sample's one tmpfs: (name on the tmpfs, mount point, mode).
WRITABLE = (
    ("workspace", WORKSPACE, "755"),
    ("tmp", "/tmp", "1777"),
    ("home", HOME, "755"),
    ("shm", "/dev/shm", "1777"),
)


@dataclass(frozen=True)
class BwrapBinary:
    """A bwrap executable that passed the probe, and what this host lets it do."""

    path: str
    disable_userns: bool
    overlay: bool = False
    """Whether unprivileged read-only overlays work here (private inodes for host dirs)."""


@dataclass
class LaunchPlan:
    """bwrap's options (for `--args`), the fds they name, and the command to run."""

    options: list[str] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)
    late_binds: list[tuple[str, str]] = field(default_factory=list)
    """(staged path, destination) for read-only binds under a writable place, which the
    exec service mounts after the sample's tmpfs (it would hide them otherwise)."""

    def data(self, content: bytes, dest: str, mode: str = "0644") -> None:
        """A private read-only copy of `content` at `dest`."""
        fd = os.memfd_create("docket-data")
        os.write(fd, content)
        os.lseek(fd, 0, os.SEEK_SET)
        self.fds.append(fd)
        self.options += ["--perms", mode, "--ro-bind-data", str(fd), dest]

    def args_fd(self) -> int:
        """A memfd holding the options, NUL-separated (bwrap reads it with `--args`)."""
        fd = os.memfd_create("docket-args")
        os.write(fd, b"".join(option.encode() + b"\0" for option in self.options))
        os.lseek(fd, 0, os.SEEK_SET)
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()


def base_env(config: BwrapConfig) -> dict[str, str]:
    """Environment every command starts from."""
    return {
        "PATH": SANDBOX_PATH,
        "HOME": HOME,
        "USER": SANDBOX_USER,
        "LOGNAME": SANDBOX_USER,
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        **config.env,
    }


def resolve_path(path: str) -> str:
    """A sandbox path: relative paths resolve against the workspace."""
    return path if posixpath.isabs(path) else posixpath.join(WORKSPACE, path)


def private_dir(kind: str = "host folder") -> str:
    """`$TMPDIR/docket-bin-<uid>`: a host folder of docket's own (checked, never trusted).

    Args:
        kind: what the folder is for, as the error names it.

    Returns:
        The folder's path.

    Raises:
        PrerequisiteError: It is not ours, is a symlink or others can write it (one line).
    """
    return str(_checked_dir(Path(tempfile.gettempdir()) / f"docket-bin-{os.getuid()}", kind))


def _checked_dir(path: Path, kind: str) -> Path:
    """Make `path` (mode 755) unless it exists, then check it rather than trust its name: in a
    shared `/tmp` another user could have made it first."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o755)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise PrerequisiteError(
            f"The bwrap sandbox's {kind} {path} must be a directory of ours (uid "
            f"{os.getuid()}, not a symlink) that no group or other user can write; remove it."
        )
    if stat.S_IMODE(info.st_mode) != 0o755:  # ours (checked): readable by sandbox uids
        path.chmod(0o755)
    return path


@functools.cache
def empty_dir() -> str:
    """An empty, world-readable host directory: the upper layer of read-only overlays.

    `$TMPDIR/docket-bin-<uid>/empty`. Anything in it would show in every sandbox's `/usr`, so
    both folders are checked before use (never a symlink, owned by the evaluator, closed to
    group and other writers) rather than trusted because the name exists.

    Returns:
        The folder's path.

    Raises:
        PrerequisiteError: A folder is not ours, is a symlink or others can write it, or the
            upper layer is not empty (one line naming it).
    """
    folder = _checked_dir(Path(private_dir("overlay folder")) / "empty", "overlay folder")
    if any(folder.iterdir()):
        raise PrerequisiteError(f"The bwrap sandbox's overlay folder {folder} must stay empty.")
    return str(folder)


def _read_only_dir(plan: LaunchPlan, binary: BwrapBinary, host: str, dest: str) -> None:
    if binary.overlay:
        plan.options += ["--overlay-src", host, "--overlay-src", empty_dir(), "--ro-overlay", dest]
    else:
        plan.options += ["--ro-bind", host, dest]


def _host_entry(plan: LaunchPlan, binary: BwrapBinary, host: str, dest: str) -> None:
    """A host file, directory or symlink, read-only, with inodes of its own where possible."""
    try:
        info = os.lstat(host)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        plan.options += ["--symlink", os.readlink(host), dest]
    elif stat.S_ISDIR(info.st_mode):
        _read_only_dir(plan, binary, host, dest)
    elif stat.S_ISREG(info.st_mode) and info.st_size <= 1 << 20 and info.st_mode & stat.S_IROTH:
        plan.data(_file_bytes(host), dest)
    else:
        plan.options += ["--ro-bind", host, dest]


@functools.cache
def _file_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def group_only_paths(roots: tuple[str, ...]) -> tuple[str, ...]:
    """Paths under `roots` that this process reaches only through a supplementary group.

    Inside a user namespace an unprivileged process keeps its supplementary groups (the kernel
    forbids dropping them there), so such paths are masked instead. Empty as root (the sandbox
    then runs as `host_uid` with no groups) or without supplementary groups.
    """
    if os.geteuid() == 0:
        return ()
    extra = set(os.getgroups()) - {os.getegid()}
    return _scan_group_only(roots, frozenset(extra)) if extra else ()


@functools.cache
def _scan_group_only(roots: tuple[str, ...], groups: frozenset[int]) -> tuple[str, ...]:
    found: list[str] = []
    for path, info in _walk(roots):
        mode = info.st_mode
        if info.st_gid in groups and info.st_uid != os.geteuid():
            group_bits, other_bits = (mode >> 3) & 0o7, mode & 0o7
            if group_bits & ~other_bits:
                found.append(path)
    return tuple(found)


def _walk(roots: tuple[str, ...]) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under `roots` (iteratively, never following symlinks)."""
    stack = list(roots)
    while stack:
        top = stack.pop()
        try:
            entries = os.scandir(top)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield entry.path, info
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)


def launch_plan(
    binary: BwrapBinary,
    config: BwrapConfig,
    service: bytes,
    channel_fd: int,
    helper: bytes | None = None,
) -> tuple[LaunchPlan, list[str]]:
    """The options of one sample's sandbox and the command that starts its exec service
    (with its native helper `execinit` at `HELPER_PATH` when `helper` holds one)."""
    plan = LaunchPlan()
    plan.options += [
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try",
    ]  # fmt: skip
    if binary.disable_userns:
        plan.options.append("--disable-userns")
    plan.options += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    # the exec service's own (its mounts, pid namespaces, dropping the bounding set); every
    # command drops them all before it starts
    plan.options += ["--hostname", HOSTNAME]
    for cap in ("CAP_SYS_ADMIN", "CAP_SETPCAP"):
        plan.options += ["--cap-add", cap]
    plan.options += ["--die-with-parent", "--new-session", "--as-pid-1", "--clearenv"]
    plan.options += ["--setenv", "PATH", SANDBOX_PATH, "--setenv", "LANG", "C.UTF-8"]
    roots: list[str] = []
    for name in _SYSTEM_DIRS:
        _host_entry(plan, binary, f"/{name}", f"/{name}")
        if os.path.isdir(f"/{name}") and not os.path.islink(f"/{name}"):
            roots.append(f"/{name}")
    plan.options += ["--dir", "/etc"]
    for name in _ETC_ENTRIES:
        _host_entry(plan, binary, f"/etc/{name}", f"/etc/{name}")
        roots.append(f"/etc/{name}")
    for name, text in _IDENTITY_FILES.items():
        plan.data(text.encode(), f"/etc/{name}")
    for index, (host, dest) in enumerate(config.bind_pairs()):
        if _under_writable(dest):
            staged = f"{SERVICE_DIR}/ro/{index}"
            plan.late_binds.append((staged, dest))
            dest = staged
        if os.path.isdir(host):
            _read_only_dir(plan, binary, host, dest)
            roots.append(host)
        else:
            plan.options += ["--ro-bind", host, dest]
    for path in group_only_paths(tuple(roots)):
        dest = _sandbox_path(path, config)
        if os.path.isdir(path):
            plan.options += ["--perms", "0000", "--tmpfs", dest, "--remount-ro", dest]
        else:
            plan.options += ["--ro-bind", "/dev/null", dest]
    for _name, target, _mode in WRITABLE:
        if target != "/dev/shm":
            plan.options += ["--dir", target]
    plan.options += ["--symlink", "/tmp", "/var/tmp", "--dir", STAGING]
    plan.data(service, SERVICE_PATH)
    if helper is not None:
        plan.data(helper, HELPER_PATH, "0755")
    plan.options += ["--proc", "/proc", "--dev", "/dev"]
    plan.options += ["--remount-ro", "/", "--remount-ro", "/dev", "--chdir", "/"]
    command = [PYTHON, "-I", "-S", "-B", SERVICE_PATH, str(channel_fd)]
    return plan, command


def _under_writable(dest: str) -> bool:
    return any(dest == target or dest.startswith(target + "/") for _n, target, _m in WRITABLE)


def _sandbox_path(host: str, config: BwrapConfig) -> str:
    """Where a host path under a mounted root appears in the sandbox."""
    for source, dest in config.bind_pairs():
        if host == source or host.startswith(source.rstrip("/") + "/"):
            return dest + host[len(source.rstrip("/")) :]
    return host
