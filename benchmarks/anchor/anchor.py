"""ANCHOR tasks: a CLI agent in a sandbox, asked directly or audited by a persistent auditor.

`docket/anchor_direct` sends each scenario's request once; `docket/anchor_audit` lets the
`auditor` role pursue the same goal for up to `max_turns` turns. Both use the same scenarios and
the same scorer (`judge` role + mechanical excess), so their metrics compare directly.
"""

from __future__ import annotations

from docket.agents.auditor import direct_request, persistent_audit
from docket.agents.cli_target import CliTarget, target_tools
from docket.benchmarks.anchor.dataset import SCENARIOS, anchor_dataset
from docket.benchmarks.anchor.prompts import auditor_system
from docket.benchmarks.anchor.scorer import anchor_scorer
from docket.benchmarks.common.args import checked, positive
from docket.sandboxes import sandbox_spec
from inspect_ai import Task, task
from inspect_ai.solver import Solver

VERSION = "1-A"


def _categories(name: str, categories: str | None) -> list[str] | None:
    if categories is None:
        return None
    return [c.strip() for c in checked(name, "categories", categories, str).split(",") if c.strip()]


def _task(
    name: str,
    solver: Solver,
    scenarios: str | None,
    categories: str | None,
    sandbox: str,
) -> Task:
    return Task(
        dataset=anchor_dataset(
            checked(name, "scenarios", scenarios, str) if scenarios else SCENARIOS,
            _categories(name, categories),
        ),
        solver=solver,
        scorer=anchor_scorer(),
        sandbox=sandbox_spec(checked(name, "sandbox", sandbox, str)),
        fail_on_error=False,
        version=VERSION,
    )


def _target(name: str, tool_timeout: int, max_steps: int, emulator: bool) -> CliTarget:
    tools = target_tools(
        timeout=positive(name, "tool_timeout", tool_timeout),
        emulator=checked(name, "emulator", emulator, bool),
    )
    return CliTarget(tools, max_steps=positive(name, "max_steps", max_steps))


@task
def anchor_direct(
    scenarios: str | None = None,
    categories: str | None = None,
    sandbox: str = "bwrap",
    tool_timeout: int = 30,
    max_steps: int = 8,
    emulator: bool = False,
) -> Task:
    """One-turn request of each scenario to the CLI agent under test (no auditor).

    Args:
        scenarios: Scenario JSONL file (default: the shipped set).
        categories: Comma-separated offence categories to keep (default: all).
        sandbox: Sandbox kind: bwrap (default), docker or k8s.
        tool_timeout: Seconds each tool call may run.
        max_steps: Generations per user turn before the target is stopped.
        emulator: Rewrite emulated-app output with the `emulator` role (default: scripted).
    """
    name = "anchor_direct"
    target = _target(name, tool_timeout, max_steps, emulator)
    return _task(name, direct_request(target), scenarios, categories, sandbox)


@task
def anchor_audit(
    scenarios: str | None = None,
    categories: str | None = None,
    max_turns: int = 20,
    compact_after: int = 8,
    sandbox: str = "bwrap",
    tool_timeout: int = 30,
    max_steps: int = 8,
    emulator: bool = False,
) -> Task:
    """A persistent auditor (`auditor` role) pursues each scenario's goal against the agent.

    Args:
        scenarios: Scenario JSONL file (default: the shipped set).
        categories: Comma-separated offence categories to keep (default: all).
        max_turns: Turn budget of each audit (messages the auditor may send).
        compact_after: Turns after which the auditor's older turns are compacted.
        sandbox: Sandbox kind: bwrap (default), docker or k8s.
        tool_timeout: Seconds each tool call may run.
        max_steps: Generations per user turn before the target is stopped.
        emulator: Rewrite emulated-app output with the `emulator` role (default: scripted).
    """
    name = "anchor_audit"
    target = _target(name, tool_timeout, max_steps, emulator)
    solver = persistent_audit(
        auditor_system(),
        target,
        max_turns=positive(name, "max_turns", max_turns),
        compact_after=positive(name, "compact_after", compact_after),
    )
    return _task(name, solver, scenarios, categories, sandbox)
