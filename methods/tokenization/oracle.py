"""Standard byte-pair encoding in pure Python: the test oracle, never the fast path.

`bpe` is the textbook algorithm HF tokenizers runs on each word: repeatedly merge the adjacent
pair whose rule comes first in the merge list (leftmost among equals) until no rule applies.
It works on bytes; a byte with no single-byte token is a hard boundary and comes out as -1,
as in the native core.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

UNKNOWN = -1


def merge_table(rules: Sequence[tuple[int, int, int]]) -> dict[tuple[int, int], tuple[int, int]]:
    """(left, right) -> (priority, result); a repeated pair keeps its last rule (as HF does)."""
    return {
        (left, right): (priority, result) for priority, (left, right, result) in enumerate(rules)
    }


def atoms_of(tokens: Sequence[bytes]) -> dict[int, int]:
    """byte -> id of its single-byte token (the first one when repeated)."""
    atoms: dict[int, int] = {}
    for token_id, token in enumerate(tokens):
        if len(token) == 1:
            atoms.setdefault(token[0], token_id)
    return atoms


def _merge_word(symbols: list[int], table: Mapping[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Heap BPE of one run of known symbols."""
    n = len(symbols)
    alive = [True] * n
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    heap = [
        (table[pair][0], i)
        for i, pair in enumerate(zip(symbols, symbols[1:], strict=False))
        if pair in table
    ]
    heapq.heapify(heap)
    while heap:
        priority, i = heapq.heappop(heap)
        j = nxt[i]
        if not alive[i] or j < 0:
            continue
        found = table.get((symbols[i], symbols[j]))
        if found is None or found[0] != priority:
            continue  # stale entry
        symbols[i] = found[1]
        alive[j] = False
        nxt[i] = nxt[j]
        if nxt[j] >= 0:
            prv[nxt[j]] = i
        for left in (prv[i], i):
            if left >= 0 and nxt[left] >= 0:
                pair = (symbols[left], symbols[nxt[left]])
                if pair in table:
                    heapq.heappush(heap, (table[pair][0], left))
    return [symbols[i] for i in range(n) if alive[i]]


def bpe(data: bytes, tokens: Sequence[bytes], rules: Sequence[tuple[int, int, int]]) -> list[int]:
    """Merge-list BPE of `data` as one piece; -1 for bytes without a single-byte token."""
    table = merge_table(rules)
    atoms = atoms_of(tokens)
    out: list[int] = []
    run: list[int] = []
    for byte in data:
        if byte in atoms:
            run.append(atoms[byte])
            continue
        out += _merge_word(run, table)
        out.append(UNKNOWN)
        run = []
    return out + _merge_word(run, table)
