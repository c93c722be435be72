"""Parse a model's JSON reply, retrying once with a repair prompt before giving up."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
)

T = TypeVar("T")

_FENCED = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

REPAIR_PROMPT = (
    "Your previous reply could not be used: {error}. Reply again with ONLY the JSON object in "
    "the required format, nothing else."
)


TRUNCATED_PROMPT = (
    "Your previous reply was cut off at {tokens} tokens before the JSON object was complete "
    "({error}). Reply again with ONLY the JSON object, shorter, nothing else."
)

#: The largest token budget a repair retry of a truncated reply may ask for.
MAX_REPAIR_TOKENS = 4096


class ReplyFormatError(ValueError):
    """A model reply that is not the JSON object the caller asked for."""


def json_object(text: str) -> dict[str, Any]:
    """The JSON object in `text` (bare, fenced, or surrounded by prose)."""
    match = _FENCED.search(text) or _OBJECT.search(text)
    if not match:
        raise ReplyFormatError("no JSON object found")
    try:
        value = json.loads(match.group(1) if match.re is _FENCED else match.group(0))
    except json.JSONDecodeError as ex:
        raise ReplyFormatError(f"invalid JSON ({ex.msg} at char {ex.pos})") from None
    except (ValueError, RecursionError) as ex:  # over-long integers, deep nesting
        raise ReplyFormatError(f"unreadable JSON ({type(ex).__name__})") from None
    if not isinstance(value, dict):
        raise ReplyFormatError("the JSON value is not an object")
    return value


def _truncated_tokens(output: ModelOutput) -> int | None:
    """The tokens a reply was cut at (None when it was not cut at max_tokens)."""
    if output.stop_reason != "max_tokens":
        return None
    usage = output.usage.output_tokens if output.usage is not None else 0
    return usage or None


async def generate_parsed(
    model: Model, messages: list[ChatMessage], parse: Callable[[str], T], repairs: int = 1
) -> tuple[T | None, str]:
    """Generate and `parse`; on `ReplyFormatError` retry `repairs` times with a repair prompt.

    A reply cut at `max_tokens` is reported as truncated, and its repair retry asks for twice
    the tokens it was cut at (up to `MAX_REPAIR_TOKENS`; a budget already there is refused
    with that reason instead of retried the same way).

    Args:
        model: The model asked.
        messages: The conversation so far.
        parse: Parses a reply; raises `ReplyFormatError` when it cannot.
        repairs: Retries after a reply that does not parse.

    Returns:
        The parsed value (None after the last failure) and the last error ('' on success).
    """
    conversation = list(messages)
    error = ""
    config: GenerateConfig | None = None
    for _ in range(repairs + 1):
        output = await model.generate(conversation, config=config or GenerateConfig())
        try:
            return parse(output.completion), ""
        except ReplyFormatError as ex:
            error = str(ex)
            tokens = _truncated_tokens(output)
            if tokens is None:
                prompt = REPAIR_PROMPT.format(error=error)
            else:
                error = f"reply truncated at max_tokens ({tokens} tokens): {error}"
                if tokens >= MAX_REPAIR_TOKENS:
                    return None, f"{error}; not retried (already at {MAX_REPAIR_TOKENS} tokens)"
                config = GenerateConfig(max_tokens=min(2 * tokens, MAX_REPAIR_TOKENS))
                prompt = TRUNCATED_PROMPT.format(tokens=tokens, error=str(ex))
            conversation += [
                ChatMessageAssistant(content=output.completion),
                ChatMessageUser(content=prompt),
            ]
    return None, error
