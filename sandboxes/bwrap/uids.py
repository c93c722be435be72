"""Per-sample host uids: each concurrent sample's sandbox runs as a host uid of its own.

The kernel counts several limits per host uid, whatever the namespaces: file descriptors in
flight over unix sockets (against RLIMIT_NOFILE), epoll watches (`fs.epoll.max_user_watches`),
inotify instances and watches, pipe pages (`fs.pipe-user-pages-soft`), queued signals
(RLIMIT_SIGPENDING), processes (RLIMIT_NPROC). Samples that share a uid share those pools, so
one sample could starve another. When docket runs as root, each sample leases one uid of
`host_uid_range` for its lifetime. A lock file per uid (`flock`, released by the kernel when the
evaluator dies) keeps evaluators on one host apart; uids `/etc/passwd` names, and uids a running
process holds, are skipped.

The lock files live in one fixed folder, `/run/docket/uids` (`LOCK_ROOT`), whatever `TMPDIR`
says, so every root evaluator on the host meets the same locks. `/run` is the host's runtime
folder (root-owned, emptied at boot, as stale lock files should be). Each folder on the way must
be a real directory owned by root that no group or other user can write, or docket refuses with
one line. Each process starts its search at a random uid of the range, so evaluators started at
the same moment do not contend for the same first uid (the `flock` alone keeps them apart).
Non-root evaluators lease nothing and never touch the folder.

Where that cannot be done (docket is not root, `host_uid` is set, the range is used up), docket
says so once, and refuses to run when the config's `require` lists `uid`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import pwd
import random
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from docket.core.inspect_private import PrerequisiteError, warn_once

from .config import BwrapConfig

logger = logging.getLogger(__name__)

#: What samples that share a host uid also share (said once when they do).
_SHARED_POOLS = (
    "fds in flight over unix sockets, epoll watches, inotify instances, pipe pages, queued signals"
)

_held: set[int] = set()
_lock = threading.Lock()
#: Where each process's search starts: (pid, offset), drawn at random once per process.
_cursor: list[tuple[int, int]] = []
#: The fixed, root-owned folder the per-uid lock files live in (independent of TMPDIR).
LOCK_ROOT = Path("/run/docket")
#: Scans of the uids processes hold are reused this long (a scan costs ~10 ms under load).
_SCAN_TTL_S = 30.0
_scanned: list[tuple[float, frozenset[int]]] = []


@dataclass
class UidLease:
    """The host uid one sample's sandbox runs as (None: the evaluator's own, as non-root)."""

    uid: int | None
    shared: bool
    _fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        """Give the uid back (after the sandbox and all its processes are gone)."""
        if self._fd is None:
            return
        with _lock:
            _held.discard(self.uid or -1)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = None


def _lock_dir() -> Path:
    """`LOCK_ROOT/uids`, made if missing; each folder on the way checked to be root's and closed.

    Returns:
        The folder of per-uid lock files.

    Raises:
        PrerequisiteError: A folder on the way is a symlink or not a directory, is not owned by
            root, or a group or other users can write it (one line naming it).
    """
    folder = LOCK_ROOT / "uids"
    for path, mode in ((LOCK_ROOT.parent, 0o755), (LOCK_ROOT, 0o755), (folder, 0o700)):
        with contextlib.suppress(FileExistsError):  # each is checked before one is made in it
            path.mkdir(mode=mode)
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            raise PrerequisiteError(
                f"The bwrap sandbox's uid lock folder {path} must be a directory owned by root "
                "that no group or other user can write; fix or remove it."
            )
    return folder


def _named_by_passwd(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _busy_uids() -> frozenset[int]:
    """Uids running processes hold (a scan at most `_SCAN_TTL_S` old; our own leases are
    tracked apart, so a stale scan only misses a foreign process that just took a uid of the
    range)."""
    now = time.monotonic()
    if not _scanned or now - _scanned[0][0] > _SCAN_TTL_S:
        _scanned[:] = [(now, frozenset(_uids_of_processes()))]
    return _scanned[0][1]


def _uids_of_processes() -> set[int]:
    """Real, effective, saved and filesystem uids of every process (from /proc/*/status)."""
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, StopIteration):
            with open(f"/proc/{entry.name}/status") as status:
                line = next(row for row in status if row.startswith("Uid:"))
            found.update(int(value) for value in line.split()[1:])
    return found


def _try_lease(uid: int, folder: Path, busy: frozenset[int]) -> UidLease | None:
    if uid in _held or uid in busy or _named_by_passwd(uid):
        return None
    fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    _held.add(uid)
    return UidLease(uid, False, fd)


def own_uids_possible(config: BwrapConfig) -> str | None:
    """Why samples cannot get host uids of their own under `config`, or None when they can."""
    if os.geteuid() != 0:
        return f"docket runs as uid {os.geteuid()}, not root, so it cannot switch uids"
    if config.host_uid is not None:
        return f"host_uid is set to {config.host_uid}"
    return None


def check_uid_support(config: BwrapConfig) -> None:
    """Refuse (`require: [uid]`) or say once that concurrent samples share a host uid."""
    reason = own_uids_possible(config)
    if reason is None:
        return
    if "uid" in config.required():
        raise PrerequisiteError(
            f"The bwrap sandbox cannot give each sample its own host uid here ({reason}); the "
            "sandbox config requires uid: run docket as root without host_uid, or drop uid "
            "from `require`."
        )
    warn_once(
        logger,
        f"bwrap sandbox: concurrent samples share one host uid ({reason}), and with it the "
        f"kernel's per-uid pools ({_SHARED_POOLS}): one sample can exhaust them for the others. "
        "Add uid to the sandbox config's `require` to refuse this.",
    )


def lease_uid(config: BwrapConfig) -> UidLease:
    """A host uid for one sample's sandbox (release it once the sandbox is closed)."""
    if os.geteuid() != 0:
        return UidLease(None, True)
    if config.host_uid is not None:
        return UidLease(config.host_uid, True)
    first, last = config.host_uid_range
    count = last - first + 1
    folder = _lock_dir()
    busy = _busy_uids()
    with _lock:
        if not _cursor or _cursor[0][0] != os.getpid():  # a new process (a fork too) draws anew
            _cursor[:] = [(os.getpid(), random.SystemRandom().randrange(1 << 31))]
        start = _cursor[0][1] % count
        for step in range(count):
            offset = (start + step) % count
            lease = _try_lease(first + offset, folder, busy)
            if lease is not None:
                _cursor[0] = (os.getpid(), offset + 1)
                return lease
    reason = f"all {count} uids of host_uid_range {first}-{last} are in use"
    if "uid" in config.required():
        raise PrerequisiteError(
            f"The bwrap sandbox cannot give this sample its own host uid ({reason}); widen "
            "host_uid_range or run fewer samples at once."
        )
    warn_once(
        logger,
        f"bwrap sandbox: {reason}, so further samples share uid {first} and its per-uid pools "
        f"({_SHARED_POOLS}).",
    )
    return UidLease(first, True)
