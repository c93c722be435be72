"""`unanswered_reason`: a sample whose model never answered is an infrastructure failure; a
model-free sample, an answered one, and one that already carries an error are not."""

from __future__ import annotations

from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalError, EvalSample, EvalSampleLimit
from inspect_ai.model import GenerateConfig, ModelOutput

from docket.core.errored import UNANSWERED_PREFIX, last_model_error, unanswered_reason


def _call(role: str | None = None, error: str | None = None, text: str = "hi") -> ModelEvent:
    output = ModelOutput(model="m") if error else ModelOutput.from_content("m", text)
    return ModelEvent(
        model="openai/m",
        role=role,
        input=[],
        tools=[],
        tool_choice="none",
        config=GenerateConfig(),
        output=output,
        error=error,
    )


def _sample(events: list[ModelEvent], limit: float | None = None) -> EvalSample:
    return EvalSample(
        id=1,
        epoch=1,
        input="q",
        target="a",
        events=list(events),
        limit=EvalSampleLimit(type="time", limit=limit) if limit is not None else None,
    )


def test_a_time_limit_before_any_answer_is_unanswered() -> None:
    sample = _sample([_call(error="RuntimeError('model call cancelled')")], limit=30)
    assert unanswered_reason(sample) == f"{UNANSWERED_PREFIX} before the time limit (30)"
    assert (
        unanswered_reason(_sample([], limit=30))
        == f"{UNANSWERED_PREFIX} before the time limit (30)"
    )


def test_every_failed_call_of_the_model_under_test_is_unanswered() -> None:
    sample = _sample([_call(error="boom"), _call(error="Error code: 500 - out of memory")])
    assert unanswered_reason(sample) == (
        f"{UNANSWERED_PREFIX}: 2 call(s) of openai/m failed (Error code: 500 - out of memory)"
    )
    assert last_model_error(sample) == "Error code: 500 - out of memory"


def test_answered_model_free_and_already_errored_samples_are_measurements() -> None:
    assert unanswered_reason(_sample([_call(error="boom"), _call()])) is None
    assert unanswered_reason(_sample([_call()], limit=30)) is None  # too slow, but it answered
    assert unanswered_reason(_sample([])) is None  # model-free by design
    judged = _sample([_call(role="judge")], limit=30)
    assert unanswered_reason(judged) is None  # a role answered before the limit
    errored = _sample([_call(error="boom")])
    errored.error = EvalError(message="x", traceback="", traceback_ansi="")
    assert unanswered_reason(errored) is None  # Inspect already errored it
