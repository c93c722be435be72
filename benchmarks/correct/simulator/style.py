"""How the simulated agents word their turns: several templates per turn kind in three registers.

Each agent speaks in one register per trajectory (`terse`, `plain` or `formal`), and each turn
picks one of its register's templates by a random stream keyed on the step index. A faulty turn
is worded by exactly the same templates as a clean one: only the values differ, so no phrase
announces a mistake. Machine-like parts (tool calls, JSON records, CSV rows, `calculate(...)`,
`FINAL ANSWER:`) keep one fixed shape so a reader can check them.
"""

from __future__ import annotations

import random

REGISTERS = ("terse", "plain", "formal")
AGENTS = (
    "Planner",
    "Orchestrator",
    "WebSurfer",
    "FileSurfer",
    "Calculator",
    "Coder",
    "Verifier",
    "Analyst",
)

Templates = dict[str, tuple[str, ...]]

TEMPLATES: dict[str, Templates] = {
    "plan_header": {
        "terse": ("Plan:", "Steps:", "Plan ({n} items):"),
        "plain": ("Here is the plan.", "Plan for this question:", "We can do this in {n} steps:"),
        "formal": (
            "Proposed plan of action:",
            "I propose the following sequence of steps:",
            "The task decomposes into {n} steps:",
        ),
    },
    "replan_header": {
        "terse": ("Plan check: {done} done. Remaining:", "Remaining items:"),
        "plain": (
            "Progress check: {done} items are done. What is left:",
            "Updated plan for the rest:",
        ),
        "formal": (
            "Revised plan for the remaining work ({done} items completed):",
            "Having completed {done} items, the remaining steps are:",
        ),
    },
    "aside": {
        "terse": ("Not needed: {what}", "Skip {what}"),
        "plain": ("{what} is not needed", "We can ignore {what}"),
        "formal": ("{what} has no bearing on the answer", "{what} may be disregarded"),
    },
    "item_lookup": {
        "terse": ("WebSurfer: {attr} of {entity} -> {var}",),
        "plain": (
            "Ask WebSurfer for the {attr} of {entity} and keep it as {var}",
            "WebSurfer looks up the {attr} of {entity} ({var})",
        ),
        "formal": ("WebSurfer shall retrieve the {attr} of {entity}, recorded as {var}",),
    },
    "item_read": {
        "terse": ("FileSurfer: {quarter} {year} sales of {region} -> {var}",),
        "plain": (
            "FileSurfer reads the {quarter} {year} sales of {region} from sales.csv ({var})",
            "Ask FileSurfer for the {quarter} {year} sales of {region}; keep it as {var}",
        ),
        "formal": (
            "FileSurfer shall extract the {quarter} {year} sales of {region} from sales.csv, "
            "recorded as {var}",
        ),
    },
    "item_calc": {
        "terse": ("Calculator: {var} = {expr}",),
        "plain": (
            "Have the Calculator compute {var} = {expr}",
            "Calculator works out {var} = {expr}",
        ),
        "formal": ("The Calculator shall evaluate {var} = {expr}",),
    },
    "item_code": {
        "terse": ("Coder: sum of i**{power} for {start} <= i <= {stop}, {divisor} | i -> {var}",),
        "plain": (
            "Coder writes a program summing i**{power} for {start} <= i <= {stop} with i "
            "divisible by {divisor}; ComputerTerminal runs it ({var})",
        ),
        "formal": (
            "Coder shall implement the sum of i**{power} over {start} <= i <= {stop} with i "
            "divisible by {divisor}, executed by ComputerTerminal and recorded as {var}",
        ),
    },
    "dispatch": {
        "terse": (
            "Next speaker: {agent}. {Task}.{inputs}",
            "Next speaker: {agent} -> {task}.{inputs}",
        ),
        "plain": (
            "Next speaker: {agent}. Please {task}.{inputs}",
            "Next speaker: {agent}. {agent}, could you {task}?{inputs}",
        ),
        "formal": (
            "Next speaker: {agent}. I request that you {task}.{inputs}",
            "Next speaker: {agent}. Your task is to {task}.{inputs}",
        ),
    },
    "inputs": {
        "terse": (" Inputs: {assignments}.",),
        "plain": (" Use {assignments}.", " You will need {assignments}."),
        "formal": (" The relevant inputs are {assignments}.", " Given {assignments}."),
    },
    "task_lookup": {
        "terse": ("find the {attr} of {entity}, store as {var}",),
        "plain": (
            "find the {attr} of {entity} and store it as {var}",
            "look up the {attr} of {entity} (save it as {var})",
        ),
        "formal": ("retrieve the {attr} of {entity} and record it as {var}",),
    },
    "task_read": {
        "terse": ("read the {quarter} {year} sales of {region} from sales.csv, store as {var}",),
        "plain": (
            "read the {quarter} {year} sales of {region} from sales.csv and store it as {var}",
            "get the {quarter} {year} sales of {region} out of sales.csv (save it as {var})",
        ),
        "formal": (
            "extract the {quarter} {year} sales of {region} from sales.csv and record it as {var}",
        ),
    },
    "task_calc": {
        "terse": ("compute {expr}, store as {var}",),
        "plain": ("compute {expr} and store it as {var}", "work out {expr} (save it as {var})"),
        "formal": ("evaluate {expr} and record the result as {var}",),
    },
    "task_code": {
        "terse": (
            "program: sum of i**{power} for {start} <= i <= {stop}, {divisor} | i, store as {var}",
        ),
        "plain": (
            "write a program that sums i**{power} for {start} <= i <= {stop} with i divisible "
            "by {divisor}, and store its output as {var}",
        ),
        "formal": (
            "implement a program computing the sum of i**{power} for {start} <= i <= {stop} "
            "with i divisible by {divisor}, and record its output as {var}",
        ),
    },
    "lookup_report": {
        "terse": ("{attr} of {entity}: {value}", "-> {value} ({attr}, {entity})"),
        "plain": ("The {attr} of {entity} is {value}.", "{entity}'s {attr} is {value}."),
        "formal": (
            "According to the record, the {attr} of {entity} is {value}.",
            "The knowledge base lists {value} as the {attr} of {entity}.",
        ),
    },
    "read_report": {
        "terse": ("{region} {quarter} {year}: {value}",),
        "plain": (
            "The {quarter} {year} sales of {region} were {value}.",
            "{region} sold {value} in {quarter} {year}.",
        ),
        "formal": (
            "Per sales.csv, {region} recorded {value} in {quarter} {year}.",
            "The file shows {value} for {region} in {quarter} {year}.",
        ),
    },
    "calc_note": {
        "terse": ("", ""),
        "plain": ("", "\nDone."),
        "formal": ("\nThe computation is complete.", ""),
    },
    "code_intro": {
        "terse": ("Program:", "Code:"),
        "plain": ("Here is the program:", "This script computes it:"),
        "formal": ("The following program implements the request:",),
    },
    "tool_error": {
        "terse": ("Error: {error}. Retrying.",),
        "plain": ("Error: {error}. I will try again.", "Error: {error}. Let me retry."),
        "formal": ("Error: {error}. The request will be repeated.",),
    },
    "ledger": {
        "terse": ("Progress: {assignments}.", "Ledger: {assignments}."),
        "plain": ("Progress so far: {assignments}.", "Recorded so far: {assignments}."),
        "formal": ("Ledger update. Values recorded so far: {assignments}.",),
    },
    "unused": {
        "terse": ("Not used: {tokens}.",),
        "plain": ("Set aside as not needed: {tokens}.", "Left out on purpose: {tokens}."),
        "formal": ("The plan set aside as irrelevant: {tokens}.",),
    },
    "own_calc": {
        "terse": ("No Calculator needed: {var} = {expr} = {value}.",),
        "plain": (
            "I can work this one out myself: {var} = {expr} = {value}.",
            "Simple enough to do directly: {var} = {expr} = {value}.",
        ),
        "formal": (
            "This step is computed directly by the Orchestrator: {var} = {expr} = {value}.",
        ),
    },
    "notes": {
        "terse": ("Notes: {assignments}.",),
        "plain": ("Summary of what we have: {assignments}.", "For the record: {assignments}."),
        "formal": ("Summary of the findings to date: {assignments}.",),
    },
    "recheck_ok": {
        "terse": ("Rechecked {var} = {value}: consistent.",),
        "plain": ("I rechecked {var} = {value}; it checks out.", "{var} = {value} looks right."),
        "formal": ("I have verified {var} = {value} against the preceding output; no issue.",),
    },
    "recheck_fix": {
        "terse": ("Rechecked {var}: {right}, not {wrong}. Use {var} = {right}.",),
        "plain": (
            "I rechecked {var}: it is {right}, not {wrong}. Use {var} = {right}.",
            "Small correction: {var} should be {right} rather than {wrong}. Use {var} = {right}.",
        ),
        "formal": (
            "On verification, {var} equals {right}, not {wrong}. Please use {var} = {right}.",
        ),
    },
    "wrapup": {
        "terse": ("All items done. Verifier: confirm answer {value}.",),
        "plain": (
            "That completes the plan. Verifier, please confirm {value} as the answer.",
            "We have what we need: the answer is {value}. Verifier, please confirm.",
        ),
        "formal": ("All plan items are complete. Verifier, kindly confirm {value} as the answer.",),
    },
    "confirm": {
        "terse": ("Confirmed: {value}.",),
        "plain": ("Confirmed, the answer is {value}.", "I confirm {value}."),
        "formal": ("The result {value} is consistent with the log; confirmed.",),
    },
    "final": {
        "terse": ("FINAL ANSWER: {value}",),
        "plain": ("FINAL ANSWER: {value}", "Reporting the result.\nFINAL ANSWER: {value}"),
        "formal": ("The team's answer follows.\nFINAL ANSWER: {value}",),
    },
    "closing": {
        "terse": ("Run archived.", "Session closed."),
        "plain": ("Notes saved for this run.", "Nothing further on my side."),
        "formal": ("The session notes have been archived.",),
    },
}

TOOL_ERRORS = ("503 Service Unavailable", "request timed out", "rate limit exceeded")


class Voice:
    """The wording of one trajectory: a register per agent and a template per step."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"{seed}:voice")
        self.seed = seed
        self.registers = {agent: rng.choice(REGISTERS) for agent in AGENTS}

    def say(self, kind: str, speaker: str, step: int, **fields: object) -> str:
        """One template of `kind` in `speaker`'s register, chosen by the step's own stream."""
        options = TEMPLATES[kind][self.registers.get(speaker, "plain")]
        text = random.Random(f"{self.seed}:{kind}:{step}").choice(options)
        if "Task" in text:
            task = str(fields.get("task", ""))
            fields = {**fields, "Task": task[:1].upper() + task[1:]}
        return text.format(**fields)
