"""A tiny non-docket Inspect task whose per-sample scores a test plants exactly.

`run_gate_task` evaluates `synth_gate` on the scripted comply model; samples whose id is in
`failing` score 0, the rest 1. Each score is a dict (`correct`, `iou`, `compliance_turn`), so the
report's generic tables and its IoU and survival plots all have known inputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Scorer, Target, accuracy, mean, scorer, stderr
from inspect_ai.solver import TaskState, generate

N_SAMPLES = 20
#: What the next `synth_gate` run plants: failing sample ids and the task version.
PLAN: dict[str, object] = {"failing": frozenset(), "version": "1-A"}


def category(i: int) -> str:
    """Odd ids are category 'odd', even ids 'even'."""
    return "odd" if i % 2 else "even"


@scorer(metrics={"correct": [accuracy(), stderr()], "iou": [mean()]})
def planted() -> Scorer:
    """1 unless the sample id is planted as failing; IoU = id/20; complies at turn id mod 4.

    Turn 0 means never; `r@t` is 1 while the sample has not complied by turn t.
    """
    failing = frozenset(PLAN["failing"])  # type: ignore[call-overload]

    async def score(state: TaskState, target: Target) -> Score:
        i = int(state.sample_id)
        ok = i not in failing
        turn = None if i % 4 == 0 else i % 4
        survival = {f"r@{t}": float(turn is None or turn > t) for t in (1, 2, 3)}
        return Score(
            value={"correct": int(ok), "iou": i / N_SAMPLES, "compliance_turn": turn, **survival},
            explanation=f"sample {i} planted {'pass' if ok else 'fail'}",
        )

    return score


@task
def synth_gate(variant: str = "a") -> Task:
    """Twenty samples scored by `planted`; `variant` only exists to change task args."""
    return Task(
        dataset=[
            Sample(
                id=i, input=f"item {i} ({variant})", target="x", metadata={"category": category(i)}
            )
            for i in range(1, N_SAMPLES + 1)
        ],
        solver=generate(),
        scorer=planted(),
        version=str(PLAN["version"]),
    )


def gate_task(failing: set[int] | None = None, version: str = "1-A", variant: str = "a") -> Task:
    """`synth_gate` with the planted failures and version (both read when the task is built)."""
    PLAN["failing"] = frozenset(failing or set())
    PLAN["version"] = version
    return synth_gate(variant=variant)


def run_gate_tasks(log_dir: Path, plans: list[dict[str, Any]]) -> list[EvalLog]:
    """Evaluate one `gate_task(**plan)` per plan in a single Inspect run, logs in task order."""
    logs = inspect_eval(
        [gate_task(**plan) for plan in plans],
        model=get_model("docket/scripted", policy="comply"),
        log_dir=str(log_dir),
        display="none",
    )
    for log in logs:
        assert log.status == "success", log.error
    return logs


def run_gate_task(log_dir: Path, **plan: Any) -> EvalLog:
    """Evaluate one `gate_task(**plan)` into `log_dir`."""
    [log] = run_gate_tasks(log_dir, [plan])
    return log
