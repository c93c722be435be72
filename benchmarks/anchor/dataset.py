"""ANCHOR scenarios: the JSONL schema, its validation, and the Inspect samples built from it.

One row per scenario, grounded in a public federal court case (Title 18). Content stays at the
level of a public court summary; catastrophic-tier rows are inert placeholders only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from docket.benchmarks.anchor.prompts import DIRECT_PROMPT, requested_commands
from docket.sandboxes.apps import APP_CATALOGUE, APP_PATH_IN_SANDBOX, APP_PROGRAM
from inspect_ai.dataset import MemoryDataset, Sample
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

SCENARIOS = Path(__file__).parent / "data" / "scenarios.jsonl"

#: Title-18 offence categories a scenario may use.
CATEGORIES: tuple[str, ...] = (
    "fraud",
    "identity_theft",
    "computer_intrusion",
    "stalking_harassment",
    "threats",
    "extortion",
    "money_laundering",
    "counterfeiting",
    "obstruction",
    "smuggling",
    "bribery",
    "trade_secrets",
    "wiretapping",
    "weapons_of_mass_destruction",
)
KNOWN_ACTIONS = frozenset(
    f"{app}.{action}" for app, acts in APP_CATALOGUE.items() for action in acts
)
PLACEHOLDER = "[placeholder]"
_STATUTE = re.compile(r"^18 U\.S\.C\. § \d+[A-Za-z]?(\([A-Za-z0-9]+\))*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class ScenarioError(ValueError):
    """A scenario file that does not follow the schema (message names file, row and field)."""


class Scenario(BaseModel):
    """One scenario row."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    case_citation: str = Field(min_length=5)
    court: str = Field(min_length=2)
    year: int = Field(ge=1900, le=2100)
    statute: str
    category: Literal[CATEGORIES]  # type: ignore[valid-type]
    summary: str = Field(min_length=20, max_length=800)
    user_goal: str = Field(min_length=10, max_length=600)
    expected_actions: list[str] = Field(min_length=1)
    expected_artifacts: list[str] = Field(default_factory=list)
    harm_indicators: list[str] = Field(min_length=1)
    severity: Literal["low", "medium", "high", "catastrophic"]

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("must be lower-case letters, digits, '_' or '-'")
        return value

    @field_validator("statute")
    @classmethod
    def _statute(cls, value: str) -> str:
        if not _STATUTE.match(value):
            raise ValueError("must look like '18 U.S.C. § 1343' or '18 U.S.C. § 1030(a)(2)'")
        return value

    @field_validator("expected_actions")
    @classmethod
    def _actions(cls, value: list[str]) -> list[str]:
        unknown = [a for a in value if a not in KNOWN_ACTIONS]
        if unknown:
            raise ValueError(f"unknown app actions {unknown}; known: {sorted(KNOWN_ACTIONS)}")
        return value

    @model_validator(mode="after")
    def _placeholders(self) -> Scenario:
        inert = self.summary.startswith(PLACEHOLDER) and self.user_goal.startswith(PLACEHOLDER)
        if self.severity == "catastrophic" and not inert:
            raise ValueError(f"catastrophic scenarios carry only {PLACEHOLDER} summary and goal")
        return self


def validate_rows(rows: list[object], source: str) -> list[Scenario]:
    """Validate parsed rows; the first bad row raises one line naming source, row and field."""
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        try:
            scenario = Scenario.model_validate(row)
        except ValidationError as ex:
            error = ex.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "row"
            raise ScenarioError(
                f"{source}: row {number}: field '{where}': {error['msg']}"
            ) from None
        if scenario.id in seen:
            raise ScenarioError(f"{source}: row {number}: field 'id': duplicate id {scenario.id!r}")
        seen.add(scenario.id)
        scenarios.append(scenario)
    return scenarios


def read_scenarios(path: str | Path = SCENARIOS) -> list[Scenario]:
    """Read and validate a scenario JSONL file (blank lines are skipped, rows count from 1)."""
    rows: list[object] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as ex:
        raise ScenarioError(f"{path}: cannot read scenarios ({ex.__class__.__name__})") from None
    lines = [line for line in text.splitlines() if line.strip()]
    for number, line in enumerate(lines, start=1):
        try:
            rows.append(json.loads(line))
        except (ValueError, RecursionError) as ex:  # JSONDecodeError, huge ints, deep nesting
            reason = ex.msg if isinstance(ex, json.JSONDecodeError) else type(ex).__name__
            raise ScenarioError(f"{path}: row {number}: not JSON ({reason})") from None
    if not rows:
        raise ScenarioError(f"{path}: no scenarios")
    return validate_rows(rows, str(path))


def scenario_sample(scenario: Scenario) -> Sample:
    """The Inspect sample: the direct request as input, the scenario as metadata."""
    commands = requested_commands(scenario.expected_actions)
    return Sample(
        id=scenario.id,
        input=DIRECT_PROMPT.format(user_goal=scenario.user_goal, commands=commands),
        metadata=scenario.model_dump(),
        files={APP_PATH_IN_SANDBOX: str(APP_PROGRAM)},
        setup="mkdir -p .anchor",
    )


def anchor_dataset(
    path: str | Path = SCENARIOS, categories: list[str] | None = None
) -> MemoryDataset:
    """Samples for the scenarios in `path`, optionally only those in `categories`."""
    scenarios = read_scenarios(path)
    if categories:
        unknown = sorted(set(categories) - set(CATEGORIES))
        if unknown:
            raise ScenarioError(f"unknown categories {unknown}; accepted: {', '.join(CATEGORIES)}")
        scenarios = [s for s in scenarios if s.category in categories]
    return MemoryDataset([scenario_sample(s) for s in scenarios], name="anchor", location=str(path))
