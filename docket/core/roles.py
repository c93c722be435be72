"""Model roles a task needs: an unbound role stops the eval with one line, never a silent fallback.

`require_roles` runs in the `@task` function. Inside `inspect eval` / `eval("docket/...")` the
roles are already bound when the task is built, so a missing one raises `PrerequisiteError`
there (Inspect prints its one line). A task built in Python before `eval(task, model_roles=...)`
cannot see its roles yet; `role_model` repeats the check inside the solver or scorer that uses
the role, where the roles are known.
"""

from __future__ import annotations

from collections.abc import Sequence

from inspect_ai.model import Model, get_model, model_roles

from docket.core.inspect_private import PrerequisiteError, active_model


class RoleUnboundError(PrerequisiteError):
    """A model role the task needs was not bound and playing it with the model under test
    was not asked for."""


def unbound_message(task: str, role: str, self_flag: str) -> str:
    """The one line that names the role, how to bind it, and the opt-in to self-play."""
    return (
        f"{task}: the '{role}' model role is unbound; bind it with "
        f"--model-role {role}=<provider/model> (Python: model_roles={{'{role}': ...}}), "
        f"or pass -T {self_flag}=true to let the model under test play it"
    )


def require_roles(task: str, roles: Sequence[str], *, allow_self: bool, self_flag: str) -> None:
    """Raise `RoleUnboundError` for the first of `roles` that is unbound, when an eval is being
    set up and `allow_self` is false. Outside an eval (no active model) this defers to
    `role_model`."""
    if allow_self or active_model() is None:
        return
    bound = model_roles()
    for role in roles:
        if role not in bound:
            raise RoleUnboundError(unbound_message(task, role, self_flag))


def role_model(task: str, role: str, *, allow_self: bool, self_flag: str) -> Model:
    """The model bound to `role`; the model under test only when `allow_self` says so."""
    if role in model_roles():
        return get_model(role=role)
    if allow_self:
        return get_model()
    raise RoleUnboundError(unbound_message(task, role, self_flag))
