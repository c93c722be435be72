"""`BwrapSandboxEnvironment`: Inspect's `bwrap` sandbox (bubblewrap, no container engine)."""

from __future__ import annotations

import errno
import logging
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
    SandboxUserUnsupportedError,
    sandboxenv,
)
from inspect_ai.util import (
    concurrency as concurrency_limit,
)
from pydantic import BaseModel
from typing_extensions import override

from docket.core.inspect_private import SANDBOX_CLI, max_subprocesses_context_var, warn_once

from . import cgroup
from .config import BwrapConfig, BwrapConfigError, load_config, parse_config
from .fileops import FILE_TOO_LARGE, file_error
from .layout import SANDBOX_UID, SANDBOX_USER, base_env, resolve_path
from .probe import ensure_bwrap, host_limits, run_as_uid
from .rlimits import agent_rlimits, service_rlimits
from .session import ExecFailed, RawResult, SandboxSession, StreamLimitExceeded
from .toolsupport import is_tool_bundle
from .uids import UidLease, check_uid_support, lease_uid

logger = logging.getLogger(__name__)
_UNSEALED = (
    "Inspect's tool support could not be sealed, so its server ends with each call "
    "(bash_session and text_editor lose their state)"
)
#: Time limit for read_file/write_file.
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


@sandboxenv(name="bwrap")
class BwrapSandboxEnvironment(SandboxEnvironment):
    """One long-lived bubblewrap sandbox per sample, with an exec service as its pid 1.

    Files in `/workspace` (the default cwd), `/tmp` and `$HOME` last for the sample; every
    process an `exec` starts ends with it (except Inspect's own tool-support server).
    """

    def __init__(
        self, config: BwrapConfig, session: SandboxSession, uid: UidLease | None = None
    ) -> None:
        super().__init__()
        self.config = config
        self.session = session
        #: "" once Inspect's tool support is sealed, a reason if that failed, None before
        self._sealing: str | None = None
        self.uid = uid

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
        host_limits(resolved, await ensure_bwrap(resolved))
        check_uid_support(resolved)

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        resolved = load_config(config)
        binary = await ensure_bwrap(resolved)
        limits = host_limits(resolved, binary)
        check_uid_support(resolved)
        uid = lease_uid(resolved)  # this sample's own host uid (its per-uid kernel pools)
        try:
            for host, _dest in resolved.bind_pairs():
                _check_bind_source(host, uid.uid)
            session = await SandboxSession.start(
                binary,
                resolved,
                run_as=uid.uid,
                seccomp=limits.seccomp,
                cgroups=limits.cgroups,
                rlimits=agent_rlimits(resolved, limits.cgroups.available),
                service_rlimits=service_rlimits(resolved, limits.cgroups.available),
            )
        except BaseException:
            uid.release()
            raise
        return {"default": cls(resolved, session, uid)}

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
                await environment.session.close()
                if environment.uid is not None:  # nothing of the sandbox is left: reusable
                    environment.uid.release()

    @override
    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        pass  # each sample's sandbox is gone with its sample; nothing is left on disk

    @override
    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        for path in cgroup.remove_leftovers():
            print(f"Removed {path}")

    # -- commands --------------------------------------------------------------------------

    async def _run(
        self,
        argv: list[str] | None,
        *,
        input: bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float | None,
        stdout_limit: int,
        stderr_limit: int,
        throttle: bool,
        builtin: str | None = None,
        args: list[Any] | None = None,
    ) -> RawResult:
        async def go() -> RawResult:
            return await self.session.exec(
                argv,
                input=input,
                cwd=resolve_path(cwd),
                env={**base_env(self.config), **env},
                timeout=timeout,
                stdout_limit=stdout_limit,
                stderr_limit=stderr_limit,
                # a request: the service grants it only to the sealed launcher's inode
                detached=argv is not None and argv[:1] == [SANDBOX_CLI],
                builtin=builtin,
                args=args,
            )

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
        raw_input = input.encode("utf-8") if isinstance(input, str) else input
        try:
            raw = await self._run(
                cmd,
                input=raw_input,
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
        except ExecFailed as ex:
            if ex.errno in (errno.EACCES, errno.EPERM, errno.ENOEXEC):
                raise PermissionError(
                    ex.errno, "Permission denied (cannot execute)", cmd[0]
                ) from None
            raise
        if raw.returncode == 0 and self._sealing is None and is_tool_bundle(raw_input):
            self._sealing = await self.session.seal_tools(raw_input or b"") or ""
            if self._sealing:
                warn_once(logger, f"bwrap sandbox: {_UNSEALED}: {self._sealing}")
        return ExecResult(
            success=raw.returncode == 0,
            returncode=raw.returncode,
            stdout=raw.stdout.decode("utf-8", errors="replace"),
            stderr=raw.stderr.decode("utf-8", errors="replace"),
        )

    # -- files -----------------------------------------------------------------------------

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        raw = await self._run(
            None,
            input=contents.encode("utf-8") if isinstance(contents, str) else contents,
            cwd="/",  # the path is absolute: the workspace's mode must not matter
            env={},
            timeout=_FILE_OP_TIMEOUT,
            stdout_limit=_STDERR_LIMIT_FILE_OPS,
            stderr_limit=_STDERR_LIMIT_FILE_OPS,
            throttle=True,
            builtin="write",
            args=[resolve_path(file)],
        )
        if raw.returncode != 0:
            raise file_error(raw.returncode, file, raw.stderr)

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
                None,
                input=None,
                cwd="/",
                env={},
                timeout=_FILE_OP_TIMEOUT,
                stdout_limit=limit,
                stderr_limit=_STDERR_LIMIT_FILE_OPS,
                throttle=True,
                builtin="read",
                args=[resolve_path(file), limit],
            )
        except StreamLimitExceeded:
            raise too_large from None
        if raw.returncode == FILE_TOO_LARGE:
            raise too_large
        if raw.returncode != 0:
            raise file_error(raw.returncode, file, raw.stderr)
        return raw.stdout.decode("utf-8") if text else raw.stdout

    @override
    def default_polling_interval(self) -> float:
        return 0.2
