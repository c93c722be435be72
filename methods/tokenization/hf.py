"""`-M tokenizer=incbpe` for `docket/local`: a transformers tokenizer whose encoding runs on the
incremental BPE core.

`IncBpeHFTokenizer` wraps the checkpoint's own (fast, byte-level BPE) tokenizer: encoding goes
through `Tokenizer.stream()`, fed the text in parts, so token ids come out as soon as they are
certain; everything else (decoding, chat template, special-token attributes, saving) is the
wrapped tokenizer's. The ids are the wrapped tokenizer's ids, including the special tokens its
post-processor adds, which are read off the wrapped tokenizer once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .tokenizer import Tokenizer

#: The `-M tokenizer=` value that selects this tokenizer.
INCBPE = "incbpe"
#: Characters handed to the stream encoder at a time when a whole text is encoded.
CHUNK_CHARS = 256


@dataclass
class StreamStats:
    """How the last encoded text streamed: tokens, and how many were certain before its end."""

    tokens: int = 0
    certain_before_end: int = 0
    chunks: int = 0


class IncBpeHFTokenizer:
    """A transformers tokenizer whose `__call__`/`encode` use the incremental BPE core."""

    def __init__(self, inner: Any) -> None:
        if getattr(inner, "backend_tokenizer", None) is None:
            raise ValueError(
                "-M tokenizer=incbpe needs a fast (tokenizers-backed) byte-level BPE tokenizer; "
                f"this checkpoint has {type(inner).__name__}"
            )
        self.inner = inner
        self.incbpe = Tokenizer.from_hf(inner)
        self.last_stream = StreamStats()
        prefix, suffix = self._special_frame(inner)
        self._frame = (prefix, suffix)

    @staticmethod
    def _special_frame(inner: Any) -> tuple[list[int], list[int]]:
        """The ids the post-processor puts before and after one sequence (BOS/EOS...)."""
        bare = list(inner("a", add_special_tokens=False)["input_ids"])
        framed = list(inner("a", add_special_tokens=True)["input_ids"])
        for start in range(len(framed) - len(bare) + 1):
            if framed[start : start + len(bare)] == bare:
                return framed[:start], framed[start + len(bare) :]
        return [], []

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # before __init__ set it
            raise AttributeError(name)
        return getattr(self.inner, name)

    def stream_ids(self, parts: Iterable[str]) -> Iterator[int]:
        """Token ids of the concatenated `parts`, each yielded as soon as it is certain."""
        stream = self.incbpe.stream()
        stats = StreamStats()
        for part in parts:
            stream.feed(part)
            stats.chunks += 1
            for token in stream.emit():
                stats.tokens += 1
                yield token
        stats.certain_before_end = stats.tokens
        for token in stream.flush():
            stats.tokens += 1
            yield token
        self.last_stream = stats

    def encode(self, text: str, add_special_tokens: bool = True, **_: Any) -> list[int]:
        parts = (text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS))
        ids = list(self.stream_ids(parts))
        if add_special_tokens:
            prefix, suffix = self._frame
            ids = [*prefix, *ids, *suffix]
        return ids

    def __call__(self, text: str, add_special_tokens: bool = True, **kwargs: Any) -> dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError("-M tokenizer=incbpe encodes one string at a time")
        ids = self.encode(text, add_special_tokens=add_special_tokens)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)}

    def __len__(self) -> int:
        return len(self.inner)


def wrap(tokenizer: Any) -> IncBpeHFTokenizer:
    """The checkpoint's tokenizer with encoding on the incremental BPE core."""
    return IncBpeHFTokenizer(tokenizer)
