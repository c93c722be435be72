"""Reference policies for `docket/correct_localization` and the rule-based schema distiller.

They read the prompts of `benchmarks/correct/prompts.py`: the `Trajectory ID:` and `Problem:`
lines, the `Step i - Agent: ...` conversation, and the question each method asks (all-at-once /
CORRECT answer format, `Step under review: i`, `lower half (steps a-b)`, `Write an error
schema`, `Schema A (kept)`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy
from docket.benchmarks.correct.dataset import SHIPPED, split_file
from docket.benchmarks.correct.prompts import DISTILL_MARKER, MERGE_MARKER, SCHEMA_MARKER
from docket.benchmarks.correct.simulator.baselines import SurfaceBaseline
from docket.benchmarks.correct.simulator.checks import CHECKS
from docket.benchmarks.correct.simulator.records import read_trajectories
from docket.benchmarks.correct.simulator.schema import (
    earliest,
    merge_schemata,
    rule_schema,
    schema_checks,
)

__all__ = ["conversation", "gold_label", "problem", "rule_schema"]

_ID = re.compile(r"^Trajectory ID: (\S+)", re.M)
_PROBLEM = re.compile(
    r"^Problem: (.*?)\n(?:The correct answer to the problem is:|Conversation \(steps|"
    r"Correct answer:|Mistake agent:)",
    re.M | re.S,
)
_STEP_LINE = re.compile(r"^Step (\d+) - ([^:\n]+): ", re.M)
_REVIEW = re.compile(r"Step under review: (\d+)")
_HALF = re.compile(r"lower half \(steps (\d+)-(\d+)\)")
_FIELD = re.compile(r"^Mistake (agent|step|reason): (.*)$", re.M)
_MERGE = re.compile(r"Schema A \(kept\):\n(.*?)\n\nSchema B \([^)]*\):\n(.*?)\n\nRewrite", re.S)
SHIPPED_TRAIN = ""  # '' = the shipped split's train half

Label = tuple[str, int, str]


def conversation(prompt: str) -> list[tuple[str, str]]:
    """(agent, content) per `Step i - Agent: content` block of a prompt, in order."""
    marks = list(_STEP_LINE.finditer(prompt))
    steps = []
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        end = following.start() if following else len(prompt)
        body = prompt[mark.end() : end]
        body = re.split(r"\n\n|\nStep under review:|\nThe decisive mistake lies", body)[0]
        steps.append((mark.group(2).strip(), body.strip()))
    return steps


def problem(prompt: str) -> str:
    """The problem statement of a prompt ('' when it has none)."""
    found = _PROBLEM.search(prompt)
    return found.group(1).strip() if found else ""


def _distill_reply(prompt: str) -> PolicyReply:
    """A distiller prompt gets `rule_schema`; a merge prompt gets `merge_schemata`."""
    merge = _MERGE.search(prompt)
    if merge is not None:
        return PolicyReply(text=merge_schemata(merge.group(1), merge.group(2)))
    fields = dict(_FIELD.findall(prompt))
    steps = conversation(prompt.split(DISTILL_MARKER)[0])
    step = int(fields.get("step", "0")) if fields.get("step", "").isdigit() else 0
    return PolicyReply(
        text=rule_schema(
            problem(prompt), steps, fields.get("agent", ""), step, fields.get("reason", "")
        )
    )


def _distilling(prompt: str) -> bool:
    return DISTILL_MARKER in prompt or MERGE_MARKER in prompt


@lru_cache(maxsize=8)
def _labels_from(path: str) -> dict[str, Label]:
    return {
        t.id: (t.mistake_agent, t.mistake_step, t.mistake_reason)
        for t in read_trajectories(split_file(Path(path)) if path else SHIPPED)
    }


def gold_label(trajectory_id: str, labels: str = "") -> Label:
    """The label of a trajectory, looked up by its id in the data that holds it.

    Args:
        trajectory_id: The id the prompt shows (opaque: nothing can be generated from it).
        labels: The trajectory file, or a `docket generate correct` directory ('' for the
            shipped split).

    Returns:
        (agent, step, reason).

    Raises:
        ValueError: No trajectory of that id in the data.
    """
    table = _labels_from(labels)
    if trajectory_id not in table:
        raise ValueError(
            f"{labels or 'the shipped split'}: no trajectory with id {trajectory_id!r}; pass "
            "-M labels=PATH"
        )
    return table[trajectory_id]


def _localise(agent: str, step: int, reason: str) -> PolicyReply:
    return PolicyReply(
        text=f"Agent Name: {agent}\nStep Number: {step}\nReason for Mistake: {reason}"
    )


def _answer(state: PolicyInput, pick: tuple[str, int, str]) -> PolicyReply:
    """Answer any localisation question as if the decisive mistake were `pick`."""
    prompt = state.last_user_text
    agent, step, reason = pick
    review = _REVIEW.search(prompt)
    if review:
        return PolicyReply(text="Yes" if int(review.group(1)) == step else "No")
    half = _HALF.search(prompt)
    if half:
        low, mid = int(half.group(1)), int(half.group(2))
        return PolicyReply(text="Lower half" if low <= step <= mid else "Upper half")
    return _localise(agent, step, reason)


@policy("correct_oracle", args={"labels": str})
def correct_oracle(state: PolicyInput) -> PolicyReply:
    """Answers every CORRECT prompt with the gold label (from -M labels or the generator)."""
    prompt = state.last_user_text
    if _distilling(prompt):
        return _distill_reply(prompt)
    found = _ID.search(prompt)
    if not found:
        return PolicyReply(text="I don't know.")
    label = gold_label(found.group(1), str(state.args.get("labels", "")))
    return _answer(state, label)


@policy("correct_first_step")
def correct_first_step(state: PolicyInput) -> PolicyReply:
    """Always blames Step 0 and its agent (Yes at step 0, always the lower half)."""
    prompt = state.last_user_text
    if _distilling(prompt):
        return _distill_reply(prompt)
    steps = conversation(prompt)
    agent = steps[0][0] if steps else "unknown"
    return _answer(state, (agent, 0, "the first step is blamed by policy"))


@policy("correct_distiller")
def correct_distiller(state: PolicyInput) -> PolicyReply:
    """Writes the rule-based schema for a distiller prompt (`rule_schema`)."""
    return _distill_reply(state.last_user_text)


def guidance_checks(prompt: str) -> list[str]:
    """The checks named by the schemata in a CORRECT prompt's guidance block, in check order."""
    block = prompt.split(SCHEMA_MARKER, 1)[1] if SCHEMA_MARKER in prompt else ""
    named: set[str] = set()
    for example in re.split(r"\n\nExample \d+:\n", block):
        named |= set(schema_checks(example))
    return [c for c in CHECKS if c in named]


def _pick(prompt: str, checks: list[str], why: str) -> tuple[str, int, str]:
    steps = conversation(prompt.split(SCHEMA_MARKER, 1)[0])
    found = earliest(problem(prompt), steps, checks) if checks and steps else None
    step = found if found is not None else 0
    agent = steps[step][0] if steps else "unknown"
    reason = f"{why} ({', '.join(checks)})" if found is not None else "no check fired: step 0"
    return agent, step, reason


def _checked(state: PolicyInput, checks: list[str] | None, why: str) -> PolicyReply:
    """Distil or merge when asked; else blame the first step `checks` flag (None: the
    checks the prompt's schemata name)."""
    prompt = state.last_user_text
    if _distilling(prompt):
        return _distill_reply(prompt)
    return _answer(state, _pick(prompt, guidance_checks(prompt) if checks is None else checks, why))


@policy("correct_matcher")
def correct_matcher(state: PolicyInput) -> PolicyReply:
    """Runs the checks the retrieved schemata name; blames the first step they flag (else 0)."""
    return _checked(state, None, "first step a schema check flags")


@policy("correct_checker")
def correct_checker(state: PolicyInput) -> PolicyReply:
    """Runs every check with no schema; blames the first step any flags (a reasoning ceiling)."""
    return _checked(state, list(CHECKS), "first step a check flags")


@lru_cache(maxsize=2)
def surface_model(train: str = SHIPPED_TRAIN) -> SurfaceBaseline:
    """The surface baseline trained on the train half of `train` ('' = the shipped split)."""
    from docket.benchmarks.correct.simulator.generate import split_for

    path = train or str(_shipped())
    rows = [
        t
        for t in read_trajectories(path)
        if (t.metadata.get("split") or split_for(t.id)) == "train"
    ]
    return SurfaceBaseline().fit(
        [[(s.name, s.content) for s in t.history] for t in rows], [t.mistake_step for t in rows]
    )


def _shipped() -> object:
    from importlib.resources import files

    return files("docket.benchmarks.correct").joinpath("data/mas_trajectories.jsonl.gz")


@policy("correct_surface", args={"train": str})
def correct_surface(state: PolicyInput) -> PolicyReply:
    """The surface baseline (words and positions, trained on the train split) as a model."""
    prompt = state.last_user_text
    if _distilling(prompt):
        return _distill_reply(prompt)
    steps = conversation(prompt.split(SCHEMA_MARKER, 1)[0])
    if not steps:
        return PolicyReply(text="I don't know.")
    step = surface_model(str(state.args.get("train", SHIPPED_TRAIN))).predict(steps)
    return _answer(state, (steps[step][0], step, "surface baseline's likeliest step"))
