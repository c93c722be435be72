"""Parse a model's JSON reply, retrying once with a repair prompt before giving up."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser, Model

T = TypeVar("T")

_FENCED = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

REPAIR_PROMPT = (
    "Your previous reply could not be used: {error}. Reply again with ONLY the JSON object in "
    "the required format, nothing else."
)


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


async def generate_parsed(
    model: Model, messages: list[ChatMessage], parse: Callable[[str], T], repairs: int = 1
) -> tuple[T | None, str]:
    """Generate and `parse`; on `ReplyFormatError` retry `repairs` times with a repair prompt.

    Returns the parsed value (None after the last failure) and the last error ('' on success).
    """
    conversation = list(messages)
    error = ""
    for _ in range(repairs + 1):
        output = await model.generate(conversation)
        try:
            return parse(output.completion), ""
        except ReplyFormatError as ex:
            error = str(ex)
            conversation += [
                ChatMessageAssistant(content=output.completion),
                ChatMessageUser(content=REPAIR_PROMPT.format(error=error)),
            ]
    return None, error
