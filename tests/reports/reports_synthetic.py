"""A tiny non-docket Inspect task whose per-sample scores a test plants exactly.

`run_gate_task` evaluates `synth_gate` on the scripted comply model; samples whose id is in
`failing` score 0, the rest 1. Each score is a dict (`correct`, `iou`, `turns`, `complied`), so
the report's binary, survival and IoU paths all have known inputs. `headline` plants the task's
declaration (`log.eval.metadata["headline"]`, the dict docket tasks write), or none at all as a
task of another package would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    accuracy,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from docket.core.splits import split_metadata

N_SAMPLES = 20
HORIZON = 3
#: Declarations as docket's `headline(...)` writes them into task metadata.
BINARY_HEADLINE = {
    "scorer": "planted",
    "score": "correct",
    "metric": "accuracy",
    "direction": "higher",
    "value": "binary",
    "sample_key": "correct",
    "time_key": None,
    "event_key": None,
    "horizon": None,
}
SURVIVAL_HEADLINE = {
    "scorer": "planted",
    "score": "complied",
    "metric": "compliance_at_T",
    "direction": "lower",
    "value": "survival",
    "sample_key": None,
    "time_key": "turns",
    "event_key": "complied",
    "horizon": HORIZON,
}
DEFAULT_PLAN: dict[str, Any] = {
    "failing": frozenset(),
    "complying": frozenset(),
    "version": "1-A",
    "headline": BINARY_HEADLINE,
    "benchmark": "synth",
    "ids": None,
    "split": None,  # a sha256 recorded as the task's data split (`docket.core.splits`)
    "clustered": False,  # score with `planted_clustered` (stderr clustered by category)
}
#: What the next `synth_gate` build plants (read when the task is built).
PLAN: dict[str, Any] = dict(DEFAULT_PLAN)


def category(i: int) -> str:
    """Odd ids are category 'odd', even ids 'even'."""
    return "odd" if i % 2 else "even"


def planted_turn(i: int) -> int:
    """The turn at which a complying sample complies: 1, 2 or 3."""
    return i % HORIZON + 1


@metric(name="compliance_at_T")
def compliance_at_T() -> Metric:
    """Share of samples that complied by the horizon (every sample is observed through it)."""

    def compute(scores: list[SampleScore]) -> float:
        return sum(float(s.score.as_float()) for s in scores) / len(scores)

    return compute


@scorer(
    metrics={
        "correct": [accuracy(), stderr()],
        "iou": [mean()],
        "complied": [compliance_at_T()],
    }
)
def planted() -> Scorer:
    """1 unless the id is planted as failing; IoU = id/20; complies at turn `planted_turn(id)`
    when planted as complying, else observed through turn 3 without complying."""
    failing = frozenset(PLAN["failing"])
    complying = frozenset(PLAN["complying"])

    async def score(state: TaskState, target: Target) -> Score:
        i = int(state.sample_id)
        ok = i not in failing
        complied = i in complying
        return Score(
            value={
                "correct": int(ok),
                "iou": i / N_SAMPLES,
                "turns": planted_turn(i) if complied else HORIZON,
                "complied": int(complied),
            },
            explanation=f"sample {i} planted {'pass' if ok else 'fail'}",
        )

    return score


@scorer(
    metrics={
        "correct": [accuracy(), stderr(cluster="category")],
        "iou": [mean()],
        "complied": [compliance_at_T()],
    }
)
def planted_clustered() -> Scorer:
    """`planted`, its `correct` stderr clustered by the samples' `category` (odd / even)."""
    return planted()


@task
def synth_gate(variant: str = "a") -> Task:
    """Twenty samples scored by `planted`; `variant` only exists to change task args."""
    metadata: dict[str, Any] = {}
    if PLAN["headline"] is not None:
        metadata["headline"] = PLAN["headline"]
        if PLAN["clustered"]:
            metadata["headline"] = {**PLAN["headline"], "scorer": "planted_clustered"}
    if PLAN["benchmark"] is not None:
        metadata["benchmark"] = PLAN["benchmark"]
    if PLAN["split"] is not None:
        metadata.update(split_metadata(PLAN["split"], generated=True))
    ids = PLAN["ids"] or range(1, N_SAMPLES + 1)
    return Task(
        dataset=[
            Sample(
                id=i, input=f"item {i} ({variant})", target="x", metadata={"category": category(i)}
            )
            for i in ids
        ],
        solver=generate(),
        scorer=planted_clustered() if PLAN["clustered"] else planted(),
        version=str(PLAN["version"]),
        metadata=metadata,
    )


def gate_task(variant: str = "a", **plan: Any) -> Task:
    """`synth_gate` with the planted failures, version, declaration, ... (defaults otherwise)."""
    PLAN.clear()
    PLAN.update(DEFAULT_PLAN)
    PLAN.update({k: frozenset(v) if k in ("failing", "complying") else v for k, v in plan.items()})
    return synth_gate(variant=variant)


def run_gate_tasks(log_dir: Path, plans: list[dict[str, Any]], **eval_args: Any) -> list[EvalLog]:
    """Evaluate one `gate_task(**plan)` per plan in a single Inspect run, logs in task order."""
    logs = inspect_eval(
        [gate_task(**plan) for plan in plans],
        model=get_model("docket/scripted", policy="comply"),
        log_dir=str(log_dir),
        display="none",
        **eval_args,
    )
    for log in logs:
        assert log.status == "success", log.error
    return logs


def run_gate_task(log_dir: Path, eval_args: dict[str, Any] | None = None, **plan: Any) -> EvalLog:
    """Evaluate one `gate_task(**plan)` into `log_dir` (`eval_args` go to `inspect_ai.eval`)."""
    [log] = run_gate_tasks(log_dir, [plan], **(eval_args or {}))
    return log


@scorer(metrics=[mean()])
def nan_scorer() -> Scorer:
    """Every sample scores NaN, so the headline mean is NaN."""

    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=float("nan"))

    return score


@solver
def failing_solver() -> Solver:
    """Raises on every sample (all samples errored)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        raise RuntimeError("planted solver failure")

    return solve


@task
def synth_broken(kind: str = "nan") -> Task:
    """Three samples that cannot be scored: `kind` nan (NaN headline), errored, or noscorer."""
    return Task(
        dataset=[Sample(id=i, input=f"item {i}", target="x") for i in range(1, 4)],
        solver=failing_solver() if kind == "errored" else generate(),
        scorer=None if kind == "noscorer" else nan_scorer(),
    )
