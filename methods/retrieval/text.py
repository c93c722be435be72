"""The lexical tokenizer every sparse index and query of `docket.methods.retrieval` shares."""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"[a-z0-9]+")


@functools.cache
def stopwords() -> frozenset[str]:
    """English stopwords (bm25s's list)."""
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric words, English stopwords removed, in order (repeats kept)."""
    stop = stopwords()
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


def unique(words: list[str]) -> list[str]:
    """`words` without repeats, first occurrence order."""
    return list(dict.fromkeys(words))
