"""`inspect eval` against a dead port says so within seconds: docket's retry hook warns once per
model and failure kind when Inspect retries a call (`docket/retry_notice.py`)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from inspect_ai.model import GenerateConfig, get_model

import docket._registry  # noqa: F401 - the entry point (and its hook) loaded before the patch
from docket import compatible
from tests.fake_openai import closed_port


def test_a_retried_call_to_a_dead_port_is_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr(compatible, "COMMAND_LINE_MODELS", ["openai/dead-9"])
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model = get_model(
        "openai/dead-9",
        base_url=url,
        config=GenerateConfig(max_retries=2),
        memoize=False,
        responses_api=False,
        max_retries=0,
    )
    with caplog.at_level(logging.WARNING, logger="docket.retry_notice"):
        with pytest.raises(Exception):  # noqa: B017 - Inspect's RetryError around the refusal
            asyncio.run(model.generate("hi"))
    lines = [r.getMessage() for r in caplog.records if r.name == "docket.retry_notice"]
    assert lines == [
        "openai/dead-9: a call failed (APIConnectionError); Inspect retries it (retry 1, "
        f"next in {lines[0].split('next in ')[1].split(' s')[0]} s); "
        "`docket doctor --model openai/dead-9` checks the endpoint in one line"
    ]


def test_the_notice_is_off_without_a_network_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from docket.retry_notice import RetryNotice

    monkeypatch.setattr(compatible, "COMMAND_LINE_MODELS", ["docket/scripted"])
    assert not RetryNotice().enabled()
    monkeypatch.setattr(compatible, "COMMAND_LINE_MODELS", ["openai/x"])
    assert RetryNotice().enabled()
