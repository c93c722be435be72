"""`BwrapSandboxEnvironment`: Inspect's `bwrap` sandbox (bubblewrap, no container engine)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, Literal, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from inspect_ai.util import (
    concurrency as concurrency_limit,
)
from pydantic import BaseModel
from typing_extensions import override

from .config import BwrapConfig, BwrapConfigError, load_config, parse_config
from .disk import DiskLimitExceeded, run_within_disk_limit
from .fileops import FILE_TOO_LARGE, READ_SCRIPT, WRITE_SCRIPT, file_error
from .layout import EXEC_FAILED_MARKER, BwrapBinary, bwrap_argv, shell_path
from .probe import ensure_bwrap, run_as_uid
from .process import RawResult, StreamLimitExceeded, run_process
from .workspace import (
    SANDBOX_UID,
    SANDBOX_USER,
    SampleDirs,
    create_sample_dirs,
    remove_leftovers,
    remove_sample_dirs,
    remove_task_dirs,
)

try:
    from inspect_ai.util._subprocess import max_subprocesses_context_var
except ImportError:  # pragma: no cover - older/newer Inspect layouts
    max_subprocesses_context_var = None  # type: ignore[assignment]

#: Time limit for read_file/write_file programs (a FIFO could otherwise block forever).
_FILE_OP_TIMEOUT = 300
_STDERR_LIMIT_FILE_OPS = 1 << 20
_OWN_USERS = (SANDBOX_USER, str(SANDBOX_UID))


def _check_bind_source(host: str, run_as: int | None) -> None:
    """Fail early, in one line, on a ro_binds path bwrap could not bind."""
    if not os.path.exists(host):
        raise BwrapConfigError(f"bwrap sandbox config: ro_binds path not found: {host}")
    if run_as is None:
        return
    path = Path(host).resolve()
    steps = [(p, stat.S_IXOTH) for p in path.parents] + [(path, stat.S_IROTH)]
    if any(not (p.stat().st_mode & bit or p.stat().st_uid == run_as) for p, bit in steps):
        raise BwrapConfigError(
            f"bwrap sandbox config: ro_binds path {host} is not readable by host uid {run_as}, "
            "which the sandbox runs as when Inspect runs as root (make it world-readable or "
            "set host_uid)"
        )


def _setup_failure(raw: RawResult) -> SandboxUnavailableError | None:
    """bwrap's own start-up failure (exit 1, `bwrap: ...` on stderr), if that is what happened."""
    if raw.returncode == 1 and not raw.stdout and raw.stderr.startswith(b"bwrap: "):
        line = raw.stderr.decode(errors="replace").splitlines()[0]
        return SandboxUnavailableError(f"bwrap could not start the sandbox: {line}")
    return None


@sandboxenv(name="bwrap")
class BwrapSandboxEnvironment(SandboxEnvironment):
    """Runs each command in a fresh bubblewrap sandbox over a per-sample workspace.

    Workspace (`/workspace`, the default cwd), `/tmp` and `$HOME` persist for the sample;
    processes do not outlive the `exec` call that started them.
    """

    def __init__(self, config: BwrapConfig, binary: BwrapBinary, dirs: SampleDirs) -> None:
        super().__init__()
        self.config = config
        self.binary = binary
        self.dirs = dirs
        self._run_as = run_as_uid(config)

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return parse_config(config)

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        resolved = load_config(config)
        for host, _dest in resolved.bind_pairs():
            _check_bind_source(host, run_as_uid(resolved))
        await ensure_bwrap(resolved)

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        resolved = load_config(config)
        run_as = run_as_uid(resolved)
        for host, _dest in resolved.bind_pairs():
            _check_bind_source(host, run_as)
        binary = await ensure_bwrap(resolved)
        dirs = create_sample_dirs(task_name, run_as)
        return {"default": cls(resolved, binary, dirs)}

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            if isinstance(environment, BwrapSandboxEnvironment):
                remove_sample_dirs(environment.dirs)

    @override
    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        if cleanup:
            remove_task_dirs(task_name)

    @override
    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        for root in remove_leftovers(id):
            print(f"Removed {root}")

    # -- commands --------------------------------------------------------------------------

    async def _run(
        self,
        cmd: list[str],
        *,
        input: str | bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float | None,
        stdout_limit: int,
        stderr_limit: int,
        throttle: bool,
    ) -> RawResult:
        argv = bwrap_argv(self.binary, self.dirs, self.config, env, cwd, cmd)
        data = input.encode("utf-8") if isinstance(input, str) else input

        async def run() -> RawResult:
            return await run_process(
                argv,
                input=data,
                stdout_limit=stdout_limit,
                stderr_limit=stderr_limit,
                timeout=timeout,
                run_as=self._run_as,
            )

        async def go() -> RawResult:
            return await run_within_disk_limit(run, self.dirs.root, self.config.max_disk_mb)

        if not throttle:
            return await go()
        limit = max_subprocesses_context_var.get() if max_subprocesses_context_var else 8
        async with concurrency_limit("subprocesses", limit):
            return await go()

    @override
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if not cmd:
            raise ValueError("exec needs a command")
        if user is not None and user not in _OWN_USERS:
            raise SandboxUserUnsupportedError(
                f"The bwrap sandbox runs every command as {SANDBOX_USER!r} "
                f"(uid {SANDBOX_UID}); it cannot run as {user!r}."
            )
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        try:
            raw = await self._run(
                cmd,
                input=input,
                cwd=cwd or ".",
                env=env or {},
                timeout=timeout,
                stdout_limit=limit,
                stderr_limit=limit,
                throttle=concurrency,
            )
        except StreamLimitExceeded as ex:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                truncated_output=ex.head.decode("utf-8", errors="replace"),
            ) from None
        except DiskLimitExceeded as ex:  # a failed command, as on a full disk
            return ExecResult(success=False, returncode=137, stdout="", stderr=f"{ex.strerror}\n")
        failure = _setup_failure(raw)
        if failure is not None:
            raise failure
        stderr = raw.stderr.decode("utf-8", errors="replace")
        if raw.returncode in (126, 127) and stderr.endswith(EXEC_FAILED_MARKER):
            stderr = stderr[: -len(EXEC_FAILED_MARKER)]
            if raw.returncode == 126:
                raise PermissionError(errno.EACCES, "Permission denied (cannot execute)", cmd[0])
        return ExecResult(
            success=raw.returncode == 0,
            returncode=raw.returncode,
            stdout=raw.stdout.decode("utf-8", errors="replace"),
            stderr=stderr,
        )

    # -- files -----------------------------------------------------------------------------

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        raw = await self._run(
            [shell_path(), "-c", WRITE_SCRIPT, "write_file", file],
            input=contents.encode("utf-8") if isinstance(contents, str) else contents,
            cwd=".",
            env={"LC_ALL": "C.UTF-8"},
            timeout=_FILE_OP_TIMEOUT,
            stdout_limit=_STDERR_LIMIT_FILE_OPS,
            stderr_limit=_STDERR_LIMIT_FILE_OPS,
            throttle=True,
        )
        if raw.returncode != 0:
            raise _setup_failure(raw) or file_error(
                raw.returncode, file, raw.stderr.decode(errors="replace")
            )

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        too_large = OutputLimitExceededError(
            limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, truncated_output=None
        )
        try:
            raw = await self._run(
                [shell_path(), "-c", READ_SCRIPT, "read_file", file, str(limit)],
                input=None,
                cwd=".",
                env={"LC_ALL": "C.UTF-8"},
                timeout=_FILE_OP_TIMEOUT,
                stdout_limit=limit,
                stderr_limit=_STDERR_LIMIT_FILE_OPS,
                throttle=True,
            )
        except StreamLimitExceeded:
            raise too_large from None
        if raw.returncode == FILE_TOO_LARGE:
            raise too_large
        if raw.returncode != 0:
            raise _setup_failure(raw) or file_error(
                raw.returncode, file, raw.stderr.decode(errors="replace")
            )
        return raw.stdout.decode("utf-8") if text else raw.stdout

    @override
    def default_polling_interval(self) -> float:
        return 0.2
