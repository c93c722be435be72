"""Memory and process limits for a whole sample through a cgroup, where the host lets us make one.

Each sample gets a child cgroup of the evaluator's own (so every limit the evaluator is already
under still applies): `memory_mb` caps everything the sample holds in RAM, its processes,
its tmpfs files and memfds alike (and, on v1, its TCP buffers separately), and
`max_processes` caps its tasks. cgroup v1 needs write
access to the evaluator's memory and pids cgroups (root, as on CI). cgroup v2 needs a
delegated directory with the memory and pids controllers enabled for its children: the
evaluator's own cgroup when that is so, or the one named by `$DOCKET_CGROUP`. Without either,
`detect()` says why in one line and the sandbox falls back to per-process rlimits.

Inside the sample's cgroup, the agent's commands get a child cgroup of their own (`agent/`,
in the pids hierarchy) whose `pids.max` is `max_processes`; the exec service and its prepared
namespaces stay outside it (cgroup v2: in the sibling `service/`, as v2 allows no processes in
a cgroup that has controllers enabled for its children). So however many tasks the agent
keeps alive, the service can still fork the scorer's exec. A command moves itself into
`agent/` (writing `0` to an fd of its `cgroup.procs` that the host opened) after it got its
request and before it `execve`s.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

#: A delegated cgroup v2 directory to create sample cgroups in (overrides detection).
CGROUP_ENV = "DOCKET_CGROUP"
PREFIX = "docket-"
_CONTROLLERS = ("memory", "pids")


@dataclass(frozen=True)
class CgroupSupport:
    """Where sample cgroups can be made, or why they cannot (`parents` empty)."""

    version: int
    parents: tuple[Path, ...]
    reason: str = ""

    @property
    def available(self) -> bool:
        return bool(self.parents)


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> path of this process's cgroup, from /proc/self/cgroup."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _id, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                found[name] = path
    return found


def _mounts() -> dict[str, Path]:
    """controller (or "" for the v2 hierarchy) -> its mount point."""
    found: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, _source, options = (right.split(" ") + ["", ""])[:3]
            mount_point = Path(left.split(" ")[4])
            if fstype == "cgroup2":
                found.setdefault("", mount_point)
            elif fstype == "cgroup":
                for option in options.split(","):
                    if option in _CONTROLLERS:
                        found.setdefault(option, mount_point)
    return found


def _writable_dir(path: Path) -> bool:
    """Whether we may create a child cgroup under `path` (tried, then removed)."""
    probe = path / f"{PREFIX}probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def _v1() -> CgroupSupport | str:
    own, mounts = _own_cgroups(), _mounts()
    parents: list[Path] = []
    for controller in _CONTROLLERS:
        if controller not in own or controller not in mounts:
            return f"no cgroup v1 {controller} controller"
        parent = mounts[controller] / own[controller].lstrip("/")
        if not _writable_dir(parent):
            return f"cgroup v1 {controller} at {parent} is not writable"
        parents.append(parent)
    return CgroupSupport(1, tuple(parents))


def _v2() -> CgroupSupport | str:
    override = os.environ.get(CGROUP_ENV)
    if override:
        parent = Path(override)
    else:
        own, mounts = _own_cgroups(), _mounts()
        if "" not in own or "" not in mounts:
            return "no cgroup v2 hierarchy"
        parent = mounts[""] / own[""].lstrip("/")
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return f"cgroup v2 {parent} cannot be read"
    missing = [c for c in _CONTROLLERS if c not in enabled]
    if missing:
        return (
            f"cgroup v2 {parent} does not delegate {'/'.join(missing)} to its children "
            f"(set ${CGROUP_ENV} to a delegated cgroup)"
        )
    if not _writable_dir(parent):
        return f"cgroup v2 {parent} is not writable"
    return CgroupSupport(2, (parent,))


@functools.cache
def detect() -> CgroupSupport:
    """The cgroup hierarchy sample cgroups go into (cached for the process)."""
    reasons: list[str] = []
    for attempt in (_v2, _v1) if os.environ.get(CGROUP_ENV) else (_v1, _v2):
        outcome = attempt()
        if isinstance(outcome, CgroupSupport):
            return outcome
        reasons.append(outcome)
    return CgroupSupport(0, (), "; ".join(reasons))


def _write(path: Path, value: str) -> None:
    path.write_text(value)


#: Child cgroups of a sample's: the agent's commands, and (v2) the exec service.
AGENT, SERVICE = "agent", "service"


class SampleCgroup:
    """One sample's cgroup (one directory per v1 hierarchy, or one v2 directory), with the
    agent's child cgroup in the pids hierarchy (and, v2, a `service/` sibling)."""

    def __init__(
        self,
        support: CgroupSupport,
        memory_mb: int | None,
        max_tasks: int | None,
        agent_tasks: int | None = None,
    ):
        """Make the directories and set the limits.

        Args:
            support: Where sample cgroups go (`detect()`).
            memory_mb: `memory.max` of the whole sample, MiB (None: unlimited).
            max_tasks: `pids.max` of the whole sample, service included (None: unlimited).
            agent_tasks: `pids.max` of the agent's child cgroup (None: unlimited).
        """
        self.support = support
        name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.paths = tuple(parent / name for parent in support.parents)
        created: list[Path] = []
        try:
            for path in self.paths:
                path.mkdir()
                created.append(path)
            self._limit(memory_mb, max_tasks)
            self.agent, self.service = self._children(agent_tasks, created)
        except BaseException:
            for path in reversed(created):
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise

    def _limit(self, memory_mb: int | None, max_tasks: int | None) -> None:
        memory = str(memory_mb << 20) if memory_mb else None
        tasks = str(max_tasks) if max_tasks else None
        for path in self.paths:
            if self.support.version == 2:
                if memory:
                    _write(path / "memory.max", memory)
                    with contextlib.suppress(OSError):
                        _write(path / "memory.swap.max", "0")
                if tasks:
                    _write(path / "pids.max", tasks)
            elif (path / "memory.limit_in_bytes").exists():
                if memory:
                    _write(path / "memory.limit_in_bytes", memory)
                    with contextlib.suppress(OSError):  # no swap accounting on this kernel
                        _write(path / "memory.memsw.limit_in_bytes", memory)
                    # v1 charges socket buffers only once this is set (v2: to memory.max)
                    with contextlib.suppress(OSError):
                        _write(path / "memory.kmem.tcp.limit_in_bytes", memory)
            elif tasks:
                _write(path / "pids.max", tasks)

    def _children(
        self, agent_tasks: int | None, created: list[Path]
    ) -> tuple[Path | None, Path | None]:
        """The agent's cgroup (pids hierarchy) and, on v2, the service's leaf beside it."""
        if self.support.version == 2:
            (root,) = self.paths
            _write(root / "cgroup.subtree_control", "+pids")
            for child in (SERVICE, AGENT):
                (root / child).mkdir()
                created.append(root / child)
            agent, service = root / AGENT, root / SERVICE
        else:
            pids = [path for path in self.paths if (path / "pids.max").exists()]
            if not pids:
                return None, None
            agent, service = pids[0] / AGENT, None
            agent.mkdir()
            created.append(agent)
        if agent_tasks:
            _write(agent / "pids.max", str(agent_tasks))
        return agent, service

    def attach(self, pid: int) -> None:
        """Move `pid` (not yet running sample code) into the cgroup (v2: its service leaf)."""
        for path in self.paths:
            leaf = self.service if self.support.version == 2 and self.service else path
            _write(leaf / "cgroup.procs", str(pid))

    def agent_procs_fd(self) -> int | None:
        """A write-only fd of the agent cgroup's `cgroup.procs` (None without one).

        Writing `0` to it moves the writer there; the kernel checks the opener's (our)
        credentials, so an unprivileged command may use it, and only it: the exec service
        hands it to each command, which closes it before `execve`.
        """
        if self.agent is None:
            return None
        return os.open(self.agent / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def _all_dirs(self) -> list[Path]:
        """Children first, then the sample's own directories."""
        children = [path for path in (self.agent, self.service) if path is not None]
        return children + list(self.paths)

    def pids(self) -> list[int]:
        found: set[int] = set()
        for path in self._all_dirs():
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return sorted(found)

    def agent_tasks(self) -> int | None:
        """Tasks now in the agent's cgroup (`pids.current`), None where unknown."""
        if self.agent is None:
            return None
        try:
            return int((self.agent / "pids.current").read_text())
        except (OSError, ValueError):
            return None

    def events(self) -> dict[str, int]:
        """How often the sample hit its limits: `oom_kill` (processes the OOM killer ended),
        `pids_max` (forks refused by the sample's pids.max, the service's side) and
        `agent_pids_max` (by the agent's)."""
        found = {"oom_kill": 0, "pids_max": 0, "agent_pids_max": 0}
        for path in self.paths:
            for name in ("memory.events", "memory.oom_control"):
                found["oom_kill"] += _counter(path / name, "oom_kill")
            found["pids_max"] += _counter(path / "pids.events", "max")
        if self.agent is not None:
            found["agent_pids_max"] = _counter(self.agent / "pids.events", "max")
            if self.support.version == 2:  # v2's pids.events counts its children's hits too
                found["pids_max"] = max(found["pids_max"] - found["agent_pids_max"], 0)
        return found

    def remove(self) -> list[int]:
        """Kill anything still inside, then remove the directories; returns the killed pids."""
        survivors = self.pids()
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for path in self._all_dirs():
            _remove_dir(path)
        return survivors


def _counter(path: Path, key: str) -> int:
    """The `key N` line of a cgroup events file (0 when absent)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _remove_dir(path: Path) -> None:
    """rmdir a cgroup, retrying briefly while killed tasks finish exiting."""
    for _ in range(100):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _owner_alive(path: Path) -> bool:
    """Whether the evaluator named in a sample cgroup's name (docket-PID-ID) still runs."""
    try:
        owner = int(path.name.removeprefix(PREFIX).split("-", 1)[0])
    except ValueError:
        return True  # not one of ours: leave it alone
    return owner == os.getpid() or Path(f"/proc/{owner}").exists()


def remove_leftovers() -> list[Path]:
    """Remove sample cgroups whose evaluator is gone (killing what is still in them)."""
    support = detect()
    removed: list[Path] = []
    for parent in support.parents:
        for path in sorted(parent.glob(f"{PREFIX}*")):
            if not path.is_dir() or _owner_alive(path):
                continue
            dirs = [path / AGENT, path / SERVICE, path]
            for directory in dirs:
                with contextlib.suppress(OSError):
                    for pid in (directory / "cgroup.procs").read_text().split():
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(int(pid), signal.SIGKILL)
            for directory in dirs:
                _remove_dir(directory)
            if not path.exists():
                removed.append(path)
    return removed
