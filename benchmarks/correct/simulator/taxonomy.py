"""The error taxonomy the injector draws from (after MAST and TRAIL).

Each type names the MAST failure mode / TRAIL category it stands for and the kind of step it can
be injected at; `simulator.py` implements each manifestation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorType:
    """One injectable error class."""

    name: str
    description: str
    source: str
    sites: str


TAXONOMY: tuple[ErrorType, ...] = (
    ErrorType(
        "wrong_tool_argument",
        "A tool is called with a wrong argument (another field, another region, an off-by-one "
        "bound) and its honest output is used as if it answered the request.",
        "TRAIL execution: incorrect tool arguments",
        "WebSurfer lookup, FileSurfer cell read, Coder program",
    ),
    ErrorType(
        "hallucinated_fact",
        "The agent states a value without calling its tool.",
        "TRAIL reasoning: hallucination (language-only)",
        "WebSurfer lookup, FileSurfer cell read",
    ),
    ErrorType(
        "misread_tool_output",
        "The tool output is right but the agent reports another field of it.",
        "TRAIL reasoning: tool output misinterpretation",
        "WebSurfer lookup, FileSurfer cell read",
    ),
    ErrorType(
        "stale_information",
        "The agent reports an outdated value (an older record or last year's file).",
        "TRAIL reasoning: outdated information; MAST FM-2.4 information withholding",
        "WebSurfer lookup of a dated attribute, FileSurfer cell read",
    ),
    ErrorType(
        "calculation_slip",
        "The Calculator returns a wrong result for a correct expression.",
        "TRAIL reasoning: incorrect computation",
        "Calculator",
    ),
    ErrorType(
        "misread_instruction",
        "The Planner misreads the question (wrong quantity, operation, attribute or column) and "
        "the team follows the wrong plan.",
        "MAST FM-1.1 disobey task specification",
        "Planner (step 0)",
    ),
    ErrorType(
        "dropped_plan_step",
        "The Planner leaves out a required sub-goal, so its contribution never happens.",
        "MAST FM-1.3/2.3 task derailment, incomplete plan",
        "Planner (step 0)",
    ),
    ErrorType(
        "role_violation",
        "The Orchestrator does the Calculator's job itself and gets it wrong (clean runs also "
        "let it work out some calculations itself, correctly).",
        "MAST FM-1.2 disobey role specification",
        "Orchestrator's own calculation",
    ),
    ErrorType(
        "ignored_feedback",
        "The Orchestrator ignores the value another agent reported last and forwards an "
        "earlier one.",
        "MAST FM-2.5 ignored other agent's input",
        "Orchestrator dispatch after a report",
    ),
    ErrorType(
        "premature_termination",
        "The Orchestrator declares a final answer before the plan is finished.",
        "MAST FM-3.1 premature termination",
        "Orchestrator dispatch once a value exists",
    ),
)

ERROR_TYPES: tuple[str, ...] = tuple(error.name for error in TAXONOMY)
BY_NAME: dict[str, ErrorType] = {error.name: error for error in TAXONOMY}
