"""Blind attackers on `docval_grounding -T mode=layout_text`: they never read what is asked.

* `LayoutTagger(view="none")` — question-blind: gradient boosting (`HistGradientBoostingClassifier`)
  tags each OCR token as inside the answer box from the page alone: the page size and token
  count (the document type), the token's box, reading-order rank, line and rank within its line,
  its character shape, its left neighbour's shape and whether that neighbour ends a label
  (`:`). It answers every question on a page with the same box: where answers most often are.
* `LayoutTagger(view="first_word")` — the same plus one word of the question: its first
  (What/When/Who/...), as a categorical feature. Nothing else of the question is read.
* `NeighbourBox(view)` — a nearest-neighbour box transfer: the k training questions nearest in
  the page's layout summary (size, token and line counts, share of money and digit tokens) and
  what the view keeps of the question (nothing, its first word, or its function words with
  every content word removed); the answer is the test page's tokens under the neighbours'
  boxes (in page-relative coordinates), by vote.

All three are trained on a generated split (never the test split) and scored with
`attack.evaluate` (the task's ANLS and mAP).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from docket.benchmarks.docval.attack import (
    _STOP,
    Prompt,
    SurfaceTagger,
    Token,
    _answer,
    _shape,
    parse_prompt,
    tag_and_decode,
)
from docket.benchmarks.docval.prompts import question_prompt

VIEWS = ("none", "first_word")


def first_word(question: str) -> str:
    """The question's first word, lower-cased (`""` for an empty question)."""
    words = question.split()
    return words[0].lower().strip("?,.") if words else ""


def _pairs(docs: Iterable[dict[str, Any]]) -> list[tuple[Prompt, list[float]]]:
    pairs = [
        (parse_prompt(question_prompt(d, q["question"], "layout_text")), q["bbox"])
        for d in docs
        for q in d["questions"]
        if q.get("bbox")
    ]
    if not pairs:
        raise ValueError("blind attacker: no training questions with a gold box")
    return pairs


def page_features(prompt: Prompt) -> list[float]:
    """What identifies the document type without reading: page size, token and line counts."""
    lines = max((t.line for t in prompt.tokens), default=-1) + 1
    n = max(1, len(prompt.tokens))
    return [
        prompt.width,
        prompt.height,
        float(len(prompt.tokens)),
        float(lines),
        sum(any(c in "$£€" for c in t.text) for t in prompt.tokens) / n,
        sum(any(c.isdigit() for c in t.text) for t in prompt.tokens) / n,
    ]


class LayoutTagger:
    """Token tagger over the page's layout and, with `view="first_word"`, the question's first word.

    Args:
        view: `none` (the question is never read) or `first_word`.
        seed: The booster's random state.
    """

    def __init__(self, view: str = "none", seed: int = 0) -> None:
        if view not in VIEWS:
            raise ValueError(f"LayoutTagger: view {view!r}; accepted: {', '.join(VIEWS)}")
        self.view = view
        self.seed = seed
        self.words: dict[str, int] = {}
        self.model: Any = None

    def _features(self, prompt: Prompt) -> np.ndarray:
        page = page_features(prompt)
        word = float(self.words.get(first_word(prompt.question), -1)) if self.view != "none" else 0
        by_line: dict[int, list[Token]] = {}
        for t in prompt.tokens:
            by_line.setdefault(t.line, []).append(t)
        n_lines = len(by_line)
        rows = []
        for t in prompt.tokens:
            line = sorted(by_line[t.line], key=lambda o: o.rank)
            left = line[t.rank - 1].text if t.rank else ""
            rows.append(
                [
                    word,
                    *page,
                    t.box[0] / prompt.width,
                    t.box[1] / prompt.height,
                    t.box[2] / prompt.width,
                    t.box[3] / prompt.height,
                    t.box[3] - t.box[1],
                    t.index / max(1, len(prompt.tokens)),
                    t.line,
                    n_lines - t.line,
                    t.rank,
                    t.line_size - t.rank - 1,
                    *_shape(t.text),
                    *_shape(left),
                    float(left.endswith(":")),
                ]
            )
        return np.asarray(rows, dtype=float)

    def fit(self, docs: Iterable[dict[str, Any]]) -> LayoutTagger:
        """Train on a generated split's records (never the test split).

        Args:
            docs: Split records with questions and gold boxes.

        Returns:
            The fitted tagger.
        """
        from sklearn.ensemble import HistGradientBoostingClassifier

        pairs = _pairs(docs)
        if self.view == "first_word":
            counts = Counter(first_word(p.question) for p, _ in pairs)
            self.words = {w: i for i, (w, _) in enumerate(counts.most_common(200))}
        features = np.vstack([self._features(p) for p, _ in pairs])
        labels = np.concatenate(
            [[SurfaceTagger._inside(t, g) for t in p.tokens] for p, g in pairs]
        ).astype(int)
        with threadpool_limits(1):
            self.model = HistGradientBoostingClassifier(
                max_iter=200, categorical_features=[0], random_state=self.seed
            ).fit(features, labels)
        return self

    def __call__(self, text: str) -> tuple[str, list[float] | None]:
        """Answer one layout_text prompt."""
        return self.answer_all([text])[0]

    def answer_all(self, texts: list[str]) -> list[tuple[str, list[float] | None]]:
        """Answer prompts in one batch: the best token and its tagged neighbours on its line.

        Args:
            texts: layout_text prompts.

        Returns:
            Per prompt, the answer and its box; ("", None) without tokens.
        """
        if self.model is None:
            raise ValueError("LayoutTagger: call fit() first")
        prompts = [self._view(parse_prompt(text)) for text in texts]
        return tag_and_decode(self.model, prompts, self._features)

    def _view(self, prompt: Prompt) -> Prompt:
        """The prompt as this attacker sees it: the question dropped (`none`) or cut to a word."""
        kept = "" if self.view == "none" else first_word(prompt.question)
        return Prompt(prompt.tokens, kept, prompt.width, prompt.height)


def skeleton(question: str) -> str:
    """The question's function words only (its content words removed), e.g. `what did the`."""
    kept = [w for w in question.lower().rstrip("?").split() if w.strip(",.'") in _STOP]
    return " ".join(kept)


class NeighbourBox:
    """k nearest training questions by page layout and what the view keeps of the question.

    Args:
        view: `none` (page only), `first_word` or `function_words` (`skeleton`).
        k: Neighbours.
    """

    def __init__(self, view: str = "function_words", k: int = 15) -> None:
        if view not in (*VIEWS, "function_words"):
            raise ValueError(f"NeighbourBox: view {view!r}")
        self.view = view
        self.k = k
        self.boxes: np.ndarray = np.zeros((0, 4))
        self.vectorizer: Any = None
        self.scale: np.ndarray = np.ones(6)
        self.index: Any = None

    def _kept(self, question: str) -> str:
        """What the view keeps of a question (nothing, its first word, its function words)."""
        if self.view == "none":
            return ""
        return first_word(question) if self.view == "first_word" else skeleton(question)

    def _vectors(self, prompts: list[Prompt]) -> np.ndarray:
        page = np.asarray([page_features(p) for p in prompts]) / self.scale
        words = self.vectorizer.transform([self._kept(p.question) for p in prompts]).toarray()
        return np.hstack([page, words])

    def fit(self, docs: Iterable[dict[str, Any]]) -> NeighbourBox:
        """Remember the training questions' page-relative boxes.

        Args:
            docs: Generated split records (never the test split).

        Returns:
            The fitted attacker.
        """
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.neighbors import NearestNeighbors

        pairs = _pairs(docs)
        prompts = [p for p, _ in pairs]
        self.boxes = np.asarray(
            [[g[0] / p.width, g[1] / p.height, g[2] / p.width, g[3] / p.height] for p, g in pairs]
        )
        self.vectorizer = CountVectorizer(binary=True, token_pattern=r"[a-z']+").fit(
            [self._kept(p.question) or "none" for p in prompts]
        )
        raw = np.asarray([page_features(p) for p in prompts])
        self.scale = np.maximum(raw.std(axis=0), 1e-9)
        self.index = NearestNeighbors(n_neighbors=min(self.k, len(prompts))).fit(
            self._vectors(prompts)
        )
        return self

    def __call__(self, text: str) -> tuple[str, list[float] | None]:
        """Answer one prompt (see `answer_all`)."""
        return self.answer_all([text])[0]

    def answer_all(self, texts: list[str]) -> list[tuple[str, list[float] | None]]:
        """Per prompt: the token under most neighbour boxes, and its line-mates under as many.

        Args:
            texts: layout_text prompts.

        Returns:
            The answer and its box per prompt; ("", None) without tokens.
        """
        if self.index is None:
            raise ValueError("NeighbourBox: call fit() first")
        prompts = [parse_prompt(text) for text in texts]
        listed = [p for p in prompts if p.tokens]
        hits = iter(self.index.kneighbors(self._vectors(listed))[1]) if listed else iter([])
        replies: list[tuple[str, list[float] | None]] = []
        for prompt in prompts:
            if not prompt.tokens:
                replies.append(("", None))
                continue
            boxes = self.boxes[next(hits)]
            votes = np.asarray([_votes(t, prompt, boxes) for t in prompt.tokens])
            best = prompt.tokens[int(np.argmax(votes))]
            top = votes.max()
            chosen = [
                t
                for t, v in zip(prompt.tokens, votes, strict=True)
                if t.line == best.line and v >= 0.5 * top
            ]
            replies.append(_answer(chosen or [best]))
        return replies


def _votes(token: Token, prompt: Prompt, boxes: np.ndarray) -> float:
    """How many neighbour boxes (page-relative) hold the token's centre, plus a nearness term."""
    cx = (token.box[0] + token.box[2]) / 2 / prompt.width
    cy = (token.box[1] + token.box[3]) / 2 / prompt.height
    inside = (boxes[:, 0] <= cx) & (cx <= boxes[:, 2]) & (boxes[:, 1] <= cy) & (cy <= boxes[:, 3])
    centres = np.stack([(boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2], axis=1)
    near = np.exp(-np.hypot(centres[:, 0] - cx, centres[:, 1] - cy) / 0.05).sum()
    return float(inside.sum()) + 0.1 * float(near)
