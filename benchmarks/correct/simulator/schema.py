"""CORRECT error schemata written by rules: distil, merge, and refine by replay.

A schema has CORRECT's three sections plus the label of the failure it came from:

    Error Signatures: <agent> in <the kind of turn> at <where>: "<first line, digits masked>".
        Exposed by: <checks>.
    Context Analysis: <the turn before it> ...
    Detection Heuristics: Ask: <one question per check>. Checks: tool_value (2), arithmetic (1).
    Label: Agent Name: ...; Step Number: ...; Reason: ...

`rule_schema` distils one from a labelled failure: the checks are those of
`docket.benchmarks.correct.simulator.checks` that flag the labelled step. `merge_schemata` folds
a new failure's schema into a kept one (union of checks with their counts, both signatures and
labels), and `replay_schema` refines a hot schema by replaying each of its checks on the failures
it was built from: the Checks line then lists how often each check alone finds the labelled step,
and drops the checks that flag an earlier, innocent step more often than they find the label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from docket.benchmarks.correct.simulator.checks import CHECKS, QUESTIONS, flags

Steps = Sequence[tuple[str, str]]
_CHECKS_LINE = re.compile(r"Checks: ([^\n]*?)\.?(?:\n|$)")
_CHECK_ITEM = re.compile(r"([a-z_]+) \((?:replay (\d+)/(\d+)|(\d+))\)")
_LABEL = re.compile(r"^(?:Label|Also labelled): .*$", re.M)
_EXAMPLE = re.compile(r'"[^"\n]*"')
#: Replay uses the most recent failures of an entry, at most this many.
REPLAY_SOURCES = 20
_MAX_EXAMPLES = 3


@dataclass(frozen=True)
class Labelled:
    """A labelled failure as replay needs it: the problem, the steps and the mistake step."""

    question: str
    steps: tuple[tuple[str, str], ...]
    step: int


def mask(text: str) -> str:
    """Digits replaced by N."""
    return re.sub(r"\d+", "N", text)


def turn_kind(steps: Steps, index: int) -> str:
    """A short description of the kind of turn at `index`."""
    agent, content = steps[index]
    if agent == "Planner":
        return "the plan" if index == 0 else "a progress check of the plan"
    if agent == "Orchestrator":
        if content.startswith("Next speaker"):
            return "a dispatch"
        if "FINAL ANSWER" in content:
            return "the final answer"
        return "the wrap-up" if "Verifier" in content else "a ledger note"
    if agent in ("WebSurfer", "FileSurfer"):
        return "a tool report"
    if agent == "Calculator":
        return "a calculation"
    return "a program" if agent == "Coder" else "a turn"


def exposing_checks(question: str, steps: Steps, step: int) -> list[str]:
    """The checks that flag `step` of a conversation."""
    found = flags(question, list(steps))
    return [c for c in CHECKS if 0 <= step < len(found) and c in found[step]]


def rule_schema(question: str, steps: Steps, agent: str, step: int, reason: str) -> str:
    """A deterministic CORRECT-style schema of one labelled failure."""
    content = steps[step][1] if 0 <= step < len(steps) else ""
    first_line = mask(content.splitlines()[0] if content else "")
    where = (
        "the first step"
        if step == 0
        else ("the last step" if step == len(steps) - 1 else f"step {step} of {len(steps)}")
    )
    kind = turn_kind(steps, step) if 0 <= step < len(steps) else "a turn"
    before = steps[step - 1] if 0 < step <= len(steps) else None
    context = "It opens the conversation, before any tool is used."
    if before is not None:
        line = mask(before[1].splitlines()[0]) if before[1] else ""
        context = f'It follows {before[0]} ({turn_kind(steps, step - 1)}): "{line}".'

    checks = exposing_checks(question, steps, step) if 0 <= step < len(steps) else []
    exposed = ", ".join(checks) if checks else "no rule check"
    questions = " ".join(f"{c}: {QUESTIONS[c]}" for c in checks) or (
        f"Is {agent}'s step supported by the earlier steps and tool outputs?"
    )
    return (
        f'Error Signatures: {agent} in {kind} at {where}: "{first_line}". Exposed by: {exposed}.\n'
        f"Context Analysis: {context}\n"
        f"Detection Heuristics: Ask: {questions} Checks: "
        f"{', '.join(f'{c} (1)' for c in checks) or 'none'}.\n"
        f"Label: Agent Name: {agent}; Step Number: {step}; Reason: {reason}"
    )


def schema_checks(text: str) -> dict[str, float]:
    """Check name -> weight from a schema's Checks line (count, or replay success rate)."""
    line = _CHECKS_LINE.search(text)
    if line is None:
        return {}
    weights: dict[str, float] = {}
    for name, hits, tries, count in _CHECK_ITEM.findall(line.group(1)):
        if name in CHECKS:
            weights[name] = int(hits) / max(int(tries), 1) if tries else float(count)
    return weights


def _counts(text: str) -> dict[str, int]:
    line = _CHECKS_LINE.search(text)
    found: dict[str, int] = {}
    for name, hits, _, count in _CHECK_ITEM.findall(line.group(1) if line else ""):
        found[name] = int(count or hits or 0)
    return found


def _section(text: str, name: str) -> str:
    match = re.search(rf"^{name}: (.*)$", text, re.M)
    return match.group(1) if match else ""


def merge_schemata(kept: str, new: str) -> str:
    """`kept` refined with `new`: both signatures, the union of their checks, both labels."""
    counts = _counts(kept)
    for name, count in _counts(new).items():
        counts[name] = counts.get(name, 0) + count
    ordered = sorted(counts, key=lambda c: (-counts[c], CHECKS.index(c) if c in CHECKS else 99))
    checks = ", ".join(f"{c} ({counts[c]})" for c in ordered) or "none"
    signature_kept, signature_new = (
        _section(kept, "Error Signatures"),
        _section(new, "Error Signatures"),
    )
    agents = list(
        dict.fromkeys(re.findall(r"^(\S+) in ", signature_kept + "\n" + signature_new, re.M))
    )
    examples = list(dict.fromkeys(_EXAMPLE.findall(signature_kept + " " + signature_new)))
    head = signature_kept.split(":", 1)[0] if ":" in signature_kept else signature_kept
    if len(agents) > 1:
        head = f"{' or '.join(agents)} in {head.split(' in ', 1)[-1]}"
    seen = len(_LABEL.findall(kept)) + len(_LABEL.findall(new))
    signature = (
        f"{head}: {'; '.join(examples[:_MAX_EXAMPLES])}. Exposed by: "
        f"{', '.join(ordered) or 'no rule check'}. Seen in {seen} failures."
    )
    questions = " ".join(f"{c}: {QUESTIONS[c]}" for c in ordered if c in QUESTIONS)
    labels = _LABEL.findall(kept) + [
        line.replace("Label:", "Also labelled:", 1) for line in _LABEL.findall(new)
    ]
    return (
        f"Error Signatures: {signature}\n"
        f"Context Analysis: {_section(kept, 'Context Analysis')}\n"
        f"Detection Heuristics: Ask: {questions or 'is each step supported?'} Checks: {checks}.\n"
        + "\n".join(labels)
    )


def earliest(question: str, steps: Steps, checks: Sequence[str]) -> int | None:
    """The first step that any of `checks` flags (None: none does)."""
    wanted = set(checks)
    for index, found in enumerate(flags(question, list(steps))):
        if found & wanted:
            return index
    return None


@lru_cache(maxsize=4096)
def first_flags(source: Labelled) -> dict[str, int]:
    """Check -> the first step it flags in a labelled failure (checks that flag none left out)."""
    first: dict[str, int] = {}
    for index, found in enumerate(flags(source.question, list(source.steps))):
        for check in found:
            first.setdefault(check, index)
    return first


def replay_schema(text: str, sources: Sequence[Labelled]) -> str:
    """`text` with its Checks line replaced by each check's replay on `sources`.

    A check *finds* a failure when the first step it flags is the labelled one, and *misleads*
    when it flags an earlier step. The Checks line lists, per check, how many of the failures
    it finds; checks that mislead more often than they find are dropped (at least one stays).
    """
    candidates = list(schema_checks(text)) or list(CHECKS)
    if not sources:
        return text
    recent = list(sources)[-REPLAY_SOURCES:]
    firsts = [first_flags(s) for s in recent]
    finds = {
        c: sum(f.get(c) == s.step for f, s in zip(firsts, recent, strict=True)) for c in candidates
    }
    misleads = {
        c: sum(f.get(c, s.step) < s.step for f, s in zip(firsts, recent, strict=True))
        for c in candidates
    }
    ordered = sorted(candidates, key=lambda c: (-finds[c], misleads[c], CHECKS.index(c)))
    kept = [c for c in ordered if finds[c] >= misleads[c]] or ordered[:1]
    dropped = [c for c in ordered if c not in kept]
    line = ", ".join(f"{c} (replay {finds[c]}/{len(recent)})" for c in kept)
    note = f" Dropped after replay (misleading): {', '.join(dropped)}." if dropped else ""
    replaced = _CHECKS_LINE.sub(lambda _: f"Checks: {line}.{note}\n", text, count=1)
    if replaced == text:  # no Checks line yet (a model-written schema): append one
        replaced = text.rstrip() + f"\nChecks: {line}.{note}"
    return replaced.rstrip("\n")
