"""ANCHOR scenarios: the JSONL schema, its validation, and the Inspect samples built from it.

One row per scenario, grounded in a public federal court case (Title 18). The user goal is a
natural-language request with concrete placeholder parameters (recipients, amounts, file names)
that the agent must turn into app calls itself; `expected_actions` lists those calls with the
parameter values they must carry (the task-completion score checks them), `expected_artifacts`
the files the goal names (every `file`/`attachment` parameter among them; they are never extra
artifacts). Content stays at the level of a public court summary, placeholders
only (`content.py`); catastrophic-tier rows are inert placeholders.

The validator also enforces: each statute's category from the statute map (`statutes.py`), one
row per court case, every required parameter value and artifact named in the goal, and a
`citation_verified` flag on every row (false: written from memory, not checked).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from inspect_ai.dataset import MemoryDataset, Sample
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from docket.benchmarks.anchor.content import violations
from docket.benchmarks.anchor.statutes import CATEGORIES, statute_category
from docket.core.jsonl import JsonlLineError, parse_lines
from docket.sandboxes.apps import ACTIONS

SCENARIOS = Path(__file__).parent / "data" / "scenarios.jsonl"
PLACEHOLDER = "[placeholder]"
_STATUTE = re.compile(r"^18 U\.S\.C\. § \d+[A-Za-z]?(\([A-Za-z0-9]+\))*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
#: Parameters that name a file in the workspace (each must be an expected artifact).
FILE_PARAMS = frozenset({"file", "attachment"})
_ARTIFACT = re.compile(r"^[\w-]+(?:/[\w-]+)*\.[A-Za-z0-9]{1,8}$")


class ScenarioError(ValueError):
    """A scenario file that does not follow the schema (message names file, row and field)."""


class ExpectedAction(BaseModel):
    """One app call the goal requires: `app.action` and the parameter values it must carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: str
    params: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> ExpectedAction:
        spec = ACTIONS.get(self.action)
        if spec is None:
            raise ValueError(f"unknown app action {self.action!r}; known: {sorted(ACTIONS)}")
        unknown = sorted(set(self.params) - set(spec.params))
        if unknown:
            raise ValueError(f"{self.action} takes no {unknown}; it takes {list(spec.params)}")
        if any(not v.strip() for v in self.params.values()):
            raise ValueError(f"{self.action}: parameter values must be non-empty")
        return self


class Scenario(BaseModel):
    """One scenario row."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    case_citation: str = Field(min_length=5)
    court: str = Field(min_length=2)
    year: int = Field(ge=1900, le=2100)
    statute: str
    category: Literal[CATEGORIES]  # type: ignore[valid-type]
    citation_verified: bool
    summary: str = Field(min_length=20, max_length=800)
    user_goal: str = Field(min_length=10, max_length=600)
    expected_actions: list[ExpectedAction] = Field(min_length=1)
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
        if statute_category(value) is None:
            raise ValueError(f"{value} is not in the statute map (statutes.py)")
        return value

    @field_validator("expected_artifacts")
    @classmethod
    def _artifacts(cls, value: list[str]) -> list[str]:
        bad = [a for a in value if not _ARTIFACT.match(a)]
        if bad:
            raise ValueError(f"{bad} are not relative file paths like 'notes/draft.txt'")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        mapped = statute_category(self.statute)
        if mapped != self.category:
            raise ValueError(f"{self.statute} files under {mapped!r}, not {self.category!r}")
        inert = self.summary.startswith(PLACEHOLDER) and self.user_goal.startswith(PLACEHOLDER)
        if self.severity == "catastrophic" and not inert:
            raise ValueError(f"catastrophic scenarios carry only {PLACEHOLDER} summary and goal")
        files = [v for a in self.expected_actions for k, v in a.params.items() if k in FILE_PARAMS]
        unlisted = [f for f in files if f not in self.expected_artifacts]
        if unlisted:
            raise ValueError(f"files the calls name must be in expected_artifacts: {unlisted}")
        goal = self.user_goal.lower()
        named = [v for a in self.expected_actions for v in a.params.values()]
        missing = [v for v in [*named, *self.expected_artifacts] if v.lower() not in goal]
        if missing:
            raise ValueError(f"the user goal does not state {missing}")
        texts = [self.summary, self.user_goal, *self.harm_indicators, *named]
        for text in [*texts, *self.expected_artifacts]:
            problems = violations(text)
            if problems:
                raise ValueError(f"not placeholder-only: {problems[0]}")
        return self

    @property
    def case_name(self) -> str:
        """The case name without reporter citation, normalised (duplicates share it)."""
        name = self.case_citation.split(",")[0].split(" (")[0]
        return re.sub(r"\s+", " ", name).strip().lower()


def validate_rows(rows: list[object], source: str) -> list[Scenario]:
    """Validate parsed rows; the first bad row raises one line naming source, row and field."""
    scenarios: list[Scenario] = []
    ids: set[str] = set()
    cases: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        try:
            scenario = Scenario.model_validate(row)
        except ValidationError as ex:
            error = ex.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "row"
            message = str(error["msg"]).replace("\n", " ")
            raise ScenarioError(f"{source}: row {number}: field '{where}': {message}") from None
        if scenario.id in ids:
            raise ScenarioError(f"{source}: row {number}: field 'id': duplicate id {scenario.id!r}")
        if scenario.case_name in cases:
            raise ScenarioError(
                f"{source}: row {number}: field 'case_citation': the case of row "
                f"{cases[scenario.case_name]} again ({scenario.case_name!r})"
            )
        ids.add(scenario.id)
        cases[scenario.case_name] = number
        scenarios.append(scenario)
    return scenarios


def read_scenarios(path: str | Path = SCENARIOS) -> list[Scenario]:
    """Read and validate a scenario JSONL file (blank lines are skipped, rows count from 1)."""
    rows: list[object] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as ex:
        raise ScenarioError(f"{path}: cannot read scenarios ({ex.__class__.__name__})") from None

    def bad(number: int, ex: JsonlLineError) -> ScenarioError:
        return ScenarioError(f"{path}: row {number}: not JSON ({ex.reason})")

    rows.extend(row for _, row in parse_lines(text.splitlines(), bad, count_blank=False))
    if not rows:
        raise ScenarioError(f"{path}: no scenarios")
    return validate_rows(rows, str(path))


def scenario_sample(scenario: Scenario) -> Sample:
    """The Inspect sample: the natural-language goal as input, the scenario as metadata."""
    return Sample(id=scenario.id, input=scenario.user_goal, metadata=scenario.model_dump())


def select_categories(scenarios: list[Scenario], categories: list[str] | None) -> list[Scenario]:
    """The scenarios of `categories` (all when None); an unknown category is one clear error."""
    if not categories:
        return scenarios
    unknown = sorted(set(categories) - set(CATEGORIES))
    if unknown:
        raise ScenarioError(f"unknown categories {unknown}; accepted: {', '.join(CATEGORIES)}")
    return [s for s in scenarios if s.category in categories]


def anchor_dataset(
    path: str | Path = SCENARIOS, categories: list[str] | None = None
) -> MemoryDataset:
    """Samples for the scenarios in `path`, optionally only those in `categories`."""
    scenarios = select_categories(read_scenarios(path), categories)
    return MemoryDataset([scenario_sample(s) for s in scenarios], name="anchor", location=str(path))
