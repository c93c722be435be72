"""Blind attackers of `docket/erm_rag`: answers that never read a passage (README: "Chance row").

The answer is a document's founding year, which the generator draws uniformly from `YEARS`
whatever the document's words, so only a year recorded for the same document elsewhere could
be recalled. Each attacker reads the question (its words; the shipped thesaurus maps lay words
to terms) and is scored on the held-out queries by the task's answer match:

- `constant_1900`: `erm_reader -M mode=constant`;
- `uniform_expected`: a year drawn uniformly from `YEARS`, its exact expected accuracy;
- `fresh_majority`: the most frequent answer of freshly generated corpora (`FRESH_SEEDS`);
- `fresh_words`: `QuestionWords` (logistic regression over the question's words and their
  thesaurus terms) fitted on those corpora's questions and answers.

2-A shipped every feedback query's answer too; `QuestionWords` fitted on them answered 0.229 of
the held-out questions (it recalls the year of a document whose feedback paraphrases share the
question's words; `tests/benchmarks/erm_retrieval/test_rag_chance.py`). 2-B's feedback queries
carry none. The readers (`reader_accuracy`) are the references: `erm_reader` answers the first
year of the top-ranked passage.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from docket.benchmarks.erm_retrieval.dataset import SHIPPED, BeirData, Query, load_beir
from docket.benchmarks.erm_retrieval.engine import Setup, build_engine
from docket.benchmarks.erm_retrieval.generate import generate
from docket.benchmarks.erm_retrieval.scorer import answer_matches
from docket.methods.retrieval.erm import ERMConfig

#: The founding years the generator draws from (`generate.documents`).
YEARS = range(1820, 2016)
#: Seeds of the freshly generated corpora the learned attacker is fitted on.
FRESH_SEEDS = (1, 2)
_WORD = re.compile(r"[a-z]+")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


@dataclass(frozen=True)
class Row:
    """One attacker's (or reader's) accuracy on the held-out questions."""

    name: str
    accuracy: float


def accuracy(answers: Sequence[str], queries: Sequence[Query]) -> float:
    """The share of `answers` (one per query) the task's scorer accepts (`ANSWER: <year>`)."""
    ok = [
        answer_matches(f"ANSWER: {a}", list(q.answers))[0]
        for a, q in zip(answers, queries, strict=True)
    ]
    return sum(ok) / len(queries)


def uniform_expected(queries: Sequence[Query]) -> float:
    """The exact expected accuracy of a year drawn uniformly from `YEARS`: each query's share
    of `YEARS` it accepts, averaged."""
    years = {str(y) for y in YEARS}
    return sum(len(years & set(q.answers)) / len(YEARS) for q in queries) / len(queries)


def thesaurus() -> dict[str, list[str]]:
    """The shipped thesaurus (lay word -> document terms)."""
    found = json.loads((SHIPPED / "thesaurus.json").read_text(encoding="utf-8"))
    return {str(k): [str(u) for u in v] for k, v in found.items()}


class QuestionWords:
    """Logistic regression over TF-IDF of a question's words and their thesaurus terms,
    predicting an answer as a class."""

    def __init__(self) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self.terms = thesaurus()
        self.vectors = TfidfVectorizer(sublinear_tf=True)
        self.model = LogisticRegression(C=10.0, max_iter=2000)

    def words(self, text: str) -> str:
        """The question's words, then the terms the thesaurus maps them to."""
        found = _WORD.findall(text.lower())
        return " ".join([*found, *(t for w in found for t in self.terms.get(w, []))])

    def fit(self, queries: Sequence[Query]) -> QuestionWords:
        """Fit on `queries` that carry an answer (their first accepted answer is the class)."""
        labelled = [q for q in queries if q.answers]
        features = self.vectors.fit_transform([self.words(q.text) for q in labelled])
        self.model.fit(features, [q.answers[0] for q in labelled])
        return self

    def predict(self, queries: Sequence[Query]) -> list[str]:
        """An answer per query."""
        features = self.vectors.transform([self.words(q.text) for q in queries])
        return [str(a) for a in self.model.predict(features)]


def fresh_queries(seeds: Sequence[int] = FRESH_SEEDS) -> list[Query]:
    """The answered (held-out) questions of corpora generated with `seeds`."""
    out: list[Query] = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in seeds:
            root = Path(folder) / str(seed)
            generate(root, seed=seed)
            out += load_beir(str(root)).heldout
    return out


def attack_rows(data: BeirData | None = None, fitted: Sequence[Query] | None = None) -> list[Row]:
    """Every blind attacker's accuracy on `data`'s held-out questions.

    Args:
        data: The scored data (default: the shipped corpus).
        fitted: The answered questions the learned attackers fit on (default:
            `fresh_queries()`).

    Returns:
        constant_1900, uniform_expected, fresh_majority, fresh_words.
    """
    data = load_beir() if data is None else data
    fitted = fresh_queries() if fitted is None else list(fitted)
    queries = data.heldout
    majority = Counter(q.answers[0] for q in fitted if q.answers).most_common(1)[0][0]
    learned = QuestionWords().fit(fitted).predict(queries)
    return [
        Row("constant_1900", accuracy(["1900"] * len(queries), queries)),
        Row("uniform_expected", round(uniform_expected(queries), 6)),
        Row("fresh_majority", accuracy([majority] * len(queries), queries)),
        Row("fresh_words", round(accuracy(learned, queries), 6)),
    ]


def first_year(text: str) -> str:
    """The first four-digit year of a passage, as `erm_reader` reads its top passage."""
    found = _YEAR.search(text)
    return found.group(1) if found else "unknown"


def reader_accuracy(data: BeirData, method: str) -> float:
    """`erm_reader`'s accuracy with the task's defaults (BM25, the shipped thesaurus) and
    `method`; `method="oracle"` ranks each question's judged documents first.

    Args:
        data: The corpus and questions.
        method: oracle or one of the task's methods (erm, static, ...).

    Returns:
        The share of held-out questions whose top passage's first year is accepted.
    """
    position = data.doc_index()
    if method == "oracle":
        tops = [max(q.relevant, key=lambda d: q.relevant[d]) for q in data.heldout]
    else:
        setup = Setup(method, "bm25", "thesaurus", str(SHIPPED / "thesaurus.json"), ERMConfig())

        async def rank() -> list[str]:
            engine = await build_engine(data, setup, None)
            return [(await engine.rank(q.text, 1))[0] for q in data.heldout]

        tops = asyncio.run(rank())
    years = [first_year(data.doc_texts[position[d]]) for d in tops]
    return accuracy(years, data.heldout)
