"""Verification of a toy-math answer and the SAR data-collection scorer."""

from __future__ import annotations

import math
import re
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

_ANSWER = re.compile(r"ANSWER:\s*(-?\d+)")


def final_answer(text: str) -> int | None:
    """The number of the last `ANSWER:` line (None when there is none)."""
    found = _ANSWER.findall(text)
    return int(found[-1]) if found else None


def verifier(target: str) -> Any:
    """A callable: does a trace's final answer equal `target`?"""
    return lambda text: final_answer(text) == int(target)


@scorer(metrics=[accuracy(), stderr()])
def answer_match() -> Scorer:
    """CORRECT when the last `ANSWER:` number equals the target.

    Returns:
        A scorer with CORRECT or INCORRECT and the parsed number as the answer.
    """

    async def score(state: TaskState, target: Target) -> Score:
        answer = final_answer(state.output.completion)
        ok = answer is not None and answer == int(target.text)
        return Score(
            value=CORRECT if ok else INCORRECT,
            answer=None if answer is None else str(answer),
            explanation=f"ANSWER {answer} vs {target.text}",
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
