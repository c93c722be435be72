"""`BwrapConfig`: the per-task options of the `bwrap` sandbox, and how they are loaded."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from docket.core.inspect_private import PrerequisiteError

#: Sandbox paths a read-only bind may not cover or sit under.
_RESERVED_DESTS = ("/proc", "/dev")


class BwrapConfigError(PrerequisiteError, ValueError):
    """A bad `bwrap` sandbox config; one line, shown by Inspect without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.message)


#: Limits `require` can insist on.
Requirement = Literal["seccomp", "cgroup", "ptys", "uid"]

#: The default block of host uids samples lease one each of (as root): far above the uids
#: distributions hand out and the usual subuid ranges.
DEFAULT_UID_RANGE = (1_500_000_000, 1_500_004_095)


class BwrapConfig(BaseModel):
    """Options of the `bwrap` sandbox (pass as a YAML file path, a dict or this object).

    `None` means unlimited.
    """

    # Field docstrings become descriptions: the README's options table (options_doc.py).
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    memory_mb: int | None = Field(default=2048, gt=0)
    """RAM of the whole sample (its processes, files and shared memory) through a cgroup
    where one is available; also the address-space limit (RLIMIT_AS) of each process."""

    max_processes: int | None = Field(default=256, gt=0)
    """Processes/threads of the agent (cgroup pids.max where available, else RLIMIT_NPROC;
    with a cgroup, RLIMIT_NPROC bounds the whole sample at this plus the exec service's 64)."""

    max_file_size_mb: int | None = Field(default=1024, gt=0)
    """Largest file a sandbox process may write (RLIMIT_FSIZE), in MiB."""

    max_disk_mb: int | None = Field(default=1024, gt=0)
    """Size of the sample's tmpfs (workspace, /tmp, home, /dev/shm together), in MiB; the
    kernel answers ENOSPC past it. Its files are in RAM (and count towards `memory_mb`)."""

    max_inodes: int | None = Field(default=65536, gt=0)
    """Files and directories the sample's tmpfs can hold (its `nr_inodes`)."""

    max_open_files: int = Field(default=1024, gt=0, le=1 << 20)
    """Open files of each sandbox process (RLIMIT_NOFILE), and the fds the sample may keep in
    flight over unix sockets. A sample holds at most `max_open_files` x `max_processes` file
    handles through fds."""

    max_locked_memory_kb: int = Field(default=64, ge=0)
    """Memory each process may lock (RLIMIT_MEMLOCK: mlock, and SHM_LOCK for the sample), KiB."""

    max_pending_signals: int = Field(default=1024, gt=0)
    """Signals the sample may have queued at once (RLIMIT_SIGPENDING, counted per sample)."""

    max_msgqueue_kb: int = Field(default=800, ge=0)
    """Bytes of POSIX message queues the sample may create (RLIMIT_MSGQUEUE), KiB."""

    max_file_locks: int = Field(default=1024, gt=0)
    """RLIMIT_LOCKS of each process (set for completeness: Linux no longer enforces it; the
    sample's locks are kernel memory counted in its cgroup)."""

    seccomp: str = "default"
    """`default` (docket's profile, modelled on Docker's), `none`, or a path to a
    Docker-format JSON profile."""

    require: list[Requirement] | None = None
    """Limits the host must enforce or the eval stops: `seccomp`, `cgroup`, `ptys` (a devpts
    instance of the sandbox's own with a pty limit), `uid` (each concurrent sample runs as a host
    uid of its own). Default: `[seccomp]` (unless `seccomp: none`); a limit not listed that the
    host cannot enforce is said once as a warning naming what it still allows."""

    ro_binds: list[str] | dict[str, str] = Field(default_factory=list)
    """Host paths bound read-only: `["/host/path", "/host:/in/sandbox"]` or `{host: sandbox}`."""

    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for every command."""

    network: Literal["none"] = "none"
    """Only `none` (loopback only) is supported; use docker/k8s for networked tasks."""

    host_uid: int | None = Field(default=None, gt=0)
    """Host uid (and gid) every sample's sandbox runs as when Inspect runs as root (ignored
    otherwise). Unset (the default), each concurrent sample gets one of `host_uid_range`
    instead; set, samples share this uid and the kernel's per-uid pools (said once)."""

    host_uid_range: tuple[int, int] = DEFAULT_UID_RANGE
    """First and last host uid (inclusive) samples lease one each of, as root."""

    @field_validator("seccomp")
    @classmethod
    def _seccomp_choice(cls, value: str) -> str:
        if value not in ("default", "none") and not posixpath.isabs(value):
            raise ValueError("must be default, none or an absolute path to a profile")
        return value

    def required(self) -> set[str]:
        """The limits this config insists on (see `require`)."""
        if self.require is not None:
            return set(self.require)
        return set() if self.seccomp == "none" else {"seccomp"}

    @model_validator(mode="after")
    def _consistent(self) -> BwrapConfig:
        if self.seccomp == "none" and "seccomp" in self.required():
            raise ValueError("require lists seccomp but seccomp is none")
        if self.host_uid is not None and "uid" in self.required():
            raise ValueError("require lists uid but host_uid is set (samples would share it)")
        first, last = self.host_uid_range
        if not 0 < first <= last < (1 << 32) - 1:
            raise ValueError("host_uid_range must be [first, last] with 0 < first <= last")
        return self

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"invalid environment variable name {key!r}")
        return value

    def bind_pairs(self) -> list[tuple[str, str]]:
        """`ro_binds` as validated `(host, sandbox)` absolute path pairs."""
        if isinstance(self.ro_binds, dict):
            items = list(self.ro_binds.items())
        else:
            items = [
                (spec.split(":", 1)[0], spec.split(":", 1)[1]) if ":" in spec else (spec, spec)
                for spec in self.ro_binds
            ]
        pairs: list[tuple[str, str]] = []
        for host, dest in items:
            dest_norm = posixpath.normpath(dest)
            if not posixpath.isabs(host) or not posixpath.isabs(dest):
                raise BwrapConfigError(
                    "bwrap sandbox config: ro_binds paths must be absolute, "
                    f"got {host!r} -> {dest!r}"
                )
            if dest_norm == "/" or any(
                dest_norm == r or dest_norm.startswith(r + "/") for r in _RESERVED_DESTS
            ):
                raise BwrapConfigError(
                    f"bwrap sandbox config: ro_binds may not target {dest!r} "
                    "(/, /proc and /dev are reserved)"
                )
            pairs.append((posixpath.normpath(host), dest_norm))
        return pairs


def accepted_keys() -> list[str]:
    """Names of the options `BwrapConfig` accepts."""
    return list(BwrapConfig.model_fields)


def parse_config(data: dict[str, Any]) -> BwrapConfig:
    """Validate a config dict, raising a one-line `BwrapConfigError` on any problem."""
    unknown = [str(key) for key in data if key not in BwrapConfig.model_fields]
    if unknown:
        raise BwrapConfigError(
            f"bwrap sandbox config: unknown option {unknown[0]!r}; "
            f"accepted options: {', '.join(accepted_keys())}"
        )
    try:
        return BwrapConfig.model_validate(data)
    except ValidationError as ex:
        err = ex.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "config"
        raise BwrapConfigError(
            f"bwrap sandbox config: invalid value for {where!r}: {err['msg']}"
        ) from None


def load_config(config: BaseModel | str | dict[str, Any] | None) -> BwrapConfig:
    """Resolve a sandbox config (None, YAML path, dict or model) to a `BwrapConfig`."""
    if config is None:
        return BwrapConfig()
    if isinstance(config, BwrapConfig):
        return config
    if isinstance(config, dict):
        return parse_config(config)
    if isinstance(config, BaseModel):
        raise BwrapConfigError(
            "bwrap sandbox config: expected BwrapConfig or a YAML path, "
            f"got {type(config).__name__}"
        )
    path = Path(config)
    if not path.is_file():
        raise BwrapConfigError(f"bwrap sandbox config: file not found: {config}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as ex:
        reason = (str(ex).splitlines() or [type(ex).__name__])[0]
        raise BwrapConfigError(
            f"bwrap sandbox config: {config} is not valid YAML ({reason})"
        ) from None
    if data is None:
        return BwrapConfig()
    if not isinstance(data, dict):
        raise BwrapConfigError(f"bwrap sandbox config: {config} must hold a mapping of options")
    return parse_config(data)
