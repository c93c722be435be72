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


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


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
    only the new bytes of the open piece go to the eager encoder, and the split resumes from the
    open piece's start. Emitted ids concatenated with `flush()` equal `Tokenizer.encode` of the
    whole text. `split="whole"` streams every byte into the eager encoder (as `incremental()`);
    split patterns without a native scanner emit at added tokens and at the end only.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        allowed_special: Collection[str] | Literal["all"] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        allowed = tokenizer._allowed(allowed_special)
        # as Tokenizer._segments: added tokens are matched only when some are allowed
        self._added_re = tokenizer._added_re if allowed else None
        self._allowed = allowed
        contents = [t.content for t in tokenizer.source.added if t.content]
        self._proper_prefixes = {c[:k] for c in contents for k in range(1, len(c))}
        self._longest_added = max(map(len, contents), default=0)
        self._first_chars = "".join(sorted({c[0] for c in contents}))
        self._first_re = re.compile("[" + re.escape(self._first_chars) + "]") if contents else None
        self._first_bytes = (
            re.compile(b"|".join(re.escape(c[0].encode("utf-8")) for c in contents))
            if contents and self._added_re is not None
            else None
        )
        self._cut = b""  # the start of a UTF-8 sequence cut off at the end of a bytes part
        self._surrogate = ""  # a trailing high surrogate, waiting for its low half
        self._held = ""  # text where an added token may still start
        self._native: Any = (
            None if tokenizer._regex is not None else native().PipelineStream(tokenizer.pipeline)
        )
        self._regex_segment: list[str] = []
        self._segment_started = False
        self._ready: list[int] = []  # certain ids not yet emitted (the native stream appends)
        self._finished = False
        self._count = 0  # ids emitted so far
        #: Tokens that were certain before flush() (the rest needed the end of the text).
        self.emitted_before_end = 0
        self._open = False  # `_direct()` and no cut byte sequence: feed's fast path applies

    def feed(self, data: str | bytes) -> None:
        """Append one part of the text.

        Args:
            data: The next characters, or the next UTF-8 bytes.

        Raises:
            ValueError: The stream was flushed.
            TypeError: `data` is neither `str` nor `bytes`.
        """
        first = self._first_bytes
        if (  # the common case: ASCII bytes into the open segment, no decoding
            self._open
            and type(data) is bytes
            and data.isascii()
            and (first is None or not first.search(data))
        ):
            self._native.feed(data, self._ready)  # appends the certain ids to _ready
            return
        self._feed_slowly(data)
        self._open = self._direct() and not self._cut

    def _feed_slowly(self, data: str | bytes) -> None:
        if self._finished:
            raise ValueError("the stream was flushed; make a new one")
        if isinstance(data, bytes | bytearray | memoryview):
            data = self._cut + data if self._cut else bytes(data)
            if data.isascii() and self._fast_bytes(data):
                self._native_feed(data)
                return
            text, used = codecs.utf_8_decode(data, "replace", False)
            self._cut = data[used:]
            if self._fast(text):  # most parts: straight to the native stream, bytes as given
                clean = used == len(data) and "\ufffd" not in text
                self._native_feed(data if clean else text.encode("utf-8"))
                return
        elif isinstance(data, str):
            # a str part ends a cut-off byte sequence (no str's UTF-8 continues one)
            text = self._end_cut() + data
            if self._fast(text) and not _has_surrogate(text):
                self._native_feed(text.encode("utf-8"))
                return
        else:
            raise TypeError(f"feed() takes str or bytes, not {type(data).__name__}")
        text = self._surrogate + text
        self._surrogate = ""
        if text and "\ud800" <= text[-1] <= "\udbff":  # its low half may open the next part
            text, self._surrogate = text[:-1], text[-1]
        self._advance(_valid_text(text), final=False)

    def _direct(self) -> bool:
        """Whether new text may go straight into the open segment: nothing held, the segment
        started (no prefix space to add), a native scanner."""
        return (
            not self._held
            and not self._surrogate
            and self._segment_started
            and self._native is not None
        )

    def _fast(self, text: str) -> bool:
        """`_direct`, and no added token's first character in `text`."""
        first = self._first_re
        return self._direct() and (self._added_re is None or not (first and first.search(text)))

    def _fast_bytes(self, data: bytes) -> bool:
        """`_fast` for ASCII bytes, without decoding them."""
        first = self._first_bytes
        return self._direct() and (self._added_re is None or not (first and first.search(data)))

    def _native_feed(self, data: bytes) -> None:
        self._native.feed(data, self._ready)

    def _end_cut(self) -> str:
        """A cut-off UTF-8 sequence that no byte will complete: U+FFFD, as `decode` gives."""
        cut, self._cut = self._cut, b""
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
            self._advance(_valid_text(tail), final=True)
            self._end_segment()
            self._finished = True
            self._open = False
        return self.emit()

    @property
    def pending_bytes(self) -> int:
        """Bytes fed whose tokens are not out yet (held text and the open piece's)."""
        held = len((self._held + self._surrogate).encode("utf-8", "surrogatepass"))
        held += len(self._cut)
        held += sum(len(t.encode("utf-8")) for t in self._regex_segment)
        return held + (self._native.pending_bytes if self._native is not None else 0)

    @property
    def window_bytes(self) -> int:
        """Bytes the native split window holds: text not yet split, closed pieces not yet
        dropped and, of a long open piece, only its first code points and its tail (its middle
        is in the eager encoder; under o200k every byte of it). 0 without a native scanner."""
        return int(self._native.window_bytes) if self._native is not None else 0

    def _push(self, ids: Sequence[int]) -> None:
        self._ready += ids

    def _advance(self, text: str, final: bool) -> None:
        """Cut the text at the added tokens that are certain; the rest goes to the segment."""
        if self._added_re is None:
            self._segment_text(text)
            return
        held = self._held + text
        at = 0
        while True:
            # the earliest position where an added token could start with text not yet seen
            undecided = len(held) if final else self._undecided_from(held, at)
            match = self._added_re.search(held, at)
            if match is None or match.start() >= undecided:
                self._segment_text(held[at:undecided])
                self._held = held[undecided:]
                return
            if match.group() in self._allowed:  # an added token: the segment ends before it
                self._segment_text(held[at : match.start()])
                self._end_segment()
                self._push([self.tokenizer._added[match.group()].id])
            else:  # matched but not allowed: text, as in Tokenizer._segments
                self._segment_text(held[at : match.end()])
            at = match.end()

    def _undecided_from(self, text: str, at: int) -> int:
        """The first position >= `at` whose rest is a proper prefix of an added token."""
        low = max(at, len(text) - self._longest_added + 1)
        tail = text[low:]
        if not any(c in tail for c in self._first_chars):
            return len(text)
        for start in range(low, len(text)):
            if text[start:] in self._proper_prefixes:
                return start
        return len(text)

    def _segment_text(self, text: str) -> None:
        """Text inside the current segment (between added tokens)."""
        if not text:
            return
        tok = self.tokenizer
        if not self._segment_started:
            self._segment_started = True
            if tok.source.add_prefix_space and not text.startswith(" "):
                text = " " + text
        if self._native is None:
            self._regex_segment.append(text)
            return
        self._native_feed(text.encode("utf-8"))

    def _end_segment(self) -> None:
        """The segment ends (an added token follows, or the text ends): its remaining tokens."""
        if not self._segment_started:
            return
        self._segment_started = False
        if self._native is None:
            text, self._regex_segment = "".join(self._regex_segment), []
            data = text.encode("utf-8")
            tok = self.tokenizer
            self._push(list(tok.pipeline.encode_pieces(data, tok._regex_ends(text))))
            return
        self._push(self._native.finish())
