"""Which model plays each role of a suite task, and where that binding came from.

No hidden models: a role a task can use is bound only from what the user named (a `--role`
flag, the preset they chose, or the model under test), and `docket suite --dry-run` prints the
source of each. An optional role is bound only when the task's `-T` arguments make it use the
role (its listing's `optional_when`; e.g. anchor's `emulator` needs `-T emulator=true`), so an
unused role is never probed or called. When the models under test run on the user's own server
(`--base-url`, `-M base_url=`, an `openai/` model with `OPENAI_BASE_URL` off api.openai.com, or
`openai-api/...`), a preset's network role that is not on that server is bound to the model under
test instead of a provider the user never pointed the run at.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from docket import endpoints
from docket.benchmarks.presets import listed_tasks

if TYPE_CHECKING:
    from docket.suite import ModelSpec

#: Where a role's binding came from, as `--dry-run` prints it.
FROM_FLAG = "--role"
FROM_UNDER_TEST = "the model under test"
FROM_LISTING = "the listing's scripted policy"


@dataclass(frozen=True)
class RoleBinding:
    """One role of one task: its model and the source of that binding.

    Attributes:
        model: The bound model.
        source: Where the binding came from (`--role`, `preset api`, ...).
    """

    model: ModelSpec
    source: str


def role_help(task: str) -> dict[str, str]:
    """What each role of `task` does, from its listing's `role_help`.

    Args:
        task: A task name (`docket/<task>`).

    Returns:
        One sentence per role (empty for a role the listing does not describe).
    """
    listed = listed_tasks().get(task) or {}
    return {str(k): str(v) for k, v in (listed.get("role_help") or {}).items()}


def optional_when(task: str) -> dict[str, dict[str, Any]]:
    """The `-T` arguments that make `task` use each optional role (its listing's
    `optional_when`; a role not named there is used whenever it is bound).

    Args:
        task: A task name.

    Returns:
        The arguments by role.
    """
    listed = listed_tasks().get(task) or {}
    return {str(k): dict(v or {}) for k, v in (listed.get("optional_when") or {}).items()}


def uses_optional(task: str, role: str, task_args: dict[str, Any]) -> bool:
    """Whether `task` run with `task_args` uses its optional `role`.

    Args:
        task: A task name.
        role: One of its optional roles.
        task_args: The `-T` arguments of the run.

    Returns:
        True when every argument of the role's `optional_when` has that value (or it has none).
    """
    wanted = optional_when(task).get(role, {})
    return all(task_args.get(key) == value for key, value in wanted.items())


def when_text(task: str, role: str) -> str:
    """`-T emulator=true`: the arguments that turn an optional role on, as flags."""
    wanted = optional_when(task).get(role, {})
    shown = (str(v).lower() if isinstance(v, bool) else str(v) for v in wanted.values())
    return " ".join(f"-T {k}={v}" for k, v in zip(wanted, shown, strict=True))


def on_own_server(spec: ModelSpec) -> bool:
    """Whether `spec` is served by a server the user named rather than a provider's default.

    Args:
        spec: A model under test.

    Returns:
        True for a base URL (`--base-url`, `-M base_url=`), an `openai/` model with
        `OPENAI_BASE_URL` set off api.openai.com, and `openai-api/<provider>/<model>`.
    """
    if spec.base_url or spec.args.get("base_url") or spec.model.startswith("openai-api/"):
        return True
    url = os.environ.get("OPENAI_BASE_URL", "")
    return spec.model.startswith("openai/") and bool(url) and "api.openai.com" not in url


def _same_server(role: ModelSpec, model: ModelSpec) -> bool:
    if role == model:
        return True
    if role.model.split("/", 1)[0] != model.model.split("/", 1)[0]:
        return False
    mine = role.base_url or role.args.get("base_url")
    theirs = model.base_url or model.args.get("base_url")
    return mine == theirs and mine is not None


def bind_roles(
    task: str,
    bound: dict[str, ModelSpec],
    flags: set[str],
    source: str,
    under_test: list[ModelSpec],
    task_args: dict[str, Any],
) -> dict[str, RoleBinding]:
    """The roles `task` gets, each with its source, from the preset's (and flags') bindings.

    Args:
        task: A task name.
        bound: The role bindings of the preset, the `--role` flags merged in (a listed task
            gets only its required roles and the optional ones it uses or `--role` names).
        flags: The roles given with `--role`.
        source: How the preset's own bindings are named (`preset api`).
        under_test: The stage's models under test.
        task_args: The task's `-T` arguments.

    Returns:
        The bindings by role name.
    """
    listed = listed_tasks().get(task)
    if listed is None:
        wanted = list(bound)
    else:
        optional = [
            r
            for r in listed.get("optional_roles") or []
            if r in flags or uses_optional(task, r, task_args)
        ]
        wanted = [*(listed.get("roles") or []), *optional]
    own = next((m for m in under_test if on_own_server(m)), None)
    found: dict[str, RoleBinding] = {}
    for role in wanted:
        if role not in bound:
            continue
        spec = bound[role]
        if role in flags:
            found[role] = RoleBinding(spec, FROM_FLAG)
        elif own is not None and endpoints.is_network(spec.model) and not _same_server(spec, own):
            note = f"{FROM_UNDER_TEST}: {source}'s {spec.model} is not on your server"
            found[role] = RoleBinding(own, note)
        else:
            found[role] = RoleBinding(spec, source)
    return found


def role_flag(role: str) -> str:
    """The flag that binds `role` (`--role emulator=<provider/model>`)."""
    return f"--role {role}=<provider/model>"
