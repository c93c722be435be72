"""The sandbox's seccomp filters, compiled to BPF with libseccomp (through `pyseccomp`).

`seccomp: default` is docket's profile, modelled on Docker's default profile for a container
without capabilities: an allowlist, every other syscall failing with EPERM (clone3 with
ENOSYS, so glibc falls back to clone). Unlike Docker's, it also
denies ptrace and cross-process memory access (Docker allows them on kernels >= 4.8), clones
and unshares of new namespaces, and `ioctl(TIOCSTI)`/`ioctl(TIOCLINUX)` (terminal input
injection), AIO and io_uring (v3); `setxattr` and its variants fail with ENOTSUP, and
`posix_fadvise(POSIX_FADV_DONTNEED)` succeeds without effect (v3). `seccomp: PATH` compiles a
profile in Docker's JSON format instead (for example Docker's own `default.json`): entries
that need a capability are skipped (the sandbox has none), `args`, `errnoRet` and `arches`
are honoured. `seccomp: none` loads no filter.

Each profile becomes one or more BPF programs (a second one holds argument rules that
libseccomp cannot combine with an unconditional rule for the same syscall); the exec service
installs them in every command after dropping its capabilities, just before `execve`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import platform
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.core.inspect_private import PrerequisiteError

#: ioctl requests that inject input into, or reconfigure, the controlling terminal.
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
#: clone() flags that create namespaces (Docker's mask: 0x7E020000).
CLONE_NAMESPACE_FLAGS = 0x7E020000
AF_VSOCK = 40
#: personality() values Docker allows (Linux default, UNAME26, ADDR_NO_RANDOMIZE, ... query).
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)

#: Syscalls every process needs, grouped by what they are for (Docker's allowlist, minus the
#: entries below that docket denies).
_ALLOWED: dict[str, tuple[str, ...]] = {
    "files": (
        "access", "chdir", "chmod", "chown", "close", "close_range", "copy_file_range",
        "creat", "dup", "dup2", "dup3", "faccessat", "faccessat2", "fallocate",
        "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchownat", "fcntl",
        "fdatasync", "fgetxattr", "flistxattr", "flock", "fremovexattr", "fstat",
        "fstatfs", "fsync", "ftruncate", "futimesat", "getcwd", "getdents", "getdents64",
        "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch",
        "lchown", "lgetxattr", "link", "linkat", "listxattr", "llistxattr", "lremovexattr",
        "lseek", "lstat", "mkdir", "mkdirat", "mknod", "mknodat", "newfstatat",
        "open", "openat", "openat2", "pread64", "preadv", "preadv2", "pwrite64", "pwritev",
        "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv", "removexattr",
        "rename", "renameat", "renameat2", "rmdir", "sendfile", "splice", "stat",
        "statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs",
        "tee", "truncate", "umask", "unlink", "unlinkat", "utime", "utimensat", "utimes",
        "vmsplice", "write", "writev", "name_to_handle_at", "fanotify_mark", "cachestat",
    ),
    "memory": (
        "brk", "madvise", "membarrier", "memfd_create", "mincore", "mlock", "mlock2",
        "mlockall", "mmap", "mprotect", "mremap", "msync", "munlock", "munlockall", "munmap",
        "pkey_alloc", "pkey_free", "pkey_mprotect", "remap_file_pages", "map_shadow_stack",
        "mseal",
    ),
    "processes": (
        "arch_prctl", "capget", "capset", "execve", "execveat", "exit", "exit_group", "fork",
        "getcpu", "getegid", "geteuid", "getgid", "getgroups", "getpgid", "getpgrp", "getpid",
        "getppid", "getpriority", "getresgid", "getresuid", "getrlimit", "get_robust_list",
        "getrusage", "getsid", "get_thread_area", "gettid", "getuid", "ioprio_get",
        "ioprio_set", "kill", "modify_ldt", "pidfd_open", "pidfd_send_signal", "prctl",
        "prlimit64", "process_mrelease", "restart_syscall", "rseq", "sched_getaffinity",
        "sched_getattr", "sched_getparam", "sched_get_priority_max", "sched_get_priority_min",
        "sched_getscheduler", "sched_rr_get_interval", "sched_setaffinity", "sched_setattr",
        "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "setfsgid",
        "setfsuid", "setgid", "setgroups", "setpgid", "setpriority", "setregid", "setresgid",
        "setresuid", "setreuid", "setrlimit", "set_robust_list", "setsid", "set_thread_area",
        "set_tid_address", "setuid", "tgkill", "tkill", "uname", "vfork", "wait4", "waitid",
        "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self",
    ),
    "signals and time": (
        "alarm", "clock_getres", "clock_gettime", "clock_nanosleep", "getitimer",
        "gettimeofday", "nanosleep", "pause", "rt_sigaction", "rt_sigpending",
        "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
        "rt_sigtimedwait", "rt_tgsigqueueinfo", "setitimer", "sigaltstack", "signalfd",
        "signalfd4", "time", "timer_create", "timer_delete", "timer_getoverrun",
        "timer_gettime", "timer_settime", "timerfd_create", "timerfd_gettime",
        "timerfd_settime", "times", "sysinfo", "getrandom", "adjtimex", "clock_adjtime",
        "futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
    ),
    "events and ipc": (
        "epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2",
        "epoll_wait", "eventfd", "eventfd2", "mq_getsetattr", "mq_notify", "mq_open",
        "mq_timedreceive", "mq_timedsend", "mq_unlink", "msgctl", "msgget", "msgrcv", "msgsnd",
        "pipe", "pipe2", "poll", "ppoll", "pselect6", "select", "semctl", "semget", "semop",
        "semtimedop", "shmat", "shmctl", "shmdt", "shmget",
    ),
    "sockets": (
        "accept", "accept4", "bind", "connect", "getpeername", "getsockname", "getsockopt",
        "listen", "recvfrom", "recvmmsg", "recvmsg", "sendmmsg", "sendmsg", "sendto",
        "setsockopt", "shutdown", "socketpair",
    ),
}  # fmt: skip

#: What docket denies with EPERM (Docker denies the same unless a capability is granted,
#: except ptrace and process_vm_*, which Docker allows on kernels >= 4.8).
DENIED: dict[str, tuple[str, ...]] = {
    "tracing and other processes' memory": (
        "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
        "pidfd_getfd",
    ),
    "kernel keyrings": ("keyctl", "add_key", "request_key"),
    "bpf and perf": ("bpf", "perf_event_open", "userfaultfd"),
    "kernel images and modules": (
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    ),
    "mounts": (
        "mount", "umount2", "mount_setattr", "move_mount", "open_tree", "fsopen", "fsconfig",
        "fsmount", "fspick", "pivot_root", "chroot",
    ),
    "namespaces": ("unshare", "setns"),
    "swap, reboot and the clock": (
        "swapon", "swapoff", "reboot", "settimeofday", "clock_settime",
    ),
    "host administration": (
        "acct", "quotactl", "quotactl_fd", "syslog", "sethostname", "setdomainname",
        "iopl", "ioperm", "lookup_dcookie", "open_by_handle_at", "vhangup", "nfsservctl",
        "uselib", "fanotify_init",
    ),
    # host-wide pools (fs.aio-max-nr), and io_uring's own socket/open operations would pass
    # no seccomp filter (Docker's current default profile denies io_uring too)
    "asynchronous I/O (AIO, io_uring)": (
        "io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_destroy", "io_cancel",
        "io_uring_setup", "io_uring_enter", "io_uring_register",
    ),
}  # fmt: skip

#: Refused with ENOTSUP, as a filesystem without extended attributes answers (so `cp -a`,
#: `tar` and `shutil.copystat` carry on): xattr bytes on the sample's tmpfs are not counted
#: in `max_disk_mb`.
NO_XATTRS = ("setxattr", "lsetxattr", "fsetxattr", "setxattrat")
#: posix_fadvise advice answered with success and not applied: DONTNEED on a host file seen
#: through the overlay evicts the host's page cache (a channel between samples).
POSIX_FADV_DONTNEED = 4


class SeccompError(PrerequisiteError):
    """A seccomp profile that cannot be built here; one line, shown without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.message)


@dataclass(frozen=True)
class Rule:
    """One libseccomp rule: `action` for `syscall` when every `(arg, op, value, mask)` holds."""

    action: str  # "allow" or "errno:N"
    syscall: str
    args: tuple[tuple[int, str, int, int], ...] = ()


@dataclass(frozen=True)
class Profile:
    """A whole filter: its default action and rules (each list becomes one BPF program)."""

    default: str
    programs: tuple[tuple[Rule, ...], ...]


def _masked(arg: int, value: int, mask: int = 0xFFFFFFFF) -> tuple[int, str, int, int]:
    return (arg, "masked_eq", value, mask)


def default_profile() -> Profile:
    """docket's default profile (see the module docstring)."""
    allowed = [Rule("allow", name) for group in _ALLOWED.values() for name in group]
    allowed += [Rule("allow", "ioctl"), Rule("allow", "socket", ((0, "ne", AF_VSOCK, 0),))]
    allowed += [Rule("allow", "personality", (_masked(0, v),)) for v in PERSONALITIES]
    allowed += [Rule("allow", "clone", (_masked(0, 0, CLONE_NAMESPACE_FLAGS),))]
    allowed += [Rule(f"errno:{errno.ENOSYS}", "clone3")]  # glibc falls back to clone()
    eperm = f"errno:{errno.EPERM}"
    allowed += [Rule(eperm, name) for group in DENIED.values() for name in group]
    allowed += [Rule(f"errno:{errno.ENOTSUP}", name) for name in NO_XATTRS]
    allowed += [Rule("allow", "fadvise64")]
    terminal = (
        Rule(eperm, "ioctl", (_masked(1, TIOCSTI),)),
        Rule(eperm, "ioctl", (_masked(1, TIOCLINUX),)),
        Rule("errno:0", "fadvise64", (_masked(3, POSIX_FADV_DONTNEED),)),
    )
    return Profile(eperm, (tuple(allowed), terminal))


_DOCKER_OPS = {
    "SCMP_CMP_NE": "ne",
    "SCMP_CMP_LT": "lt",
    "SCMP_CMP_LE": "le",
    "SCMP_CMP_EQ": "eq",
    "SCMP_CMP_GE": "ge",
    "SCMP_CMP_GT": "gt",
    "SCMP_CMP_MASKED_EQ": "masked_eq",
}
_DOCKER_ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}


def _docker_action(action: str, errno_ret: int | None, default_errno: int) -> str:
    if action == "SCMP_ACT_ALLOW":
        return "allow"
    if action == "SCMP_ACT_ERRNO":
        return f"errno:{errno_ret if errno_ret is not None else default_errno}"
    if action in ("SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_KILL_PROCESS"):
        return "kill"
    raise ValueError(f"unsupported action {action}")


def _docker_arg(arg: dict[str, Any]) -> tuple[int, str, int, int]:
    """Docker writes a masked compare as value=mask, valueTwo=datum."""
    op = _DOCKER_OPS[arg["op"]]
    if op == "masked_eq":
        return (int(arg["index"]), op, int(arg.get("valueTwo", 0)), int(arg["value"]))
    return (int(arg["index"]), op, int(arg["value"]), 0)


def docker_profile(data: dict[str, Any]) -> Profile:
    """A profile in Docker's JSON format, as it applies to a process with no capabilities."""
    default_errno = int(data.get("defaultErrnoRet", errno.EPERM))
    default = _docker_action(data["defaultAction"], default_errno, default_errno)
    arch = _DOCKER_ARCHES.get(platform.machine(), platform.machine())
    rules: list[Rule] = []
    for entry in data.get("syscalls") or []:
        includes, excludes = entry.get("includes") or {}, entry.get("excludes") or {}
        if includes.get("caps") or (includes.get("arches") and arch not in includes["arches"]):
            continue
        if arch in (excludes.get("arches") or []):
            continue
        action = _docker_action(entry["action"], entry.get("errnoRet"), default_errno)
        args = tuple(_docker_arg(a) for a in entry.get("args") or [])
        rules += [Rule(action, name, args) for name in entry.get("names") or [entry.get("name")]]
    return Profile(default, (tuple(rules),))


def load_profile(choice: str) -> Profile | None:
    """`default`, `none` (None) or a path to a Docker-format JSON profile."""
    if choice == "none":
        return None
    if choice == "default":
        return default_profile()
    try:
        data = json.loads(Path(choice).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "defaultAction" not in data:
            raise ValueError("not a Docker-format profile (no defaultAction)")
        return docker_profile(data)
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as ex:
        raise SeccompError(
            f"bwrap sandbox config: seccomp profile {choice} cannot be used "
            f"({type(ex).__name__}: {str(ex).splitlines()[0] if str(ex) else ex!r})"
        ) from None


def _libseccomp() -> Any:
    try:
        import pyseccomp
    except (ImportError, RuntimeError) as ex:  # pyseccomp raises RuntimeError without the .so
        raise SeccompError(
            "The bwrap sandbox's seccomp filter needs libseccomp on the host "
            f"({type(ex).__name__}: {ex}); install it (`apt install libseccomp2`, "
            "`pip install pyseccomp`) or set `seccomp: none` and `require: []` in the "
            "sandbox config to run without a filter"
        ) from None
    return pyseccomp


def _action(lib: Any, action: str) -> int:
    if action == "allow":
        return int(lib.ALLOW)
    if action == "kill":
        return int(lib.KILL_PROCESS)
    return int(lib.ERRNO(int(action.split(":", 1)[1])))


def _arg(lib: Any, arg: int, op: str, value: int, mask: int) -> Any:
    code = getattr(lib, op.upper())
    return lib.Arg(arg, code, mask, value) if op == "masked_eq" else lib.Arg(arg, code, value)


def _program(
    lib: Any, default: str, rules: Iterable[Rule], strict_default: bool, optimize: int = 2
) -> bytes:
    """One BPF program: `default` for unlisted syscalls (allow, for the add-on programs).

    `optimize` is libseccomp's `SCMP_FLTATR_CTL_OPTIMIZE`: 2 (a binary tree) unless a test
    asks for 1 (its plain list of rules, to compare decisions with).
    """
    syscall_filter = lib.SyscallFilter(_action(lib, default if strict_default else "allow"))
    # A binary tree of syscall numbers, not a list: the same decisions, and the kernel's
    # per-load action cache (one emulated run per syscall number) walks a short path, so
    # loading it in every command costs about half (200 vs 450 us for the default profile).
    # (libseccomp before 2.5 has no such option: its list decides the same.)
    with contextlib.suppress(OSError):
        syscall_filter.set_attr(lib.Attr.CTL_OPTIMIZE, optimize)
    for rule in rules:
        if lib.resolve_syscall(lib.system_arch(), rule.syscall) < 0:
            continue  # unknown to this libseccomp: the default action applies to it
        if rule.action == (default if strict_default else "allow"):
            continue
        args = [_arg(lib, *spec) for spec in rule.args]
        syscall_filter.add_rule(_action(lib, rule.action), rule.syscall, *args)
    with tempfile.TemporaryFile() as out:
        syscall_filter.export_bpf(out)
        out.seek(0)
        return out.read()


@functools.cache
def compile_profile(choice: str) -> tuple[bytes, ...]:
    """BPF programs for `seccomp: choice` (none for `none`); SeccompError when impossible."""
    profile = load_profile(choice)
    if profile is None:
        return ()
    lib = _libseccomp()
    try:
        return tuple(
            _program(lib, profile.default, rules, strict_default=index == 0)
            for index, rules in enumerate(profile.programs)
        )
    except OSError as ex:
        raise SeccompError(
            f"bwrap sandbox: libseccomp rejected the seccomp profile {choice!r} "
            f"({os.strerror(ex.errno) if ex.errno else ex})"
        ) from None


__all__ = [
    "DENIED",
    "NO_XATTRS",
    "Profile",
    "Rule",
    "SeccompError",
    "compile_profile",
    "load_profile",
]
