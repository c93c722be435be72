"""The bwrap command line: namespaces, mounts, environment and the in-sandbox launcher."""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from .config import BwrapConfig
from .workspace import HOSTNAME, SANDBOX_UID, SANDBOX_USER, SampleDirs

WORKSPACE = "/workspace"
HOME = f"/home/{SANDBOX_USER}"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: Host top-level entries mirrored read-only (or as the same symlink) into the sandbox.
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: Host /etc entries shells, the dynamic loader and common runtimes need; all read-only.
_ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "bash.bashrc",
    "profile",
    "profile.d",
    "inputrc",
    "mime.types",
    "magic",
    "magic.mime",
    "os-release",
    "debian_version",
    "protocols",
    "services",
    "terminfo",
    "python3",
)

_IDENTITY_FILES = ("passwd", "group", "hosts", "hostname", "nsswitch.conf")

#: Written to stderr by the launcher when `exec` of the user's command itself fails.
EXEC_FAILED_MARKER = "\x1f[docket-bwrap: exec failed]"

#: Size of the sandbox's /dev/shm tmpfs (host RAM, outside RLIMIT_AS), as Docker's default.
SHM_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class BwrapBinary:
    """A bwrap executable that passed the probe."""

    path: str
    disable_userns: bool
    sized_tmpfs: bool = False
    """Whether it has `--size` (bwrap >= 0.10), so /dev/shm can be a capped tmpfs."""


def shell_path() -> str:
    """The bash used to launch commands (a host path, visible in the sandbox through /usr)."""
    for candidate in ("/usr/bin/bash", "/bin/bash"):
        if os.access(candidate, os.X_OK):
            return candidate
    return "/bin/bash"


def base_env(config: BwrapConfig) -> dict[str, str]:
    """Environment every command starts from (after bwrap's --clearenv)."""
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


def launcher_script(config: BwrapConfig) -> str:
    """bash program run as the sandbox's first command: rlimits, cd "$1", exec the rest."""
    limits = [
        ("-v", config.memory_mb * 1024 if config.memory_mb else None),
        ("-u", config.max_processes),
        ("-f", config.max_file_size_mb * 1024 if config.max_file_size_mb else None),
    ]
    lines = [f"ulimit -S -H {flag} {value} || exit 125" for flag, value in limits if value]
    lines += [
        'cd -- "$1" || exit 1',
        "shift",
        "shopt -s execfail",
        'exec -- "$@"',
        "rc=$?",
        f"printf '%s' '{EXEC_FAILED_MARKER}' >&2",
        'exit "$rc"',
    ]
    return "; ".join(lines)


def _system_mounts() -> list[str]:
    args: list[str] = []
    for name in _SYSTEM_DIRS:
        host = Path("/", name)
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    for name in _ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def bwrap_argv(
    binary: BwrapBinary,
    dirs: SampleDirs,
    config: BwrapConfig,
    env: dict[str, str],
    cwd: str,
    cmd: list[str],
) -> list[str]:
    """Full argv that runs `cmd` in `cwd` inside the sample's sandbox."""
    args = [
        binary.path,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if binary.disable_userns:
        args.append("--disable-userns")
    args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", HOSTNAME]
    args += ["--die-with-parent", "--new-session", "--clearenv"]
    args += _system_mounts()
    for name in _IDENTITY_FILES:
        args += ["--ro-bind", str(dirs.etc / name), f"/etc/{name}"]
    args += ["--bind", str(dirs.workspace), WORKSPACE]
    args += ["--bind", str(dirs.tmp), "/tmp"]
    args += ["--bind", str(dirs.home), HOME]
    args += ["--symlink", "/tmp", "/var/tmp"]
    for host, dest in config.bind_pairs():
        args += ["--ro-bind", host, dest]
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/", "--remount-ro", "/dev"]
    if binary.sized_tmpfs:  # else /dev/shm stays read-only: an unsized tmpfs would be host RAM
        args += ["--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
    for key, value in {**base_env(config), **env}.items():
        args += ["--setenv", key, value]
    args += ["--chdir", "/", "--", shell_path(), "-c", launcher_script(config), "bash"]
    return args + [resolve_path(cwd), *cmd]


def resolve_path(path: str) -> str:
    """A sandbox path: relative paths resolve against the workspace."""
    return path if posixpath.isabs(path) else posixpath.join(WORKSPACE, path)
