"""Prompts of the four localisation methods and the schema distiller, and answer parsing.

The wording follows the Who&When baselines and the CORRECT detector (paraphrased): the problem,
the conversation numbered from Step 0, and an `Agent Name / Step Number / Reason for Mistake`
answer. `with_gt` adds the correct final answer (CORRECT's local path leaves it out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from docket.benchmarks.correct.simulator.records import Trajectory

SYSTEM = (
    "You are an expert at analysing conversations of multi-agent teams and finding the mistake "
    "that made them fail."
)
ANSWER_FORMAT = (
    "Answer in exactly this format:\nAgent Name: <name of the responsible agent>\n"
    "Step Number: <number of the step>\nReason for Mistake: <one sentence>"
)


def render_history(trajectory: Trajectory, last: int | None = None) -> str:
    """`Step i - Agent: content` lines for steps 0..last (all when None)."""
    steps = trajectory.history if last is None else trajectory.history[: last + 1]
    return "\n".join(f"Step {i} - {s.name}: {s.content}" for i, s in enumerate(steps))


def header(trajectory: Trajectory, with_gt: bool, last: int | None = None) -> str:
    """Problem, optional correct answer and the numbered conversation."""
    truth = (
        f"The correct answer to the problem is: {trajectory.ground_truth}\n"
        if with_gt and trajectory.ground_truth
        else ""
    )
    return (
        "A team of agents tried to solve a problem and failed.\n"
        f"Trajectory ID: {trajectory.id}\nProblem: {trajectory.question}\n{truth}"
        "Conversation (steps are numbered from 0; the first step is Step 0):\n"
        f"{render_history(trajectory, last)}\n"
    )


def all_at_once_prompt(trajectory: Trajectory, with_gt: bool) -> str:
    """Who&When all-at-once: the whole log, one answer."""
    return (
        header(trajectory, with_gt)
        + "\nFind the agent responsible for the failure and the first step at which it made the "
        "decisive mistake. Count steps exactly as numbered above.\n" + ANSWER_FORMAT
    )


def step_prompt(trajectory: Trajectory, step: int, with_gt: bool) -> str:
    """Who&When step-by-step: the log up to `step`, a yes/no question about that step."""
    name = trajectory.history[step].name
    return (
        header(trajectory, with_gt, last=step) + f"\nStep under review: {step} ({name})\n"
        f"Does Step {step} contain the decisive mistake that makes the team fail? Answer Yes or "
        "No on the first line, then give one sentence of reason."
    )


def half_prompt(trajectory: Trajectory, low: int, mid: int, high: int, with_gt: bool) -> str:
    """Who&When binary search: which half of steps low..high holds the mistake."""
    return (
        header(trajectory, with_gt, last=high)
        + f"\nThe decisive mistake lies somewhere in steps {low} to {high}. Which half contains "
        f"it: the lower half (steps {low}-{mid}) or the upper half (steps {mid + 1}-{high})? "
        "Answer 'Lower half' or 'Upper half' on the first line, then one sentence of reason."
    )


#: The heading of the retrieved schemata in the CORRECT prompt.
SCHEMA_MARKER = "ERROR SCHEMATA FOR GUIDANCE"
#: The request that ends a schema-generation prompt.
DISTILL_MARKER = "Write an error schema"
#: The first line of a schema-refinement prompt.
MERGE_MARKER = "Schema A (kept):"


def correct_prompt(trajectory: Trajectory, schemata: list[str], with_gt: bool) -> str:
    """CORRECT: the all-at-once prompt plus the retrieved error schemata as guidance."""
    if schemata:
        cases = "\n\n".join(f"Example {i + 1}:\n{text}" for i, text in enumerate(schemata))
        guide = (
            f"\n{SCHEMA_MARKER}\n"
            f"{cases}\n\nHow to use them: study each pattern, then scan Step 0, 1, 2, ... and "
            "ask at every step whether it contains a mistake and whether it matches a pattern. "
            "The actual mistake may be of another type or at another step.\n"
        )
    else:
        guide = (
            "\nNo stored schema matched. Check each step in order: is a tool called with the "
            "right arguments, is each reported value supported by the tool output, is every "
            "calculation right, does each agent keep to its role, and is the plan complete?\n"
        )
    return all_at_once_prompt(trajectory, with_gt) + "\n" + guide


DISTILL_SYSTEM = (
    "You are an expert at analysing conversations and writing schemata that help detect errors."
)


def distill_prompt(trajectory: Trajectory) -> str:
    """CORRECT schema generation from one labelled failure (three sections plus the label)."""
    return (
        f"Trajectory ID: {trajectory.id}\nProblem: {trajectory.question}\n"
        f"Correct answer: {trajectory.ground_truth}\n"
        f"Mistake agent: {trajectory.mistake_agent}\nMistake step: {trajectory.mistake_step}\n"
        f"Mistake reason: {trajectory.mistake_reason}\nConversation:\n"
        f"{render_history(trajectory)}\n\n"
        f"{DISTILL_MARKER} that helps IDENTIFY similar errors in future conversations, with "
        "three sections:\nError Signatures: distinctive actions, interaction patterns and "
        "telltale behaviour of the mistake.\nContext Analysis: the conditions and interaction "
        "sequence that precede it.\nDetection Heuristics: questions to ask, how to analyse a "
        "step, key phrases."
    )


def merge_prompt(kept: str, new: str) -> str:
    """CORRECT schema refinement: rewrite a kept schema with a new failure's schema."""
    return (
        f"{MERGE_MARKER}\n{kept}\n\nSchema B (a new failure of the same kind):\n{new}\n\n"
        "Rewrite schema A so that it also covers the failure of schema B: merge their error "
        "signatures, keep the context that both share, and keep every detection heuristic "
        "that would find either failure. Use the three sections Error Signatures, Context "
        "Analysis and Detection Heuristics."
    )


SECTIONS = ("Error Signatures", "Context Analysis", "Detection Heuristics")


@dataclass(frozen=True)
class Localisation:
    """A parsed answer: agent and step (None when the answer names none)."""

    agent: str | None
    step: int | None


_AGENT = re.compile(r"Agent\s*Name\s*\**\s*:\s*([^\n]*)", re.I)
_NAME = re.compile(r"[A-Za-z][\w\- ]*")
_STEP = re.compile(r"Step\s*Number\s*\**\s*:\s*\**\s*(?:Step\s*)?(\d+)", re.I)


def parse_localisation(text: str) -> Localisation:
    """`Agent Name: X` / `Step Number: N`, tolerant of markdown bold and leading zeros."""
    line = _AGENT.search(text)
    name = _NAME.search(line.group(1).replace("*", " ").replace("`", " ")) if line else None
    step = _STEP.search(text)
    digits = (step.group(1).lstrip("0") or "0") if step else ""
    number = int(digits) if digits and len(digits) < 10 else None  # no int() of 5000 digits
    return Localisation(name.group(0).strip() if name else None, number)


def parse_yes_no(text: str) -> bool | None:
    """True for a leading Yes, False for a leading No, None otherwise."""
    match = re.match(r"\W*(yes|no)\b", text.strip(), re.I)
    return None if match is None else match.group(1).lower() == "yes"


def parse_half(text: str) -> str | None:
    """'lower' or 'upper': the one half the first line names, else its first sentence names.

    A line naming both halves in its first sentence (an echo of the question, or "the lower
    half of the upper half") is no answer: None.
    """
    line = next((row for row in text.strip().splitlines() if row.strip()), "")
    for part in (line, re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]):
        named = {m.lower() for m in re.findall(r"\b(lower|upper)\b", part, re.I)}
        if len(named) == 1:
            return named.pop()
    return None


def parse_schema(text: str) -> dict[str, str]:
    """The three schema sections of a distiller reply ('' for a missing one)."""
    found: dict[str, str] = {}
    pattern = "|".join(SECTIONS)
    parts = re.split(rf"(?im)^[#*\s]*({pattern})[*\s]*:?[*]*", text)
    for name, body in zip(parts[1::2], parts[2::2], strict=False):
        key = next((s for s in SECTIONS if s.casefold() == name.casefold()), None)
        if key is not None:  # (?i) also matches look-alikes such as 'ſ' for 's'
            found[key] = body.strip()
    return {s: found.get(s, "") for s in SECTIONS}


#: Role names that mean the same agent (after normalisation).
AGENT_ALIASES = {
    "computer": "computerterminal",
    "terminal": "computerterminal",
    "calc": "calculator",
    "filereader": "filesurfer",
    "websearcher": "websurfer",
    "human": "user",
}


def normalise_agent(name: str) -> str:
    """A canonical agent name: no article, role suffix, case, spacing or punctuation.

    `The Orchestrator`, `orchestrator (thought)`, `Orchestrator (-> WebSurfer)` and
    `ORCHESTRATOR` agree; so do `Web Surfer`, `web_surfer` and `WebSurfer`, and the aliases in
    `AGENT_ALIASES` (`Computer_terminal` and `ComputerTerminal`).
    """
    text = re.sub(r"\([^)]*\)", " ", name).strip().lower()
    text = re.sub(r"^(?:the|an?)\s+", "", text)
    text = re.sub(r"\s+agent$", "", text)
    canonical = re.sub(r"[^a-z0-9]", "", text)
    return AGENT_ALIASES.get(canonical, canonical)
