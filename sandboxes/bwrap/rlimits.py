"""The rlimits of a bwrap sample: every command (soft = hard), and the exec service itself.

Every limit is set as soft = hard, and only ever lowered: raising a hard limit needs
`CAP_SYS_RESOURCE` in the host's user namespace, which nothing in the sandbox holds. The exec
service (pid 1) sets its own at start, so the namespace inits and prepared commands it forks
begin under them; each command then lowers them to the agent's before it runs anything.
The service keeps some headroom above the agent on the two limits the kernel counts for the
whole sample (tasks, and fds in flight over unix sockets), so an agent that fills them fails
its own next fork or send, never the next exec.
"""

from __future__ import annotations

import os
import platform
import re

from .config import BwrapConfig

#: Tasks the exec service may have beyond `max_processes`: itself, its prepared spare and one
#: namespace init per running exec (the sample cgroup's pids.max has the same headroom).
SERVICE_TASKS = 64
#: Open files the exec service may have beyond `max_open_files` (two per live exec, three in
#: flight per request).
SERVICE_FILES = 1024


def nproc_per_sample(release: str | None = None) -> bool:
    """Whether RLIMIT_NPROC counts only the sample's own tasks (Linux 5.14+ counts it per user
    namespace; before, per host uid, which a non-root evaluator shares with every sample).

    Args:
        release: a kernel release string (default: this host's).

    Returns:
        True when the kernel counts tasks per user namespace, or each sample has a uid of its
        own (docket runs as root).
    """
    found = re.match(r"(\d+)\.(\d+)", release or platform.release())
    recent = found is not None and (int(found[1]), int(found[2])) >= (5, 14)
    return recent or os.geteuid() == 0


def agent_rlimits(config: BwrapConfig, cgroup_limits: bool) -> dict[str, int]:
    """The limits of every command the agent (or Inspect's tool server) runs.

    Args:
        config: the sample's sandbox options.
        cgroup_limits: whether a cgroup counts the sample's memory and tasks.

    Returns:
        `resource` constant name -> value (soft and hard).
    """
    limits = {
        # 1, not 0: no core fits in one byte, and for a core_pattern piped to a program the
        # kernel ignores the limit except 1, which it reads as "no dump"
        "RLIMIT_CORE": 1,
        "RLIMIT_NOFILE": config.max_open_files,
        "RLIMIT_MEMLOCK": config.max_locked_memory_kb << 10,
        "RLIMIT_SIGPENDING": config.max_pending_signals,
        "RLIMIT_MSGQUEUE": config.max_msgqueue_kb << 10,
        "RLIMIT_LOCKS": config.max_file_locks,
        "RLIMIT_RTPRIO": 0,
        "RLIMIT_NICE": 0,
    }
    if config.memory_mb:
        limits["RLIMIT_AS"] = config.memory_mb << 20
    if config.max_file_size_mb:
        limits["RLIMIT_FSIZE"] = config.max_file_size_mb << 20
    if config.max_processes and cgroup_limits and nproc_per_sample():
        # the sample's whole count, as its cgroup's pids.max: the agent's pids.max binds first
        limits["RLIMIT_NPROC"] = config.max_processes + SERVICE_TASKS
    elif config.max_processes and not cgroup_limits:
        limits["RLIMIT_NPROC"] = config.max_processes  # the only bound on tasks
    return limits


def service_rlimits(config: BwrapConfig, cgroup_limits: bool) -> dict[str, int]:
    """The exec service's own limits (inherited by what it forks until a command lowers them).

    Args:
        config: the sample's sandbox options.
        cgroup_limits: whether a cgroup counts the sample's memory and tasks.

    Returns:
        `resource` constant name -> value (soft and hard): the agent's, with headroom on
        tasks and open files, and no address-space or file-size limit (the cgroup and the
        tmpfs bound the service, which unpacks Inspect's tool bundle).
    """
    limits = agent_rlimits(config, cgroup_limits)
    limits.pop("RLIMIT_AS", None)
    limits.pop("RLIMIT_FSIZE", None)
    limits["RLIMIT_NOFILE"] = min(config.max_open_files + SERVICE_FILES, 1 << 20)
    if config.max_processes and "RLIMIT_NPROC" in limits:
        limits["RLIMIT_NPROC"] = config.max_processes + SERVICE_TASKS
    return limits
