"""Transient provider errors are retried per Inspect's policy; permanent ones fail one sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import GenerateConfig, Model, RetryDecision, get_model, modelapi
from inspect_ai.scorer import exact
from inspect_ai.solver import generate
from tenacity.wait import WaitBaseT, wait_fixed

from docket.agents.scripted import faults
from docket.agents.scripted.provider import ScriptedModelAPI

_ERRORS = ("TransientProviderError", "PermanentProviderError")
PROMPTS = {key: f"Reply with '{key}'." for key in ("alpha", "beta", "unlucky")}


@modelapi(name="docket-test-retrying")
class RetryingScriptedAPI(ScriptedModelAPI):
    """The scripted provider, classifying TransientProviderError as a retryable error."""

    def should_retry(self, ex: Exception) -> bool | RetryDecision:
        if isinstance(ex, faults.TransientProviderError):
            return RetryDecision.transient()
        return False

    def retry_wait(self) -> WaitBaseT | None:
        return wait_fixed(0.01)  # Inspect's default backoff starts at 3 s; keep tests fast


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    faults.reset_calls()


def _task() -> Task:
    samples = [Sample(id=key, input=text, target=key) for key, text in PROMPTS.items()]
    return Task(dataset=samples, solver=generate(), scorer=exact())


def _run(model: Model, tmp_path: Path, **kwargs: Any) -> EvalLog:
    log = eval(_task(), model=model, log_dir=str(tmp_path), display="none", **kwargs)[0]
    assert log.samples is not None
    return log


def _outcomes(log: EvalLog) -> dict[str, str]:
    """Sample id -> its score value, or `error:<provider error named in the message>`."""
    out: dict[str, str] = {}
    for sample in log.samples or []:
        if sample.error is not None:
            named = [n for n in _ERRORS if n in sample.error.message]
            out[str(sample.id)] = f"error:{named[0] if named else sample.error.message}"
        else:
            assert sample.scores is not None
            out[str(sample.id)] = str(sample.scores["exact"].value)
    return out


def test_transient_errors_are_retried_until_the_call_succeeds(tmp_path: Path) -> None:
    model = get_model(
        "docket-test-retrying/flaky",
        config=GenerateConfig(max_retries=3),
        policy="flaky",
        failures=2,
    )
    log = _run(model, tmp_path)
    assert log.status == "success", log.error
    assert _outcomes(log) == {"alpha": "C", "beta": "C", "unlucky": "C"}
    assert [faults.calls_seen(text) for text in PROMPTS.values()] == [3, 3, 3]
    for sample in log.samples or []:
        attempts = [e.error for e in sample.events if e.event == "model"]
        assert [a and a.split("(")[0] for a in attempts] == [  # each attempt is in the log
            "TransientProviderError",
            "TransientProviderError",
            None,
        ]


def test_exhausted_retries_fail_only_their_sample(tmp_path: Path) -> None:
    model = get_model(
        "docket-test-retrying/flaky",
        config=GenerateConfig(max_retries=2),
        policy="flaky",
        failures=5,
        match="unlucky",
    )
    log = _run(model, tmp_path, fail_on_error=False)
    assert log.status == "success", log.error
    assert _outcomes(log) == {"alpha": "C", "beta": "C", "unlucky": "error:TransientProviderError"}
    assert faults.calls_seen(PROMPTS["unlucky"]) == 3  # the first try and max_retries=2 more
    assert log.results is not None and log.results.completed_samples == 2


@pytest.mark.parametrize("provider", ["docket/scripted", "docket-test-retrying/broken"])
def test_permanent_error_fails_only_its_sample_without_retry(tmp_path: Path, provider: str) -> None:
    model = get_model(
        provider, config=GenerateConfig(max_retries=3), policy="broken", match="unlucky"
    )
    log = _run(model, tmp_path, fail_on_error=False)
    assert log.status == "success", log.error
    assert _outcomes(log) == {"alpha": "C", "beta": "C", "unlucky": "error:PermanentProviderError"}
    assert faults.calls_seen(PROMPTS["unlucky"]) == 1
    assert log.results is not None and log.results.completed_samples == 2
    assert log.results.scores[0].metrics["mean"].value == 1.0


def test_permanent_error_stops_the_eval_when_failing_on_error(tmp_path: Path) -> None:
    model = get_model("docket/scripted", policy="broken", match="unlucky")
    log = _run(model, tmp_path, fail_on_error=True)
    assert log.status == "error"
    assert log.error is not None and "PermanentProviderError" in log.error.message
