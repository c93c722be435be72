"""Shared helpers of the SCSuff end-to-end tests: scripted models, one eval, metric lookups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, resolve_sample_attachments
from inspect_ai.model import Model, get_model

from tests.scores import score_fields


def scripted(policy: str, **args: Any) -> Model:
    return get_model("docket/scripted", policy=policy, memoize=False, **args)


def run(
    task: Task,
    tmp_path: Path,
    policy: str = "scsuff_rule",
    roles: dict[str, Model] | None = None,
    eval_args: dict[str, Any] | None = None,
    **args: Any,
) -> EvalLog:
    log = inspect_eval(
        task,
        model=scripted(policy, **args),
        model_roles=roles,
        log_dir=str(tmp_path),
        **({"display": "none"} | (eval_args or {})),
    )[0]
    assert log.status == "success", log.error
    return log


def metric(log: EvalLog, key: str, name: str = "mean") -> float:
    assert log.results is not None
    for score in log.results.scores:
        if score.name == key:
            return score.metrics[name].value
    raise KeyError(key)


def values(log: EvalLog, scorer: str = "scsuff_scorer") -> list[dict[str, Any]]:
    assert log.samples is not None
    return [score_fields(s, scorer) for s in log.samples]


def model_events(log: EvalLog, role: str | None = None) -> list[ModelEvent]:
    """Every model call of every sample, optionally only those of one model role."""
    assert log.samples is not None
    samples = [resolve_sample_attachments(s, "full") for s in log.samples]
    events = [e for s in samples for e in s.events if isinstance(e, ModelEvent)]
    return [e for e in events if role is None or e.role == role]
