"""Simulated word-level OCR for `layout_text` mode: tokens with box jitter, merges and splits.

A real OCR engine returns word tokens, not the renderer's exact word boxes: each box is a few
pixels off the ink, neighbouring words on a line are sometimes returned as one token, and a
word is sometimes cut in two. `simulate_ocr` reproduces those three effects from the exact word
boxes (seeded, so a document's tokens are reproducible):

* **jitter** — every side of every token moves by a whole number of pixels drawn uniformly from
  [-j, j], j = max(1, round(0.12 * token height)) (1 px for text up to 12 px high, 2 px up to
  20 px, ...);
* **merge** — two consecutive words on one line whose gap is at most one text height are
  returned as one token (text joined by a space, union box) with probability `merge_rate`;
* **split** — a word of 4 or more characters is cut in two with probability `split_rate`, after
  its first punctuation mark when it has one inside, else at a random inner position; the box is
  divided in proportion to the characters on each side (what an engine without glyph metrics
  estimates).

An answer box (the union of the answer's exact word boxes) is therefore the union of several
tokens for multi-word answers and never exactly one token's box.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

Token = tuple[str, int, int, int, int]
#: A word row of a document record: [text, x1, y1, x2, y2, segment id].
WordRow = Sequence[object]

MERGE_RATE = 0.12
SPLIT_RATE = 0.06
JITTER_SHARE = 0.12
_PUNCTUATION = "-/.,:"


def _same_line(a: Token, b: Token) -> bool:
    overlap = min(a[4], b[4]) - max(a[2], b[2])
    return overlap > 0.5 * min(a[4] - a[2], b[4] - b[2])


def reading_order(tokens: Sequence[Token]) -> list[Token]:
    """Tokens grouped into lines (top to bottom), each line left to right."""
    lines: list[list[Token]] = []
    for token in sorted(tokens, key=lambda t: (t[2] + t[4], t[1])):
        if lines and _same_line(lines[-1][0], token):
            lines[-1].append(token)
        else:
            lines.append([token])
    return [t for line in lines for t in sorted(line, key=lambda t: t[1])]


def _split(token: Token, rng: random.Random) -> list[Token]:
    text, x1, y1, x2, y2 = token
    inner = [i + 1 for i, ch in enumerate(text[:-1]) if ch in _PUNCTUATION and i > 0]
    cut = inner[0] if inner else rng.randint(2, len(text) - 2)
    middle = x1 + round((x2 - x1) * cut / len(text))
    middle = min(max(middle, x1 + 1), x2 - 1)
    return [(text[:cut], x1, y1, middle, y2), (text[cut:], middle, y1, x2, y2)]


def _jitter(token: Token, rng: random.Random, width: int, height: int) -> Token:
    text, x1, y1, x2, y2 = token
    j = max(1, round(JITTER_SHARE * (y2 - y1)))
    nx1, ny1 = max(0, x1 + rng.randint(-j, j)), max(0, y1 + rng.randint(-j, j))
    nx2, ny2 = min(width, x2 + rng.randint(-j, j)), min(height, y2 + rng.randint(-j, j))
    return (text, nx1, ny1, max(nx2, nx1 + 1), max(ny2, ny1 + 1))


def simulate_ocr(
    words: Sequence[WordRow],
    width: int,
    height: int,
    rng: random.Random,
    merge_rate: float = MERGE_RATE,
    split_rate: float = SPLIT_RATE,
) -> list[Token]:
    """Word-level OCR tokens `(text, x1, y1, x2, y2)` from exact word rows, in reading order."""
    exact: list[Token] = [
        (str(w[0]), int(w[1]), int(w[2]), int(w[3]), int(w[4]))  # type: ignore[call-overload]
        for w in words
    ]
    merged: list[Token] = []
    for token in reading_order(exact):
        last = merged[-1] if merged else None
        if (
            last is not None
            and _same_line(last, token)
            and 0 <= token[1] - last[3] <= token[4] - token[2]
            and rng.random() < merge_rate
        ):
            merged[-1] = (
                f"{last[0]} {token[0]}",
                min(last[1], token[1]),
                min(last[2], token[2]),
                max(last[3], token[3]),
                max(last[4], token[4]),
            )
        else:
            merged.append(token)
    pieces: list[Token] = []
    for token in merged:
        if " " not in token[0] and len(token[0]) >= 4 and rng.random() < split_rate:
            pieces.extend(_split(token, rng))
        else:
            pieces.append(token)
    return [_jitter(t, rng, width, height) for t in pieces]
