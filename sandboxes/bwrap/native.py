"""`execinit`, the exec service's native per-exec helper: built on first use, cached by hash.

Every exec's pid namespace, its init and the prepared command are made by `execinit.c`
(spawned by the service) rather than by two forks of the service's Python interpreter: the
same steps and limits at a fraction of the CPU (`sandbox_exec_cpu` in `benchmarks/perf`).
The helper is compiled with the machine's C compiler (`cc`, static where libc's archive is
installed) the first time a sandbox starts, into `$TMPDIR/docket-bin-<uid>/` under a name
holding the hash of its source and flags, and travels into each sandbox as a private
read-only copy, as the service's own source does. Without a compiler, or with
`DOCKET_BWRAP_NATIVE=0`, the service keeps its Python path (one logged line says why).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from docket.core.inspect_private import PrerequisiteError, warn_once

from .layout import private_dir

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("execinit.c")
#: Compiler flags, static first (no dynamic loader per exec), then dynamic.
FLAGS = (
    ("-O2", "-Wall", "-Wextra", "-static", "-s"),
    ("-O2", "-Wall", "-Wextra", "-s"),
)
_COMPILE_TIMEOUT = 120.0


def enabled() -> bool:
    """Whether execs may take the native path (`DOCKET_BWRAP_NATIVE=0` turns it off)."""
    return os.environ.get("DOCKET_BWRAP_NATIVE", "1") != "0"


def helper() -> bytes | None:
    """The `execinit` executable's bytes, or None when execs keep the Python path.

    Returns:
        The binary (built now, or found in the cache), or None when it is turned off or
        cannot be built here (logged once, naming the reason).
    """
    if not enabled():
        return None
    return _built()


@functools.cache
def _built() -> bytes | None:
    try:
        return _compile().read_bytes()
    except (OSError, subprocess.SubprocessError, ValueError, PrerequisiteError) as ex:
        reason = str(ex).strip().splitlines()[0][:200] if str(ex).strip() else type(ex).__name__
        warn_once(
            logger,
            f"bwrap sandbox: no native exec helper ({reason}); execs take the exec service's "
            "Python path, which costs more CPU per exec (install a C compiler, `cc`)",
        )
        return None


def unusable(why: str) -> None:
    """Log (once) that a sandbox's service could not run the helper it was given.

    Args:
        why: the service's one line.
    """
    warn_once(logger, f"bwrap sandbox: execs take the exec service's Python path: {why}")


def _compile() -> Path:
    """The cached binary for this source (compiled first when missing)."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        raise OSError("no C compiler (`cc`) on PATH")
    source = SOURCE.read_bytes()
    errors: list[str] = []
    for flags in FLAGS:
        digest = hashlib.sha256(source + "\0".join(flags).encode()).hexdigest()[:16]
        target = Path(private_dir()) / f"execinit-{digest}"
        if _usable(target):
            return target
        fd, scratch = tempfile.mkstemp(prefix=".execinit-", dir=target.parent)
        os.close(fd)
        try:
            done = subprocess.run(
                [compiler, *flags, "-o", scratch, str(SOURCE)],
                capture_output=True,
                text=True,
                timeout=_COMPILE_TIMEOUT,
                check=False,
            )
            if done.returncode == 0:
                os.chmod(scratch, 0o755)
                os.replace(scratch, target)  # atomic: a concurrent build writes the same bytes
                return target
            errors.append((done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])
        finally:
            if os.path.exists(scratch):
                os.unlink(scratch)
    raise ValueError(f"{compiler} failed: {errors[-1]}")


def _usable(path: Path) -> bool:
    """A regular file of ours that no group or other user can write (never a symlink)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


__all__ = ["SOURCE", "enabled", "helper", "unusable"]
