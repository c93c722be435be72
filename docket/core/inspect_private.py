"""What docket uses from Inspect's private modules, imported in this one place.

Inspect (`inspect_ai`) keeps these names in underscored modules, which may move between
releases; every docket module imports them from here, so a move is one edit. Names whose
module is known to have moved fall back to a stand-in (noted at each).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from inspect_ai._eval.registry import task_create
from inspect_ai._util import logger as inspect_logger
from inspect_ai._util.config import parse_cli_args
from inspect_ai._util.error import PrerequisiteError
from inspect_ai._util.logger import warn_once
from inspect_ai._util.registry import RegistryType, registry_lookup
from inspect_ai.log._samples import active_samples, sample_active
from inspect_ai.model import GenerateConfig, Model
from inspect_ai.model._generate_config import active_generate_config
from inspect_ai.model._model import active_model, init_model_roles
from inspect_ai.model._model_info import _get_model_info_direct as model_info_direct
from inspect_ai.scorer._classification import max_f1_score
from inspect_ai.util._sandbox.compose import parse_compose_yaml
from inspect_ai.util._sandbox.docker.compose import compose_command
from inspect_ai.util._sandbox.docker.docker import DockerSandboxEnvironment
from inspect_ai.util._sandbox.environment import deserialize_sandbox_specific_config
from inspect_ai.util._sandbox.limits import (
    override_max_exec_output_size,
    override_max_read_file_size,
)
from inspect_ai.util._sandbox.local import LocalSandboxEnvironment

#: Model's per-call context manager holding a slot of its connection pool (`max_connections`)
#: around each call and its retries, outside the attempt timeout.
_CONNECTION_SLOT = "_connection_concurrency"
_WRAPPED = "_docket_slot_wrapped"

try:
    from inspect_ai.util._sandbox._cli import SANDBOX_CLI
except ImportError:  # pragma: no cover - older/newer Inspect layouts
    SANDBOX_CLI = "/var/tmp/.da7be258e003d428/inspect-sandbox-tools"

try:
    from inspect_ai.util._subprocess import max_subprocesses_context_var
except ImportError:  # pragma: no cover - older/newer Inspect layouts
    max_subprocesses_context_var = None  # type: ignore[assignment]

__all__ = [
    "DockerSandboxEnvironment",
    "compose_command",
    "SANDBOX_CLI",
    "LocalSandboxEnvironment",
    "PrerequisiteError",
    "RegistryType",
    "active_generate_config",
    "active_model",
    "active_samples",
    "deserialize_sandbox_specific_config",
    "init_model_roles",
    "inspect_logger",
    "max_f1_score",
    "max_subprocesses_context_var",
    "model_info_direct",
    "override_max_exec_output_size",
    "override_max_read_file_size",
    "parse_cli_args",
    "parse_compose_yaml",
    "registry_lookup",
    "sample_active",
    "task_create",
    "warn_once",
    "wrap_connection_slot",
]


def wrap_connection_slot(
    model: Model, outer: Callable[[], contextlib.AbstractAsyncContextManager[Any]]
) -> None:
    """Hold `outer()` around every call `model` makes, inside its own connection slot.

    Inspect holds a slot of the model's connection pool (`max_connections`) around each call
    and its retries, outside the attempt timeout; `outer` is entered once that slot is held
    (a cluster-wide limit: waiting for it does not count against `attempt_timeout`). A model
    wrapped before is left as it is.

    Args:
        model: An Inspect model (memoized instances are shared: the wrap is idempotent).
        outer: Makes the context to hold around one call.
    """
    if getattr(model, _WRAPPED, False):
        return
    inner = getattr(model, _CONNECTION_SLOT, None)
    if inner is None:  # pragma: no cover - a future Inspect without it
        raise RuntimeError(f"Inspect's Model has no {_CONNECTION_SLOT}: docket cannot cap calls")

    @contextlib.asynccontextmanager
    async def held(config: GenerateConfig) -> AsyncIterator[Any]:
        async with inner(config) as connection, outer():
            yield connection

    setattr(model, _CONNECTION_SLOT, held)
    setattr(model, _WRAPPED, True)
