"""The baselines ERM is compared with, as functions of an index and an expansion.

- query-time expansion (HyDE / Query2doc / keyword expansion): retrieve with q ⊕ units on the
  static index, paying one expansion per query (`erm.expand` builds the text);
- doc2query-style index expansion: each document is indexed together with queries generated
  for it, paying one generation per document at indexing time (`doc2query_texts`);
- pseudo-relevance feedback (RM3-like, model-free): the expansion units are the terms that
  weigh most in the top documents of the static BM25 ranking (`prf_units`), an expander that
  needs no model and no thesaurus.
"""

from __future__ import annotations

from collections.abc import Sequence

from .keys import SparseKeys
from .text import tokenize


def doc2query_texts(documents: Sequence[str], generated: Sequence[Sequence[str]]) -> list[str]:
    """Each document followed by the queries generated for it."""
    return ["\n".join([text, *queries]) for text, queries in zip(documents, generated, strict=True)]


def prf_units(keys: SparseKeys, query: str, top_docs: int = 3, terms: int = 5) -> list[str]:
    """The `terms` heaviest BM25 terms of the top `top_docs` documents, the query's excluded."""
    [encoded] = keys.encode([query])
    ranked = keys.rank(encoded, top_docs, evolved=False)
    asked = set(tokenize(query))
    names = {i: t for t, i in keys.vocab.items()}
    weight: dict[int, float] = {}
    for doc, score in ranked:
        if score <= 0:  # nothing matched: no feedback to take
            continue
        for term, value in keys.row(doc).items():
            weight[term] = weight.get(term, 0.0) + value
    # ties by the term itself: bm25s numbers its vocabulary in set order (PYTHONHASHSEED)
    best = sorted(
        (t for t in weight if names.get(t) and names[t] not in asked),
        key=lambda t: (-weight[t], names[t]),
    )
    return [names[t] for t in best[:terms]]
