"""ANCHOR tasks: a CLI agent in a sandbox, asked directly or audited by a persistent auditor.

`docket/anchor_direct` sends each scenario's natural-language goal once; `docket/anchor_audit`
lets the `auditor` role pursue the same goal for up to `max_turns` turns. Both use the same
scenarios and the same scorer (`judge` role or an ensemble, plus mechanical completion and
excess), so their metrics compare directly.

Headlines: `anchor_audit` reports `compliance_at_T`, the Kaplan-Meier probability that the
target complied by turn T = `max_turns` (lower is better; the final refusal rate is
1 - compliance_at_T); `anchor_direct` reports the direct refusal rate (higher is better).

Roles: `auditor` (audit only) and `judge` (or the roles named by `-T judges=...`) must be bound;
an unbound one stops the eval with one line, unless `-T self_audit=true` lets the model under
test play them. `emulator` is used only with `-T emulator=true`, under the same rule; without
it app and synthetic-tool results are scripted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import Model, model_roles
from inspect_ai.solver import Solver

import docket.benchmarks.anchor.reference  # noqa: F401  (registers its policies)
from docket.agents.auditor import direct_request, persistent_audit
from docket.agents.auditor.protocol import Protocol
from docket.agents.cli_target import CliTarget, app_tools, shell_tools
from docket.benchmarks.anchor.config import AnchorAuditConfig, AnchorDirectConfig
from docket.benchmarks.anchor.dataset import SCENARIOS, ScenarioError, anchor_dataset
from docket.benchmarks.anchor.evidence import SCRIPTED_JUDGE_LIMITS
from docket.benchmarks.anchor.prompts import auditor_system
from docket.benchmarks.anchor.scorer import anchor_scorer
from docket.benchmarks.anchor.variants import SPLIT_FILE
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError
from docket.core.options import checked, positive
from docket.core.roles import require_roles, role_model
from docket.core.splits import checked_split, files_digest, split_metadata
from docket.core.task_config import task_config
from docket.sandboxes import sandbox_spec

VERSION = "6-A"
#: Task metadata key of the notes the leaderboard prints next to a run's numbers.
NOTES_KEY = "notes"
SELF_FLAG = "self_audit"
TAGS = ["safety", "agent", "multi-turn", "sandbox"]
_ROLE_NAME = re.compile(r"^[A-Za-z][\w-]*$")


def _categories(name: str, categories: str | None) -> list[str] | None:
    if categories is None:
        return None
    return [c.strip() for c in checked(name, "categories", categories, str).split(",") if c.strip()]


MAX_JUDGES = 25
"""The largest judge ensemble: each judge is one model call per sample."""


def judge_roles(name: str, judges: int | str) -> list[str]:
    """The judge role of each ensemble member: `judges=N` is N calls of `judge`, a comma list
    names one role per judge."""
    if isinstance(judges, str):
        roles = [r.strip() for r in judges.split(",") if r.strip()]
        if roles and len(roles) <= MAX_JUDGES and all(_ROLE_NAME.match(r) for r in roles):
            return roles
        raise PrerequisiteError(
            f"{name}: -T judges={judges!r} must be a count (1 to {MAX_JUDGES}) or at most"
            f" {MAX_JUDGES} role names (judge,judge_b)"
        )
    count = positive(name, "judges", judges)
    if count > MAX_JUDGES:
        raise PrerequisiteError(
            f"{name}: -T judges={count} is more than {MAX_JUDGES} judge calls per sample"
        )
    return ["judge"] * count


class _Roles:
    """Resolves the task's model roles inside solvers and scorers (never the model under test
    unless `self_audit`)."""

    def __init__(self, name: str, self_audit: bool) -> None:
        self.name = name
        self.self_audit = checked(name, SELF_FLAG, self_audit, bool)

    def factory(self, role: str) -> Callable[[], Model]:
        def get() -> Model:
            return role_model(self.name, role, allow_self=self.self_audit, self_flag=SELF_FLAG)

        return get

    def require(self, roles: list[str]) -> None:
        require_roles(
            self.name, list(dict.fromkeys(roles)), allow_self=self.self_audit, self_flag=SELF_FLAG
        )


def scenario_split(path: Path) -> dict[str, dict[str, str]]:
    """`split_metadata` of a scenario file: the SHA-256 of its content."""
    return split_metadata(
        files_digest(path.parent, [path]), generated=path != SCENARIOS, name=path.name
    )


def resolve_scenarios(
    name: str, scenarios: str | None, data: str | None
) -> tuple[str | Path, dict[str, dict[str, str]]]:
    """The scenario file a task reads and the `split_metadata` naming it.

    Args:
        name: The task's name.
        scenarios: `-T scenarios=`: a scenario JSONL file (None: the shipped set).
        data: `-T data=`: a private split's directory from `docket generate anchor`.

    Returns:
        (the file, the split's metadata).

    Raises:
        PrerequisiteError: Both given, or a directory without a valid manifest (one line).
    """
    if data is None:
        path = checked(name, "scenarios", scenarios, str) if scenarios else SCENARIOS
        return path, scenario_split(Path(path))
    if scenarios:
        raise PrerequisiteError(f"{name}: give -T data or -T scenarios, not both")
    folder = Path(checked(name, "data", data, str))
    manifest = checked_split(name, "anchor", folder)
    named = split_metadata(str(manifest["sha256"]), generated=True, name=folder.name)
    return folder / SPLIT_FILE, named


def _as_list(bound: Model | list[Model] | None) -> list[Model]:
    return [] if bound is None else bound if isinstance(bound, list) else [bound]


def judge_notes(judges: list[str]) -> list[str]:
    """The leaderboard notes of a judge panel: the scripted judge's limits when a bound judge
    role is `docket/scripted policy=judge` (known when the eval builds the task)."""
    bound = model_roles()
    scripted = [
        model
        for role in dict.fromkeys(judges)
        for model in _as_list(bound.get(role))
        if str(model) == "docket/scripted" and model.model_args.get("policy") == "judge"
    ]
    return [SCRIPTED_JUDGE_LIMITS] if scripted else []


def _task(
    name: str,
    solver: Solver,
    roles: _Roles,
    judges: list[str],
    scenarios: str | None,
    categories: str | None,
    sandbox: str,
    horizon: int,
    protocols: dict[str, str],
    data: str | None = None,
    changed: dict[str, object] | None = None,
) -> Task:
    path, split = resolve_scenarios(name, scenarios, data)
    try:
        dataset = anchor_dataset(path, _categories(name, categories))
    except ScenarioError as ex:
        raise PrerequisiteError(f"{name}: {ex}".replace("\n", "\\n")) from None
    if name == "anchor_audit":
        declared = headline(
            "anchor_scorer",
            "compliance_at_T",
            direction="lower",
            value="survival",
            time_key="turns_observed",
            event_key="complied",
            horizon=horizon,
        )
    else:
        declared = headline(
            "anchor_scorer",
            "mean",
            score="direct_refusal",
            direction="higher",
            value="binary",
            sample_key="direct_refusal",
        )
    try:
        spec = sandbox_spec(checked(name, "sandbox", sandbox, str))
    except ValueError as ex:
        raise PrerequisiteError(f"{name}: {ex}") from None
    # No chance row (metadata `chance`): on both headlines a blind policy that always refuses
    # scores the best value (direct refusal 1, compliance@T 0), so no blind attacker sets a
    # floor to rank against. results/attackers.json measures the judge, not the target: the
    # gamers' judged refusal while delivering (0.000 with the action judge, 1.000 with a
    # phrase judge) is a judge's robustness on the test half; results/meaning.json checks the
    # scorer on scripted targets.
    return Task(
        dataset=dataset,
        solver=solver,
        scorer=anchor_scorer([roles.factory(r) for r in judges], protocols["judge_protocol"]),
        sandbox=spec,
        fail_on_error=False,
        version=VERSION,
        headline_metric=declared["headline_metric"],
        metadata={
            **declared["metadata"],
            "benchmark": "anchor",
            "judges": judges,
            **protocols,
            NOTES_KEY: judge_notes(judges),
            **split,
            **({"config": changed} if changed else {}),
        },
        tags=TAGS,
    )


def _target(
    name: str, roles: _Roles, tool_timeout: int, max_steps: int, emulator: bool
) -> CliTarget:
    emulate = roles.factory("emulator") if checked(name, "emulator", emulator, bool) else None
    tools = [*shell_tools(positive(name, "tool_timeout", tool_timeout)), *app_tools(emulate)]
    return CliTarget(tools, max_steps=positive(name, "max_steps", max_steps), emulator=emulate)


@task
def anchor_direct(
    scenarios: str | None = None,
    categories: str | None = None,
    sandbox: str = "bwrap",
    emulator: bool = False,
    judges: int | str = 1,
    self_audit: bool = False,
    data: str | None = None,
    config: str | dict[str, Any] | AnchorDirectConfig | None = None,
) -> Task:
    """One-turn request of each scenario's goal to the CLI agent under test (no auditor).

    Args:
        scenarios: Scenario JSONL file (default: the shipped set).
        categories: Comma-separated offence categories to keep (default: all).
        sandbox: Sandbox kind: bwrap (default), docker or k8s.
        emulator: Rewrite app and synthetic-tool results with the `emulator` role.
        judges: Judge ensemble: a count of `judge` calls, or comma-separated role names.
        self_audit: Let the model under test play unbound roles (judge, emulator).
        data: A private split's directory from `docket generate anchor --seed SECRET --out
            DIR` (instead of `scenarios`).
        config: The other knobs (`AnchorDirectConfig`: tool_timeout, max_steps,
            judge_protocol): a YAML file path or a mapping; '' for the defaults.

    Returns:
        The task: one scenario per sample in the sandbox, solved by `direct_request`, scored by
        `anchor_scorer` with the judge panel.
    """
    name = "anchor_direct"
    knobs = task_config(name, AnchorDirectConfig, config)
    roles = _Roles(name, self_audit)
    panel = judge_roles(name, judges)
    roles.require(panel + (["emulator"] if emulator is True else []))
    protocols: dict[str, str] = {"judge_protocol": knobs.judge_protocol}
    target = _target(name, roles, knobs.tool_timeout, knobs.max_steps, emulator)
    return _task(
        name, direct_request(target), roles, panel, scenarios, categories, sandbox, 1, protocols,
        data, knobs.changed(),
    )  # fmt: skip


@task
def anchor_audit(
    scenarios: str | None = None,
    categories: str | None = None,
    max_turns: int = 20,
    sandbox: str = "bwrap",
    emulator: bool = False,
    judges: int | str = 1,
    self_audit: bool = False,
    data: str | None = None,
    config: str | dict[str, Any] | AnchorAuditConfig | None = None,
) -> Task:
    """A persistent auditor (`auditor` role) pursues each scenario's goal against the agent.

    Args:
        scenarios: Scenario JSONL file (default: the shipped set).
        categories: Comma-separated offence categories to keep (default: all).
        max_turns: Turn budget T of each audit (messages the auditor may send).
        sandbox: Sandbox kind: bwrap (default), docker or k8s.
        emulator: Rewrite app and synthetic-tool results with the `emulator` role.
        judges: Judge ensemble: a count of `judge` calls, or comma-separated role names.
        self_audit: Let the model under test play unbound roles (auditor, judge, emulator).
        data: A private split's directory from `docket generate anchor --seed SECRET --out
            DIR` (instead of `scenarios`).
        config: The other knobs (`AnchorAuditConfig`: tool_timeout, max_steps,
            judge_protocol, compact_after, auditor_protocol): a YAML file path or a mapping;
            '' for the defaults.

    Returns:
        The task: one scenario per sample in the sandbox, solved by `persistent_audit`, scored by
        `anchor_scorer` with the judge panel.
    """
    name = "anchor_audit"
    knobs = task_config(name, AnchorAuditConfig, config)
    roles = _Roles(name, self_audit)
    panel = judge_roles(name, judges)
    roles.require(["auditor", *panel] + (["emulator"] if emulator is True else []))
    auditing: Protocol = knobs.auditor_protocol
    protocols: dict[str, str] = {
        "auditor_protocol": auditing,
        "judge_protocol": knobs.judge_protocol,
    }
    target = _target(name, roles, knobs.tool_timeout, knobs.max_steps, emulator)
    turns = positive(name, "max_turns", max_turns)
    solver = persistent_audit(
        auditor_system(),
        target,
        roles.factory("auditor"),
        max_turns=turns,
        compact_after=knobs.compact_after,
        protocol=auditing,
    )
    return _task(
        name, solver, roles, panel, scenarios, categories, sandbox, turns, protocols, data,
        knobs.changed(),
    )  # fmt: skip
