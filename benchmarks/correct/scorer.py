"""Scoring of a localisation: exact step (the headline), agent, step within ±tolerance, joint.

Each value is a dict; the metrics are Inspect's own: accuracy and stderr per key, the same
grouped by error type, task family and length tier, and the mean cache overhead / schemata per
sample. Agent names are compared after `normalise_agent` (articles, role suffixes, case,
spacing and aliases).
"""

from __future__ import annotations

import json

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    accuracy,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from docket.benchmarks.correct.prompts import normalise_agent

KEYS = ("step", "agent", "step_within", "joint")
GROUPS = ("error_type", "task_family", "tier")


@metric
def breakdown() -> Metric:
    """Accuracy and its stderr per error type, task family and tier (Inspect's own metrics).

    Returns:
        A metric with `<group>/<name>` and `<group>/<name>_stderr` per group value.
    """

    def compute(scores: list[SampleScore]) -> Value:
        table: dict[str, float] = {}
        for group in GROUPS:
            buckets: dict[str, list[SampleScore]] = {}
            for item in scores:
                name = str((item.sample_metadata or {}).get(group, "unknown"))
                buckets.setdefault(name, []).append(item)
            for name, members in sorted(buckets.items()):
                table[f"{group}/{name}"] = float(accuracy()(members))  # type: ignore[arg-type]
                table[f"{group}/{name}_stderr"] = float(stderr()(members))  # type: ignore[arg-type]
        return table

    return compute


def _metrics() -> dict[str, list[Metric]]:
    table = {
        key: [accuracy(), stderr(), *([breakdown()] if key in ("step", "agent") else [])]
        for key in KEYS
    }
    for key in ("answered", "schemata", "cache_hit", "cache_ms"):
        table[key] = [mean()]
    return table


def localisation_value(
    predicted_agent: str | None, predicted_step: int | None, agent: str, step: int, tolerance: int
) -> dict[str, float]:
    """The per-key values of one prediction against the gold (agent, step)."""
    agent_ok = predicted_agent is not None and normalise_agent(predicted_agent) == normalise_agent(
        agent
    )
    step_ok = predicted_step is not None and predicted_step == step
    near = predicted_step is not None and abs(predicted_step - step) <= tolerance
    return {
        "step": float(step_ok),
        "agent": float(agent_ok),
        "step_within": float(near),
        "joint": float(agent_ok and step_ok),
        "answered": float(predicted_agent is not None and predicted_step is not None),
    }


@scorer(metrics=_metrics())
def localisation(tolerance: int = 1) -> Scorer:
    """Compare the solver's prediction with the gold mistake agent and step.

    Args:
        tolerance: Largest distance, in steps, of a prediction counted as step-correct within
            tolerance.

    Returns:
        A scorer of agent and step accuracy (and the cache's counters for CORRECT).
    """

    async def score(state: TaskState, target: Target) -> Score:
        gold = json.loads(target.text)
        prediction = state.metadata.get("prediction") or {}
        agent, step = prediction.get("agent"), prediction.get("step")
        value: dict[str, float] = localisation_value(
            agent, step, str(gold["agent"]), int(gold["step"]), tolerance
        )
        cache = state.metadata.get("cache") or {}
        value.update(
            schemata=float(cache.get("schemata", 0)),
            cache_hit=float(cache.get("hit", 0)),
            cache_ms=float(cache.get("ms", 0.0)),
        )
        why = ""
        if agent is None or step is None:
            missing = " and ".join(
                name for name, got in (("agent", agent), ("step", step)) if got is None
            )
            why = prediction.get("note") or f"the answer names no {missing}"
            explanation = f"scored wrong: {why}; gold {gold['agent']} at step {gold['step']}"
        else:
            step_verdict = (
                "exact"
                if value["step"]
                else f"within ±{tolerance}"
                if value["step_within"]
                else "wrong"
            )
            explanation = (
                f"predicted {agent} at step {step}; gold {gold['agent']} at step {gold['step']} "
                f"(agent {'right' if value['agent'] else 'wrong'}, step {step_verdict})"
            )
        return Score(
            value=value,
            answer=f"{agent}@{step}",
            explanation=explanation,
            metadata={
                "prediction": prediction,
                "cache": cache,
                "parsed": agent is not None and step is not None,
                **({"reason": why} if why else {}),
            },
        )

    return score
