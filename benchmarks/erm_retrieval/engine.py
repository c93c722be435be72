"""Each compared method's index over a BEIR data set, built once per process and shared by the
samples of an eval.

| method | index | per query |
|---|---|---|
| `static` | BM25 (bm25s) or MiniLM keys of the documents | plain retrieval |
| `query_expansion` | the same | one expansion, retrieval with q ⊕ units |
| `doc2query` | each document plus queries generated for it | plain retrieval |
| `erm` | keys evolved on the feedback queries (`methods/retrieval/erm.py`) | plain retrieval |
| `random` | none | a seeded random ranking (the chance reference) |

Expanders: `thesaurus` (a JSON file mapping a query word to document terms; the shipped data's
is noisy and incomplete), `prf` (pseudo-relevance feedback on static BM25: no model, any data)
and `model` (the `expander` model role, `prompts.EXPAND` / `prompts.DOC2QUERY`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.model import GenerateConfig, Model

from docket.benchmarks.erm_retrieval.dataset import BeirData
from docket.benchmarks.erm_retrieval.prompts import DOC2QUERY, EXPAND
from docket.core.inspect_private import PrerequisiteError
from docket.methods.retrieval.baselines import doc2query_texts, prf_units
from docket.methods.retrieval.erm import ERMConfig, EvolvingMemory, Feedback, expand
from docket.methods.retrieval.keys import DenseKeys, Keys, SparseKeys, minilm_encoder
from docket.methods.retrieval.text import tokenize, unique

METHODS = ("erm", "static", "query_expansion", "doc2query", "random")
RETRIEVERS = ("bm25", "dense")
EXPANDERS = ("thesaurus", "prf", "model")
_LINE_PREFIX = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


@dataclass(frozen=True)
class Setup:
    """What determines an index: the data, the method and its expander, ERM's knobs."""

    method: str
    retriever: str
    expander: str
    thesaurus: str
    erm: ERMConfig
    doc2query_n: int = 3
    seed: int = 0
    #: BM25 key updates: drop displacement entries under this share of a key's largest.
    prune: float = 0.5
    #: BM25 key updates: a learned word more than this share of the feedback queries use
    #: (a template word) adds nothing (`SparseKeys(max_query_share=...)`).
    max_query_share: float = 0.05


def read_thesaurus(path: Path) -> dict[str, list[str]]:
    """A thesaurus file: {"query word": ["document term", ...]}."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as ex:
        raise PrerequisiteError(f"-T thesaurus={str(path)!r}: cannot read it ({ex})") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(u, str) for u in v) for v in data.values()
    ):
        raise PrerequisiteError(f"{path}: a thesaurus maps words to lists of strings")
    return {str(k).lower(): list(v) for k, v in data.items()}


def model_lines(text: str, most: int) -> list[str]:
    """The non-empty lines of a model's reply, list markers stripped."""
    lines = [_LINE_PREFIX.sub("", line).strip() for line in text.splitlines()]
    return [line for line in lines if line][:most]


class Expander:
    """Expansion units for a query and generated queries for a document."""

    def __init__(
        self,
        kind: str,
        thesaurus: dict[str, list[str]] | None = None,
        prf_keys: SparseKeys | None = None,
        model: Model | None = None,
        seed: int = 0,
    ) -> None:
        self.kind, self.thesaurus, self.prf_keys, self.model = kind, thesaurus, prf_keys, model
        self.seed = seed
        inverse: dict[str, list[str]] = {}
        for word, terms in (thesaurus or {}).items():
            for term in terms:
                inverse.setdefault(term, []).append(word)
        self.inverse = inverse

    async def units(self, query: str) -> list[str]:
        """Atomic expansion units for `query`."""
        if self.kind == "thesaurus":
            assert self.thesaurus is not None
            return unique([u for w in tokenize(query) for u in self.thesaurus.get(w, [])])
        if self.kind == "prf":
            assert self.prf_keys is not None
            return prf_units(self.prf_keys, query)
        assert self.model is not None
        output = await self.model.generate(EXPAND.format(query=query), config=_CONFIG)
        return unique(model_lines(output.completion, 8))

    async def doc_queries(self, doc_id: str, text: str, n: int) -> list[str]:
        """`n` queries a doc2query generator would write for the document."""
        if self.kind == "model":
            assert self.model is not None
            prompt = DOC2QUERY.format(n=n, passage=text)
            return model_lines((await self.model.generate(prompt, config=_CONFIG)).completion, n)
        terms = [t for t in unique(tokenize(text)) if t in self.inverse]
        rng = random.Random(f"{self.seed}:{doc_id}")
        return [" ".join(rng.choice(self.inverse[t]) for t in terms) for _ in range(n) if terms]


_CONFIG = GenerateConfig(temperature=0.0, max_tokens=96)


@functools.cache
def _encoder() -> Callable[[list[str]], Any]:
    return minilm_encoder()


def make_keys(
    retriever: str, texts: list[str], prune: float = 0.0, max_query_share: float = 1.0
) -> Keys:
    """BM25 or MiniLM keys of `texts`."""
    if retriever == "bm25":
        return SparseKeys(texts, prune=prune, max_query_share=max_query_share)
    return DenseKeys(texts, _encoder())


class Engine:
    """Ranks queries (document ids, best first) with one method's index."""

    def __init__(
        self,
        data: BeirData,
        setup: Setup,
        keys: Keys | None,
        expander: Expander | None,
        memory: EvolvingMemory | None = None,
    ) -> None:
        self.data, self.setup, self.keys, self.expander, self.memory = (
            data,
            setup,
            keys,
            expander,
            memory,
        )
        self.report: dict[str, Any] = {}

    async def rank(self, query: str, k: int) -> list[str]:
        """The top `k` document ids for `query`."""
        if self.setup.method == "random":
            order = list(range(len(self.data.doc_ids)))
            random.Random(f"{self.setup.seed}:{query}").shuffle(order)
            return [self.data.doc_ids[i] for i in order[:k]]
        assert self.keys is not None
        if self.memory is not None:
            ranked = await asyncio.to_thread(self.memory.retrieve, query, k)
            return [self.data.doc_ids[i] for i, _ in ranked]
        text = query
        if self.setup.method == "query_expansion":
            assert self.expander is not None
            text = expand(query, await self.expander.units(query))
        keys = self.keys

        def run() -> list[tuple[int, float]]:
            [encoded] = keys.encode([text])
            return keys.rank(encoded, k, evolved=False)

        return [self.data.doc_ids[i] for i, _ in await asyncio.to_thread(run)]


async def build_engine(data: BeirData, setup: Setup, model: Model | None) -> Engine:
    """The index of `setup.method` (ERM learns from every feedback query here)."""
    if setup.method == "random":
        return Engine(data, setup, None, None)
    thesaurus = read_thesaurus(Path(setup.thesaurus)) if setup.expander == "thesaurus" else None
    prf = await asyncio.to_thread(SparseKeys, data.doc_texts) if setup.expander == "prf" else None
    expander = Expander(setup.expander, thesaurus, prf, model, setup.seed)
    if setup.method == "doc2query":
        generated = await _gather(
            [
                functools.partial(expander.doc_queries, d, t, setup.doc2query_n)
                for d, t in zip(data.doc_ids, data.doc_texts, strict=True)
            ]
        )
        texts = doc2query_texts(data.doc_texts, generated)
        keys = await asyncio.to_thread(make_keys, setup.retriever, texts)
        engine = Engine(data, setup, keys, expander)
        engine.report = {"generated_queries": sum(len(g) for g in generated)}
        return engine
    keys = await asyncio.to_thread(
        make_keys, setup.retriever, data.doc_texts, setup.prune, setup.max_query_share
    )
    if setup.method != "erm":
        return Engine(data, setup, keys, expander)
    units = await _gather([functools.partial(expander.units, q.text) for q in data.feedback])
    position = data.doc_index()
    items = [
        Feedback(q.text, tuple(u), frozenset(position[d] for d, g in q.relevant.items() if g > 0))
        for q, u in zip(data.feedback, units, strict=True)
    ]
    memory = EvolvingMemory(keys, setup.erm)
    updates = await asyncio.to_thread(memory.learn, items)
    engine = Engine(data, setup, keys, expander, memory)
    engine.report = {
        "feedback": len(updates),
        "passed_gate": sum(u.passed for u in updates),
        "keys_updated": len({c.doc for u in updates for c in u.changes}),
    }
    return engine


async def _gather(calls: list[Callable[[], Awaitable[list[str]]]]) -> list[list[str]]:
    return list(await asyncio.gather(*(call() for call in calls)))


_ENGINES: dict[tuple[Any, ...], Engine] = {}
_LOCKS: dict[tuple[Any, ...], asyncio.Lock] = {}


async def engine_for(data: BeirData, setup: Setup, model: Model | None) -> Engine:
    """The shared engine for (data, setup, expander model), built by the first sample."""
    key = (id(data), setup, str(model) if model else None)  # the engine keeps `data` alive
    lock = _LOCKS.setdefault((*key, id(asyncio.get_running_loop())), asyncio.Lock())
    async with lock:
        if key not in _ENGINES:
            _ENGINES[key] = await build_engine(data, setup, model)
        return _ENGINES[key]
