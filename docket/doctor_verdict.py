"""`docket doctor`'s last line: which failed checks block which tasks, in words.

A failed sandbox check blocks only the tasks that run in a sandbox (the others run whatever the
sandbox), a failed model check blocks every task on that model; a failure that blocks neither
the chosen sandbox nor the chosen models is named as what it would block, so "ready" never
follows `fail` lines without saying what those lines stop.
"""

from __future__ import annotations

import inspect as pyinspect
from collections.abc import Sequence

from docket.doctor import SANDBOXES, Finding, model_kind


def sandbox_tasks() -> list[str]:
    """The registered docket tasks that take a `sandbox` argument (they run in one).

    Returns:
        Task names in registry order.
    """
    from inspect_ai._util.registry import registry_lookup

    from docket._registry import REGISTERED

    found = []
    for name in REGISTERED["task"]:
        task = registry_lookup("task", name)
        try:
            if callable(task) and "sandbox" in pyinspect.signature(task).parameters:
                found.append(name)
        except (TypeError, ValueError):
            continue
    return found


def _tasks_text(tasks: list[str]) -> str:
    shown = ", ".join(t.removeprefix("docket/") for t in tasks[:4])
    more = f", +{len(tasks) - 4} more" if len(tasks) > 4 else ""
    return f"the {len(tasks)} tasks that run in a sandbox ({shown}{more})"


def _blocked(every: Sequence[Finding]) -> dict[str, list[str]]:
    """The failed items by what they block (`bwrap`, `docker`, a model name)."""
    found: dict[str, list[str]] = {}
    for finding in every:
        if finding.level == "fail":
            for target in sorted(finding.blocks):
                found.setdefault(target, []).append(finding.item)
    return found


def _what(target: str) -> str:
    return f"-T sandbox={target}" if target in SANDBOXES else f"--model {target}"


def verdict(every: Sequence[Finding], sandbox: str, models: Sequence[str]) -> str:
    """The doctor's last line.

    Args:
        every: Every finding printed above it.
        sandbox: The sandbox kind of the run.
        models: The models of the run.

    Returns:
        `ready (...)` or `cannot run (...)`, then which failed checks block which tasks.
    """
    wanted = ", ".join([f"sandbox {sandbox}", *models])
    blocked = _blocked(every)
    chosen = {sandbox, *(model_kind(m) for m in models)}
    stops = {t: items for t, items in blocked.items() if t in chosen}
    others = {t: items for t, items in blocked.items() if t not in chosen}
    said = []
    if sandbox in stops:
        tasks = sandbox_tasks()
        said.append(
            f"{', '.join(stops[sandbox])} failed, so {_tasks_text(tasks)} cannot run on "
            f"{sandbox}; tasks without a sandbox can"
        )
    for target, items in stops.items():
        if target != sandbox:
            said.append(f"{', '.join(items)} failed, so no task can run on {target}")
    if not stops and blocked:
        said.append(f"every task can run on {sandbox}")
    if others:
        rest = ", ".join(f"{_what(t)} ({', '.join(items)})" for t, items in others.items())
        said.append(f"the fail lines block only other choices: {rest}")
    head = f"cannot run ({wanted})" if stops else f"ready ({wanted})"
    return f"{head}: {'; '.join(said)}" if said else head
