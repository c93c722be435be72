"""Turn a `Generation` into Inspect output: assistant message, tool calls and logprobs."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    Logprob,
    Logprobs,
    TopLogprob,
)
from inspect_ai.tool import ToolInfo

from .chat import check_arguments, parse_tool_calls
from .sampling import Generation


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2 byte-level BPE's printable character -> byte table, inverted."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


class TokenText:
    """Per-tokenizer token id -> (text, UTF-8 bytes), memoised."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.byte_level = self._is_byte_level(tokenizer)
        self._memo: dict[int, tuple[str, list[int]]] = {}

    @staticmethod
    def _is_byte_level(tokenizer: Any) -> bool:
        try:
            from tokenizers.decoders import ByteLevel

            return isinstance(tokenizer.backend_tokenizer.decoder, ByteLevel)
        except (ImportError, AttributeError):
            return False

    def __call__(self, token_id: int) -> tuple[str, list[int]]:
        if token_id not in self._memo:
            text = self.tokenizer.decode([token_id], skip_special_tokens=False)
            raw = text.encode("utf-8")
            if self.byte_level:
                piece = self.tokenizer.convert_ids_to_tokens(token_id)
                table = _byte_decoder()
                if isinstance(piece, str) and all(ch in table for ch in piece):
                    raw = bytes(table[ch] for ch in piece)
            self._memo[token_id] = (text, list(raw))
        return self._memo[token_id]


def to_logprobs(generation: Generation, token_text: TokenText) -> Logprobs:
    """One `Logprob` per generated token (the final EOS excluded)."""
    content: list[Logprob] = []
    for step in generation.steps:
        text, raw = token_text(step.token_id)
        top = [
            TopLogprob(token=t, logprob=lp, bytes=b) for t, b, lp in _named(step.top, token_text)
        ]
        content.append(Logprob(token=text, logprob=step.logprob, bytes=raw, top_logprobs=top))
    return Logprobs(content=content)


def _named(
    top: list[tuple[int, float]], token_text: TokenText
) -> list[tuple[str, list[int], float]]:
    return [(*token_text(token_id), logprob) for token_id, logprob in top]


def to_choice(
    generation: Generation,
    model_name: str,
    tools: Sequence[ToolInfo],
    token_text: TokenText | None,
) -> ChatCompletionChoice:
    """An Inspect choice; with tools offered, tool calls are parsed out of the text and their
    arguments checked against the tools' schemas (`chat.check_arguments`)."""
    names = [tool.name for tool in tools]
    text, calls = parse_tool_calls(generation.text, names) if names else ("", [])
    calls = check_arguments(calls, tools)
    message = ChatMessageAssistant(
        content=text if calls else generation.text,
        tool_calls=calls or None,
        model=model_name,
        source="generate",
    )
    logprobs = to_logprobs(generation, token_text) if token_text is not None else None
    stop_reason = "tool_calls" if calls else generation.stop_reason
    return ChatCompletionChoice(message=message, stop_reason=stop_reason, logprobs=logprobs)
