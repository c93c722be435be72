"""No-reasoning baselines for error localisation: they read words and positions, never values.

- `SurfaceBaseline`: every step becomes a TF-IDF vector of its words (digits dropped), of the
  previous and the next step's words and of its agent, plus position features (first, last,
  relative position, index, length); a logistic regression (scikit-learn) trained on the steps
  of labelled training trajectories scores each step, and the most likely one is the answer.
- `KeywordRule`: the phrases (1-3 words) that mark the mistake step in at least half of their
  training occurrences; it blames the first step that contains one, else step 0.

A benchmark whose mistakes these find more often than blaming step 0 gives its answers away.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Steps = Sequence[tuple[str, str]]
_WORD = re.compile(r"[A-Za-z_]+")
#: Phrases that mark the mistake at least this often in training are keywords.
KEYWORD_PRECISION = 0.5
KEYWORD_SUPPORT = 5


def _words(prefix: str, step: tuple[str, str] | None) -> str:
    if step is None:
        return prefix + "NONE"
    return " ".join(prefix + w for w in _WORD.findall(f"{step[0]} {step[1]}"))


def step_texts(steps: Steps) -> list[str]:
    """One bag-of-words document per step: its agent and words, and its neighbours' words."""
    texts = []
    for index, (agent, content) in enumerate(steps):
        before = steps[index - 1] if index else None
        after = steps[index + 1] if index + 1 < len(steps) else None
        own = " ".join(_WORD.findall(content))
        texts.append(f"AGENT_{agent} {own} {_words('PREV_', before)} {_words('NEXT_', after)}")
    return texts


def positions(count: int) -> list[list[float]]:
    """Position features of each step of a conversation with `count` steps."""
    return [
        [
            float(i == 0),
            float(i == count - 1),
            i / max(count - 1, 1),
            min(i, 20) / 20,
            count / 60,
            1 / count,
        ]
        for i in range(count)
    ]


@dataclass
class SurfaceBaseline:
    """TF-IDF + position features, logistic regression over steps (see the module doc)."""

    c: float = 4.0
    _vectorizer: Any = field(default=None, repr=False)
    _model: Any = field(default=None, repr=False)

    def _matrix(self, conversations: Sequence[Steps], fit: bool) -> Any:
        from scipy.sparse import csr_matrix, hstack

        texts = [t for steps in conversations for t in step_texts(steps)]
        where = [p for steps in conversations for p in positions(len(steps))]
        words = self._vectorizer.fit_transform(texts) if fit else self._vectorizer.transform(texts)
        return hstack([words, csr_matrix(where)]).tocsr()

    def fit(self, conversations: Sequence[Steps], mistakes: Sequence[int]) -> SurfaceBaseline:
        """Train on labelled conversations (the mistake step of each)."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        if not conversations:
            raise ValueError("the surface baseline needs at least one training trajectory")
        self._vectorizer = TfidfVectorizer(min_df=2, sublinear_tf=True)
        labels = [
            int(i == m)
            for steps, m in zip(conversations, mistakes, strict=True)
            for i in range(len(steps))
        ]
        if len(set(labels)) < 2:
            raise ValueError("the surface baseline needs steps with and without a mistake")
        self._model = LogisticRegression(C=self.c, max_iter=4000)
        self._model.fit(self._matrix(conversations, fit=True), labels)
        return self

    def scores(self, steps: Steps) -> list[float]:
        """The probability the model gives each step of being the mistake."""
        if self._model is None:
            raise ValueError("fit the surface baseline first")
        return [float(p) for p in self._model.predict_proba(self._matrix([steps], fit=False))[:, 1]]

    def predict(self, steps: Steps) -> int:
        """The most likely mistake step (the first of equals)."""
        scores = self.scores(steps)
        return max(range(len(scores)), key=lambda i: (scores[i], -i))


@dataclass
class KeywordRule:
    """Blame the first step containing a give-away phrase, else step 0 (see the module doc)."""

    phrases: tuple[str, ...] = ()

    @staticmethod
    def _grams(content: str) -> set[str]:
        words = [w.lower() for w in _WORD.findall(content)]
        return {" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)}

    def fit(self, conversations: Sequence[Steps], mistakes: Sequence[int]) -> KeywordRule:
        """Keep the phrases that mark the mistake step in most of their occurrences."""
        seen: dict[str, int] = {}
        hits: dict[str, int] = {}
        for steps, mistake in zip(conversations, mistakes, strict=True):
            for index, (_, content) in enumerate(steps):
                for gram in self._grams(content):
                    seen[gram] = seen.get(gram, 0) + 1
                    hits[gram] = hits.get(gram, 0) + (index == mistake)
        self.phrases = tuple(
            sorted(
                g
                for g, n in seen.items()
                if n >= KEYWORD_SUPPORT and hits[g] >= KEYWORD_PRECISION * n
            )
        )
        return self

    def predict(self, steps: Steps) -> int:
        """The first step with a keyword, else 0."""
        wanted = set(self.phrases)
        for index, (_, content) in enumerate(steps):
            if self._grams(content) & wanted:
                return index
        return 0
