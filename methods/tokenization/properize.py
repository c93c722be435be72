"""Normalisation helpers: a merge list's canonical rules and a proper reordering of it.

Only *canonical* tokens can appear in a tokenization (BPE of the token's own bytes gives the
token), and each is built by exactly one rule, the last merge of that run. The incremental
algorithm needs these rules in a *proper* order: every token's rule after the rules of both of
its parts. BPE trainers produce proper lists; a list that builds a token before one of its
parts is improper.

`properize` (our reconstruction: the paper's repository ships a `properize.py` whose method could
not be read) moves each such rule to just after the later of its parts (keys compare the rank at
which a rule becomes possible, then its own rank). This is exact except when another instance of
that part's own rule is still pending when the part forms: the original list fires the moved rule
first, a reordered list cannot. `Tokenizer` therefore checks the reordered list against the original
one on probe strings and refuses it with one line when they differ.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from ._native import native

Rule = tuple[int, int, int]


class ImproperMergeList(ValueError):
    """A merge list that builds a token before one of its parts (and cannot be reordered)."""


def canonical_rules(
    tokens: Sequence[bytes], rules: Sequence[Rule]
) -> list[tuple[int, int, int, int]]:
    """(token, pre, suc, priority) for every canonical multi-byte token, by priority."""
    packed = native().Reference(list(tokens), pack(rules)).canonical_rules()
    return [struct.unpack_from("<IIII", packed, 16 * i) for i in range(len(packed) // 16)]


def pack(rules: Sequence[Rule]) -> bytes:
    """Rules as packed little-endian uint32 triples (the native core's input)."""
    return struct.pack(f"<{3 * len(rules)}I", *(v for rule in rules for v in rule))


def is_proper(tokens: Sequence[bytes], rules: Sequence[Rule]) -> bool:
    """Whether every canonical token's rule comes after its parts' rules."""
    priority = {token: prio for token, _, _, prio in canonical_rules(tokens, rules)}
    return all(
        priority.get(pre, -1) < prio and priority.get(suc, -1) < prio
        for _, pre, suc, prio in canonical_rules(tokens, rules)
    )


def properize(tokens: Sequence[bytes], rules: Sequence[Rule]) -> list[Rule]:
    """The canonical rules of `rules`, reordered so that parts come before what they build."""
    canonical = {
        token: (pre, suc, prio) for token, pre, suc, prio in canonical_rules(tokens, rules)
    }
    keys: dict[int, tuple[int, ...]] = {}

    def key(token: int) -> tuple[int, ...]:
        if token not in canonical:
            return ()  # a single byte
        if token not in keys:
            pre, suc, prio = canonical[token]
            ready = max(key(pre), key(suc))
            keys[token] = (prio,) if (prio,) > ready else (*ready, prio)
        return keys[token]

    order = sorted(canonical, key=key)
    return [(canonical[t][0], canonical[t][1], t) for t in order]
