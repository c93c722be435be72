"""The incremental BPE tokenizer: build from an HF `tokenizer.json` or tiktoken ranks, encode
with the source's own pre-tokenization (ids identical to HF tokenizers / tiktoken), and encode
byte streams incrementally with eager output.

    tok = Tokenizer.from_tokenizer_json("tokenizer.json")
    tok.encode("Hello world")                    # == HF tokenizers' ids
    enc = tok.incremental()                      # BPE of a byte stream (no pre-tokenization)
    enc.feed(b"aaaa"); enc.tokens_of_prefix(3); enc.emit(); enc.flush()
    stream = tok.stream()                        # the full pipeline, streamed
    stream.feed("Hello wor"); stream.emit(); stream.feed("ld"); stream.flush()
"""

from __future__ import annotations

import codecs
import re
import struct
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from ._native import native
from .properize import ImproperMergeList, canonical_rules, pack, properize
from .sources import (
    SPLIT_CODES,
    AddedToken,
    Source,
    from_quicktok,
    from_tiktoken_ranks,
    from_tokenizer_json,
)

#: How many probe strings check a properized merge list against the original one.
PROPERIZE_PROBES = 2000


def _valid_text(text: str) -> str:
    """Lone surrogates (not encodable as UTF-8) become U+FFFD, as tiktoken does."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class Tokenizer:
    """Byte-level BPE with the incremental native core; see the module docstring."""

    def __init__(self, source: Source, properize_improper: bool = True) -> None:
        self.source = source
        self.rules = list(source.rules)
        core = native()
        try:
            self.vocab = core.Vocabulary(source.tokens, pack(self.rules))
        except core.ImproperDictionary as error:
            if not properize_improper:
                raise ImproperMergeList(f"{source.name}: {error}") from None
            self.rules = self._properized(str(error))
            self.vocab = core.Vocabulary(source.tokens, pack(self.rules))
        self.pipeline = core.Pipeline(
            self.vocab,
            SPLIT_CODES[source.split],
            unknown_id=-1 if source.unknown_id is None else source.unknown_id,
            fuse_unknown=source.fuse_unknown,
            whole_piece_lookup=source.whole_piece_lookup,
        )
        self._regex: Any = None
        if source.split == "regex":
            import regex

            self._regex = regex.compile(source.pattern or "")
        self._added = {t.content: t for t in source.added}
        self._added_re = self._alternation(source.added)

    # ---------------------------------------------------------------- construction

    @classmethod
    def from_tokenizer_json(cls, spec: str | Path | Mapping[str, Any]) -> Tokenizer:
        """From an HF `tokenizer.json` (path, its folder, or the parsed dict)."""
        return cls(from_tokenizer_json(spec))

    @classmethod
    def from_hf(cls, tokenizer: Any) -> Tokenizer:
        """From an HF `tokenizers.Tokenizer` or a transformers fast tokenizer."""
        import json

        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        return cls(from_tokenizer_json(json.loads(backend.to_str())))

    @classmethod
    def from_tiktoken(
        cls,
        mergeable_ranks: Mapping[bytes, int],
        pattern: str = r"(?s:.+)",
        special_tokens: Mapping[str, int] | None = None,
        name: str = "tiktoken",
    ) -> Tokenizer:
        """From tiktoken mergeable ranks and its `pat_str` (default: one piece)."""
        return cls(from_tiktoken_ranks(mergeable_ranks, pattern, special_tokens, name))

    @classmethod
    def from_quicktok(cls, name: str) -> Tokenizer:
        """cl100k_base / o200k_base from the ranks shipped by `quicktok-v1`."""
        return cls(from_quicktok(name))

    def _properized(self, reason: str) -> list[tuple[int, int, int]]:
        """A proper reordering of an improper list, checked against the original on probes."""
        source = self.source
        reordered = properize(source.tokens, source.rules)
        core = native()
        try:
            candidate = core.Vocabulary(source.tokens, pack(reordered))
        except core.ImproperDictionary as error:
            raise ImproperMergeList(f"{source.name}: {error}") from None
        original = core.Reference(source.tokens, pack(source.rules))
        for probe in self._probes(source, reordered):
            if candidate.encode(probe) != original.encode(probe):
                raise ImproperMergeList(
                    f"{source.name}: {reason}; its proper reordering differs from the original "
                    f"list on the probe {probe[:40]!r}"
                )
        return reordered

    @staticmethod
    def _probes(source: Source, reordered: Sequence[tuple[int, int, int]]) -> Iterator[bytes]:
        """Probe strings around every moved rule: for each, the token doubled and tripled and
        next to each of its two parts on both sides (always, however many rules moved), then
        the token beside other tokens, `PROPERIZE_PROBES` such pairs shared over the moved rules.
        A check on these strings, not a proof of equivalence on every input."""
        first = {rule[2]: i for i, rule in enumerate(source.rules)}
        moved = [r for i, r in enumerate(reordered) if first.get(r[2], i) != i]
        for left, right, token_id in moved:
            token = source.tokens[token_id]
            yield from (token * 2, token * 3)
            for part in (source.tokens[left], source.tokens[right]):
                yield from (part + token, token + part, part + token + part)
        tokens = [t for t in source.tokens if t]
        share = max(1, PROPERIZE_PROBES // max(1, len(moved)))
        for _, _, token_id in moved:
            token = source.tokens[token_id]
            for other in tokens[:share]:
                yield from (token + other, other + token, other + token + other)

    @staticmethod
    def _alternation(added: Iterable[AddedToken]) -> re.Pattern[str] | None:
        contents = sorted({t.content for t in added if t.content}, key=len, reverse=True)
        return re.compile("|".join(map(re.escape, contents))) if contents else None

    # ---------------------------------------------------------------- encoding

    @property
    def vocab_size(self) -> int:
        return max(len(self.source.tokens), 1 + max((t.id for t in self.source.added), default=-1))

    def info(self) -> dict[str, Any]:
        """Sizes of the native structures (tokens, canonical tokens, automaton states, ...)."""
        return {**self.vocab.info(), "rules": len(self.rules), "split": self.source.split}

    def encode(
        self, text: str, allowed_special: Collection[str] | Literal["all"] | None = None
    ) -> list[int]:
        """Token ids of `text`, as the source tokenizer gives them.

        HF sources match every added token (like `encode(text, add_special_tokens=False)`);
        tiktoken sources match special tokens only when `allowed_special` names them (like
        `encode(text, allowed_special=...)`; none: `encode_ordinary`).
        """
        text = _valid_text(text)
        out: list[int] = []
        for segment, token_id in self._segments(text, allowed_special):
            if token_id is not None:
                out.append(token_id)
            else:
                out += self._encode_segment(segment)
        return out

    def encode_ordinary(self, text: str) -> list[int]:
        """`encode` without matching any added or special token."""
        return self._encode_segment(_valid_text(text))

    def encode_bytes(self, data: bytes) -> list[int]:
        """BPE of raw bytes as one piece (no pre-tokenization); -1 for unknown bytes."""
        return list(self.vocab.encode(data))

    def _allowed(self, allowed_special: Collection[str] | Literal["all"] | None) -> set[str]:
        if self.source.flavour == "hf":
            return set(self._added)
        if allowed_special == "all":
            return set(self._added)
        return set(allowed_special or ())

    def _segments(
        self, text: str, allowed_special: Collection[str] | Literal["all"] | None
    ) -> Iterator[tuple[str, int | None]]:
        allowed = self._allowed(allowed_special)
        if not allowed or self._added_re is None:
            yield text, None
            return
        start = 0
        for match in self._added_re.finditer(text):
            if match.group() not in allowed:
                continue
            if match.start() > start:
                yield text[start : match.start()], None
            yield "", self._added[match.group()].id
            start = match.end()
        if start < len(text):
            yield text[start:], None

    def _encode_segment(self, text: str) -> list[int]:
        if self.source.add_prefix_space and not text.startswith(" "):
            text = " " + text
        data = text.encode("utf-8")
        if self._regex is None:
            return list(self.pipeline.encode(data))
        return list(self.pipeline.encode_pieces(data, self._regex_ends(text)))

    def _regex_ends(self, text: str) -> bytes:
        """Piece end byte offsets from the Python `regex` fallback (unknown split patterns).

        HF's Isolated split keeps the text between matches as pieces; tiktoken drops it.
        """
        ends: list[int] = []
        keep_gaps = self.source.flavour == "hf"
        offset, at = 0, 0
        for match in self._regex.finditer(text):
            if match.start() > at and keep_gaps:
                offset += len(text[at : match.start()].encode("utf-8"))
                ends.append(offset)
            elif match.start() > at:
                raise ValueError("tiktoken patterns that skip text are not supported")
            offset += len(match.group().encode("utf-8"))
            ends.append(offset)
            at = match.end()
        if at < len(text) and keep_gaps:
            ends.append(offset + len(text[at:].encode("utf-8")))
        return struct.pack(f"<{len(ends)}Q", *ends)

    # ---------------------------------------------------------------- decoding

    @cached_property
    def _id_bytes(self) -> dict[int, bytes]:
        table = {i: t for i, t in enumerate(self.source.tokens) if t}
        table.update({t.id: t.content.encode("utf-8") for t in self.source.added})
        return table

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (an added token's text)."""
        try:
            return self._id_bytes[token_id]
        except KeyError:
            raise ValueError(f"token id {token_id} is not in the vocabulary") from None

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        return b"".join(self.token_bytes(i) for i in ids)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # ---------------------------------------------------------------- incremental

    def incremental(self, eager: bool = True) -> IncrementalEncoder:
        """An incremental BPE encoder over a byte stream (no pre-tokenization)."""
        return IncrementalEncoder(self, eager)

    def stream(
        self, allowed_special: Collection[str] | Literal["all"] | None = None
    ) -> StreamEncoder:
        """The full pipeline (added tokens, pre-tokenization, BPE) over text arriving in parts."""
        return StreamEncoder(self, allowed_special)

    def canonical_rules(self) -> list[tuple[int, int, int, int]]:
        """(token, pre, suc, priority) of every canonical multi-byte token."""
        return canonical_rules(self.source.tokens, self.rules)


class IncrementalEncoder:
    """BPE of a growing byte stream: worst-case O(log^2 t) per byte, every prefix available.

    `emit()` returns the tokens whose boundaries became certain (they never change, whatever
    follows), `flush()` ends the stream and returns the rest. -1 marks a byte outside the
    vocabulary (a hard boundary).
    """

    def __init__(self, tokenizer: Tokenizer, eager: bool = True) -> None:
        self.tokenizer = tokenizer
        self._stream = native().Stream(tokenizer.vocab, eager)

    def feed(self, data: bytes | str) -> None:
        self._stream.feed(data.encode("utf-8") if isinstance(data, str) else data)

    def tokens_of_prefix(self, length: int | None = None) -> list[int]:
        """BPE of the first `length` bytes (default: everything fed so far)."""
        return list(self._stream.tokens_of_prefix(len(self._stream) if length is None else length))

    def emit(self) -> list[int]:
        return list(self._stream.emit())

    def flush(self) -> list[int]:
        return list(self._stream.flush())

    def reset(self) -> None:
        self._stream.reset()

    def __len__(self) -> int:
        return len(self._stream)

    @property
    def pending_bytes(self) -> int:
        """Bytes fed whose tokens are not yet certain."""
        return int(self._stream.pending_bytes)

    @property
    def max_pending_bytes(self) -> int:
        return int(self._stream.max_pending_bytes)


class StreamEncoder:
    """The whole encode pipeline over text that arrives in parts, with eager output.

    Parts are `str` or UTF-8 `bytes` (a character cut between byte parts waits for its end;
    invalid bytes become U+FFFD, as `bytes.decode(errors="replace")`). A token is emitted once
    it is certain: no added token can still start inside its text, and its pre-tokenizer piece
    is closed or the token lies in the piece's certain prefix (the bytes that stay in the piece
    whatever follows), where the native eager encoder decides it. Each feed costs O(its size):
    bytes parts go straight to the native `TextStream` (UTF-8 repair, added tokens, split and
    BPE of the new bytes only); `str` parts are encoded once, after pairing surrogate halves.
    Emitted ids concatenated with `flush()` equal `Tokenizer.encode` of the whole text.
    `split="whole"` streams every byte into the eager encoder (as `incremental()`); split
    patterns without a native scanner emit at added tokens and at the end only.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        allowed_special: Collection[str] | Literal["all"] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        allowed = tokenizer._allowed(allowed_special)
        # as Tokenizer._segments: added tokens are matched only when some are allowed
        added = [
            (content.encode("utf-8", "surrogatepass"), token.id, content in allowed)
            for content, token in tokenizer._added.items()
            if content and allowed
        ]
        self._collect = tokenizer._regex is not None  # segments are split in Python
        self._native: Any = native().TextStream(
            tokenizer.pipeline, added, tokenizer.source.add_prefix_space, self._collect
        )
        self._surrogate = ""  # a trailing high surrogate of a str part, waiting for its low half
        self._ready: list[int] = []  # certain ids not yet emitted (the native stream appends)
        self._finished = False
        self._count = 0  # ids emitted so far
        #: Tokens that were certain before flush() (the rest needed the end of the text).
        self.emitted_before_end = 0
        self._direct = not self._collect  # bytes parts go straight to the native stream

    def feed(self, data: str | bytes) -> None:
        """Append one part of the text.

        Args:
            data: The next characters, or the next UTF-8 bytes.

        Raises:
            ValueError: The stream was flushed.
            TypeError: `data` is neither `str` nor `bytes`.
        """
        if self._direct and type(data) is bytes:  # the common case: no Python work per byte
            self._native.feed(data, self._ready)
            return
        self._feed_slowly(data)

    def _feed_slowly(self, data: str | bytes) -> None:
        if self._finished:
            raise ValueError("the stream was flushed; make a new one")
        if isinstance(data, bytes | bytearray | memoryview):
            if not self._surrogate:
                self._native_feed(bytes(data))
                return
            # a held high surrogate meets bytes: decode here, as `bytes.decode` gives
            raw = self._native.take_cut() + bytes(data)
            text, used = codecs.utf_8_decode(raw, "replace", False)
            rest = raw[used:]
        elif isinstance(data, str):
            # a str part ends a cut-off byte sequence (no str's UTF-8 continues one)
            text, rest = self._end_cut() + data, b""
        else:
            raise TypeError(f"feed() takes str or bytes, not {type(data).__name__}")
        text = self._surrogate + text
        self._surrogate = ""
        if text and "\ud800" <= text[-1] <= "\udbff":  # its low half may open the next part
            text, self._surrogate = text[:-1], text[-1]
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError:
            encoded = _valid_text(text).encode("utf-8")
        self._native_feed(encoded)
        if rest:
            self._native_feed(rest)
        self._direct = not self._collect and not self._surrogate

    def _native_feed(self, data: bytes) -> None:
        if not data:
            return
        start = len(self._ready)
        self._native.feed(data, self._ready)
        if self._collect:
            self._split_segments(start)

    def _split_segments(self, start: int) -> None:
        """Split and encode (in Python's `regex`) the segments the native stream closed since
        `start`, in place of their marks."""
        ready = self._ready
        if native().SEGMENT not in ready[start:]:
            return
        tok = self.tokenizer
        segments = iter(self._native.take_segments())
        out = ready[:start]
        for token_id in ready[start:]:
            if token_id != native().SEGMENT:
                out.append(token_id)
                continue
            data = next(segments)
            out += tok.pipeline.encode_pieces(data, tok._regex_ends(data.decode("utf-8")))
        self._ready = out

    def _end_cut(self) -> str:
        """A cut-off UTF-8 sequence that no byte will complete: U+FFFD, as `decode` gives."""
        cut = self._native.take_cut()
        return codecs.utf_8_decode(cut, "replace", True)[0] if cut else ""

    def emit(self) -> list[int]:
        """The tokens that became certain since the last call."""
        out, self._ready = self._ready, []
        self._count += len(out)
        return out

    def flush(self) -> list[int]:
        """End the text: the remaining tokens (the stream accepts no more parts)."""
        if not self._finished:
            self.emitted_before_end = self._count + len(self._ready)
            tail = self._surrogate + self._end_cut()
            self._surrogate = ""
            self._native_feed(_valid_text(tail).encode("utf-8"))
            start = len(self._ready)
            self._ready += self._native.finish()
            if self._collect:
                self._split_segments(start)
            self._finished = True
            self._direct = False
        return self.emit()

    @property
    def pending_bytes(self) -> int:
        """Bytes fed whose tokens are not out yet (held text and the open piece's)."""
        held = len(self._surrogate.encode("utf-8", "surrogatepass"))
        return held + int(self._native.pending_bytes)

    @property
    def window_bytes(self) -> int:
        """Bytes the native split window holds: text not yet split, closed pieces not yet
        dropped and, of a long open piece, only its first code points and its tail (its middle
        is in the eager encoder; under o200k every byte of it). 0 without a native scanner."""
        return 0 if self._collect else int(self._native.window_bytes)
