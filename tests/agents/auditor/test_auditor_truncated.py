"""A reply cut at max_tokens is reported as truncated and its repair gets a larger budget (#33)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from inspect_ai.model import (
    ChatMessage,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    ModelUsage,
)

from docket.agents.auditor.parse import MAX_REPAIR_TOKENS, generate_parsed, json_object


class Recorder:
    """Replies in turn and records the max_tokens each call asked for."""

    def __init__(self, replies: list[tuple[str, str, int]]) -> None:
        self.replies = replies
        self.budgets: list[int | None] = []

    async def generate(self, messages: list[Any], config: GenerateConfig) -> ModelOutput:
        self.budgets.append(config.max_tokens)
        text, stop, tokens = self.replies[len(self.budgets) - 1]
        output = ModelOutput.from_content("m", text, stop_reason=stop)  # type: ignore[arg-type]
        output.usage = ModelUsage(output_tokens=tokens)
        return output


def _run(model: Recorder) -> tuple[dict[str, Any] | None, str]:
    prompt: list[ChatMessage] = [ChatMessageUser(content="decide")]
    return asyncio.run(generate_parsed(cast(Model, model), prompt, json_object))


def test_a_cut_reply_is_retried_with_twice_its_tokens() -> None:
    model = Recorder(
        [('{"action": "send", "text": "a lo', "max_tokens", 256), ('{"a": 1}', "stop", 8)]
    )
    assert _run(model) == ({"a": 1}, "")
    assert model.budgets == [None, 512]


def test_a_cut_reply_that_fails_again_says_it_was_truncated() -> None:
    cut = ('{"action": "send", "text": "a lo', "max_tokens", 256)
    model = Recorder([cut, ('{"action": "send", "text": "longer but cut', "max_tokens", 512)])
    value, error = _run(model)
    assert value is None and model.budgets == [None, 512]
    assert error == "reply truncated at max_tokens (512 tokens): no JSON object found"


def test_an_ordinary_format_error_keeps_the_budget_and_says_nothing_of_truncation() -> None:
    model = Recorder([("no json here", "stop", 3), ("still none", "stop", 2)])
    assert _run(model) == (None, "no JSON object found")
    assert model.budgets == [None, None]


def test_a_budget_already_at_the_cap_is_refused_with_the_reason() -> None:
    model = Recorder([("{", "max_tokens", MAX_REPAIR_TOKENS)])
    value, error = _run(model)
    assert value is None and model.budgets == [None]
    assert error == (
        f"reply truncated at max_tokens ({MAX_REPAIR_TOKENS} tokens): no JSON object found; "
        f"not retried (already at {MAX_REPAIR_TOKENS} tokens)"
    )
