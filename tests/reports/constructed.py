"""Eval logs built from Inspect's own log types (no eval runs), with the events a test plants.

`planned(...)` describes one sample epoch: its score, the model calls it made (successful, failed,
cut at max_tokens, asking for logprobs), tool errors, its limit and error, score metadata.
`write_log(...)` turns a list of them into a `.eval` file whose headline is the declared
`accuracy` of the `verdict` scorer (binary), or `mean` of its `value` key for dict scores; the
log's metric is what Inspect would have computed: every sample without an error counted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalSampleLimit,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
)
from inspect_ai.model._model_output import ChatCompletionChoice
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError

from docket.core.headline import headline

MODEL = "docket/scripted"


@dataclass
class Planned:
    """One sample epoch of a constructed log."""

    id: int
    value: Any = 1
    calls: int = 1
    failed_calls: int = 0
    call_error: str = "Connection error."
    judge_calls: int = 0
    truncated: int = 0
    truncated_role: str | None = None
    no_logprobs: int = 0
    tool_errors: int = 0
    parse_errors: int = 0
    content_filter: bool = False
    limit: str | None = None
    error: str | None = None
    score_metadata: dict[str, Any] | None = None
    max_tokens: int | None = None
    epoch: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


def planned(sample_id: int, value: Any = 1, **kwargs: Any) -> Planned:
    """A `Planned` sample epoch (see its fields)."""
    return Planned(sample_id, value, **kwargs)


def _model_event(
    role: str | None,
    *,
    error: str | None = None,
    stop: str = "stop",
    logprobs: bool = False,
    tool_calls: list[ToolCall] | None = None,
    max_tokens: int | None = None,
) -> ModelEvent:
    message = ChatMessageAssistant(content="" if error else "answer", tool_calls=tool_calls)
    output = ModelOutput(
        model=MODEL,
        choices=[ChatCompletionChoice(message=message, stop_reason=stop)],  # type: ignore[arg-type]
    )
    return ModelEvent(
        model=MODEL,
        role=role,
        input=[ChatMessageUser(content="q")],
        tools=[],
        tool_choice="auto",
        config=GenerateConfig(logprobs=logprobs or None, max_tokens=max_tokens),
        output=output,
        error=error,
    )


def _events(p: Planned) -> list[Any]:
    events: list[Any] = []
    events += [_model_event(None, error=p.call_error) for _ in range(p.failed_calls)]
    for index in range(p.calls):
        truncated = p.truncated_role is None and index < p.truncated
        calls = [
            ToolCall(id=f"c{index}-{k}", function="bash", arguments={}, parse_error="bad JSON")
            for k in range(p.parse_errors if index == 0 else 0)
        ]
        events.append(
            _model_event(
                None,
                stop="max_tokens"
                if truncated
                else ("content_filter" if p.content_filter else "stop"),
                logprobs=index < p.no_logprobs,
                tool_calls=calls or None,
                max_tokens=p.max_tokens,
            )
        )
    for index in range(p.judge_calls):
        truncated = p.truncated_role == "judge" and index < p.truncated
        events.append(_model_event("judge", stop="max_tokens" if truncated else "stop"))
    events += [
        ToolEvent(
            id=f"t{k}",
            function="bash",
            arguments={},
            error=ToolCallError(type="parsing", message="unknown key"),
        )
        for k in range(p.tool_errors)
    ]
    return events


def _sample(p: Planned, scorer: str) -> EvalSample:
    limits = {"message": 10, "token": 1000, "time": 30, "working": 30}
    return EvalSample(
        id=p.id,
        epoch=p.epoch,
        input=f"item {p.id}",
        target="x",
        metadata={},
        scores=None
        if p.error is not None
        else {scorer: Score(value=p.value, metadata=p.score_metadata)},
        events=_events(p),
        error=None
        if p.error is None
        else EvalError(message=p.error, traceback="", traceback_ansi=""),
        limit=None if p.limit is None else EvalSampleLimit(type=p.limit, limit=limits[p.limit]),  # type: ignore[arg-type]
    )


def _as_float(value: Any) -> float | None:
    if value == "C":
        return 1.0
    if value == "I":
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return None


def write_log(
    log_dir: Path,
    samples: list[Planned],
    *,
    task: str = "synth_health",
    model: str = MODEL,
    model_args: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    task_args: dict[str, Any] | None = None,
    key: str | None = None,
    metric: str = "accuracy",
    name: str | None = None,
) -> Path:
    """Write one constructed `.eval` log; return its path.

    Args:
        log_dir: Folder written to.
        samples: The sample epochs.
        task: Task name (and registry name).
        model: The model under test.
        model_args: Its model args (a row identity part).
        metadata: Task metadata added to the headline declaration (model_free, ...).
        task_args: Task args (a row identity part).
        key: Dict score key of the headline (then `mean` of it; values are dicts).
        metric: Headline metric (accuracy for 0/1 values; `mean` is recomputable too).
        name: File name (default: a fresh Inspect-style name).

    Returns:
        The log file.
    """
    scorer = "verdict"
    if key is None:
        declared = headline(scorer, metric, direction="higher", value="binary")
        values = [_as_float(p.value) for p in samples if p.error is None]
    else:
        declared = headline(
            scorer, "mean", score=key, sample_key=key, direction="higher", value="continuous"
        )
        metric = "mean"
        values = [
            _as_float(p.value.get(key)) if isinstance(p.value, dict) else None
            for p in samples
            if p.error is None
        ]
    finite = [v for v in values if v is not None and v == v]
    value = sum(finite) / len(finite) if finite else float("nan")
    spec = EvalSpec(
        eval_id=uuid.uuid4().hex,
        run_id=uuid.uuid4().hex,
        created="2026-12-01T12:00:00+00:00",
        task=task,
        task_registry_name=task,
        task_version="1-A",
        task_args=task_args or {},
        dataset=EvalDataset(
            name="constructed",
            samples=len({p.id for p in samples}),
            sample_ids=sorted({p.id for p in samples}),
        ),
        model=model,
        model_args=model_args or {},
        config=EvalConfig(epochs=max(p.epoch for p in samples)),
        metadata={**declared["metadata"], "benchmark": task, **(metadata or {})},
    )
    log = EvalLog(
        eval=spec,
        status="success",
        results=EvalResults(
            total_samples=len(samples),
            completed_samples=len(samples),
            scores=[
                EvalScore(
                    name=key or scorer,
                    scorer=scorer,
                    metrics={metric: EvalMetric(name=metric, value=value)},
                )
            ],
        ),
        stats=EvalStats(
            started_at="2026-12-01T12:00:00+00:00", completed_at="2026-12-01T12:00:05+00:00"
        ),
        samples=[_sample(p, scorer) for p in samples],
    )
    path = log_dir / (name or f"2026-12-01T12-00-00+00-00_{task}_{uuid.uuid4().hex[:22]}.eval")
    write_eval_log(log, str(path))
    return path
