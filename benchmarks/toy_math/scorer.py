"""Verification of a toy-math answer, of a whole toy-math solution, and the SAR scorer.

`answer_match` (the `docket/toy_math` headline) checks the final answer only: the number the
reply states (`docket.core.answers.extract_number`: a `\boxed{}` value, the last `ANSWER: N`,
the value after the last `=`, else the last number that is not one of the problem's own); a
reply with none, or only the problem's numbers, or a list of candidates is unparsed.
SAR keeps a trace as training data, so `trace_verifier` checks every intermediate step too: a
trace must state each of the problem's steps in order (style A `7+5=12`, style B `Adding 5
gives 12.` / `Multiplying 12 by 3 gives 36.`, style C `7 + 5 = 12`), with the problem's operator
and operand, the running value on the left where the style writes one, the right result, and
a final `ANSWER:` equal to the last result. A "repair" that fixes only the ANSWER line fails.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    Target,
    accuracy,
    mean,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from docket.benchmarks.toy_math.reference import Chain, apply
from docket.core.answers import (
    Extraction,
    extract_number,
    parse_metadata,
    same_number,
    unparsed,
)

_ANSWER = re.compile(r"ANSWER:\s*(-?\d+)")
#: One stated step: an equation `a op b = c` (styles A and C) or a style-B sentence.
_STEP = re.compile(
    r"(?P<left>-?\d+)\s*(?P<op>[+*-])\s*(?P<operand>\d+)\s*=\s*(?P<result>-?\d+)"
    r"|(?P<verb>Adding|Subtracting) (?P<b_operand>\d+) gives (?P<b_result>-?\d+)"
    r"|Multiplying (?P<m_left>-?\d+) by (?P<m_operand>\d+) gives (?P<m_result>-?\d+)"
)
_VERBS = {"Adding": "+", "Subtracting": "-"}


def final_answer(text: str) -> int | None:
    """The number of the last `ANSWER:` line (None when there is none)."""
    found = _ANSWER.findall(text)
    return int(found[-1]) if found else None


def verifier(target: str) -> Callable[[str], bool]:
    """A callable: does a trace's final answer equal `target`? (the final answer only)

    Args:
        target: The problem's result.

    Returns:
        A predicate over trace texts.
    """
    return lambda text: final_answer(text) == int(target)


def stated_steps(text: str) -> list[tuple[int | None, str, int, int]]:
    """The steps a trace states, in order: (left value or None, operator, operand, result).

    Args:
        text: A solution in style A, B or C.

    Returns:
        One tuple per equation or style-B sentence found (style B's adding and subtracting
        sentences name no left value).
    """
    steps: list[tuple[int | None, str, int, int]] = []
    for found in _STEP.finditer(text):
        if found["op"]:
            steps.append(
                (int(found["left"]), found["op"], int(found["operand"]), int(found["result"]))
            )
        elif found["verb"]:
            steps.append(
                (None, _VERBS[found["verb"]], int(found["b_operand"]), int(found["b_result"]))
            )
        else:
            steps.append(
                (int(found["m_left"]), "*", int(found["m_operand"]), int(found["m_result"]))
            )
    return steps


def trace_problem(chain: Chain, text: str) -> str | None:
    """Why a trace does not solve `chain` step by step, or None when every step checks.

    Args:
        chain: The problem (start value and steps).
        text: The trace.

    Returns:
        None for a verified trace, else one line naming the first wrong step or the answer.
    """
    stated = stated_steps(text)
    if len(stated) != len(chain.steps):
        return f"states {len(stated)} steps, the problem has {len(chain.steps)}"
    value = chain.start
    for number, ((left, op, operand, result), (want_op, want_operand)) in enumerate(
        zip(stated, chain.steps, strict=True), 1
    ):
        right = apply(value, want_op, want_operand)
        if (op, operand) != (want_op, want_operand):
            return f"step {number} is {op}{operand}, the problem says {want_op}{want_operand}"
        if left is not None and left != value:
            return f"step {number} starts from {left}, the running value is {value}"
        if result != right:
            return f"step {number} gives {result}, it should give {right}"
        value = right
    answer = final_answer(text)
    if answer != value:
        return f"ANSWER {answer} is not the last step's result {value}"
    return None


def trace_verifier(chain: Chain) -> Callable[[str], bool]:
    """A callable: does a trace solve `chain` with every intermediate step right?

    Args:
        chain: The problem.

    Returns:
        A predicate over trace texts (`trace_problem(chain, text) is None`).
    """
    return lambda text: trace_problem(chain, text) is None


def read_answer(completion: str, metadata: dict[str, Any]) -> Extraction:
    """The number a reply answers, the problem's own numbers (start, operands) as its echo.

    Args:
        completion: The reply.
        metadata: The sample metadata (`start`, `steps`).

    Returns:
        The extraction (see the module docstring).
    """
    own = [metadata["start"], *(operand for _, operand in metadata["steps"])]
    return extract_number(completion, echoed=[str(n) for n in own])


@scorer(metrics=[accuracy(), stderr(), unparsed()])
def answer_match() -> Scorer:
    """CORRECT when the reply's final answer (see the module docstring) equals the target.

    Returns:
        A scorer with CORRECT or INCORRECT, the parsed number as the answer, and `parsed` (with
        `form` or `reason`) in the metadata.
    """

    async def score(state: TaskState, target: Target) -> Score:
        found = read_answer(state.output.completion, state.metadata)
        ok = same_number(found, target.text)
        how = f"{found.form} {found.value}" if found.parsed else f"unparsed ({found.reason})"
        return Score(
            value=CORRECT if ok else INCORRECT,
            answer=found.value,
            explanation=f"{how} vs {target.text}",
            metadata=parse_metadata(found),
        )

    return score


SAR_KEYS = ("rs_yield", "repair_accepted", "edit_ratio", "rewrite_ok", "synth_ok")


@scorer(metrics={key: [mean()] if key != "rs_yield" else [mean(), stderr()] for key in SAR_KEYS})
def sar_collection() -> Scorer:
    """What SAR made of one problem: the student's yield and the teacher's accepted repairs.

    `repair_accepted` and `edit_ratio` are NaN for a problem with no failed trace (the mean is
    over the problems that had one); the traces of each source are in the score metadata
    (`export_sources` reads them from the log).

    Returns:
        A scorer with the student's yield and the repair statistics of the problem.
    """

    async def score(state: TaskState, target: Target) -> Score:
        sources = dict(state.store.get("sources") or {})
        verdicts = list(state.store.get("verdicts") or [])
        k = int(state.store.get("k") or 1)
        failed = len(verdicts)
        accepted = sum(v["accepted"] for v in verdicts)
        ratios = [v["edit_ratio"] for v in verdicts]
        value = {
            "rs_yield": len(sources.get("rs", [])) / k,
            "repair_accepted": accepted / failed if failed else math.nan,
            "edit_ratio": sum(ratios) / len(ratios) if ratios else math.nan,
            "rewrite_ok": _share(state.store.get("rewrite_checks")),
            "synth_ok": _share(state.store.get("synth_checks")),
        }
        reasons = "; ".join(v["reason"] for v in verdicts) or "no failed trace"
        return Score(
            value=value,
            explanation=f"{len(sources.get('rs', []))}/{k} correct; repairs: {reasons}",
            metadata={"sources": sources, "verdicts": verdicts},
        )

    return score


def _share(checks: Any) -> float:
    values = list(checks or [])
    return sum(values) / len(values) if values else math.nan
