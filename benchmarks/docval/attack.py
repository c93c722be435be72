"""Surface attackers on `docval_grounding -T mode=layout_text`: a learned token tagger and a rule.

Neither reads: both see only the `layout_text` prompt (OCR tokens with boxes, the question) and
use surface features.

* `SurfaceTagger` — gradient boosting (scikit-learn's `HistGradientBoostingClassifier`) that
  tags each OCR token as inside the answer box or not, from: the question template with its
  entities masked (capitalised and numeric words), bag-of-words of the question, the token's
  position (box, reading-order rank, line rank, rank within its line), its character shape
  (digits, currency, punctuation, capitals, length) and its lexical match with the question
  (the token's, its line's, the tokens left of it and the line above it; whether it lies in the
  row or the column of a token the question names). It is trained on a freshly generated split
  (never the test split); the answer is the best token and its tagged neighbours on its line,
  the box their union.
* `constant_attacker` — the most frequent training answer and the median training box.
* `keyword_rule` — no training: the token that shares the most words (4-letter prefixes) with
  the question, then the rest of its line (else the next line) as answer and box.

`evaluate(attacker, docs)` scores either on a split with the task's own ANLS and mAP.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from docket.benchmarks.docval.prompts import question_prompt
from docket.benchmarks.docval.scorer import anls, map_fraction
from docket.methods.distill.boxes import iou

_TOKEN = re.compile(r'^Token #(\d+): \[([\d., -]+)\] -> "(.*)"$', re.MULTILINE)
_QUESTION = re.compile(r"^Question: (.*)$", re.MULTILINE)
_PAGE = re.compile(r"\((\d+) x (\d+)\)")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "what is the of a an for on was who which how to in when by this that were does did "
    "many much it its are be at from with as".split()
)
#: An attacker maps one layout_text prompt to (answer text, box or None).
Attacker = Callable[[str], tuple[str, list[float] | None]]


@dataclass(frozen=True)
class Token:
    """One OCR token of a prompt, with its line in reading order."""

    index: int
    text: str
    box: tuple[float, float, float, float]
    line: int
    rank: int  # position within its line, left to right
    line_size: int


@dataclass(frozen=True)
class Prompt:
    """What a layout_text prompt shows: the tokens, the question and the page size."""

    tokens: list[Token]
    question: str
    width: float
    height: float


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


def parse_prompt(text: str) -> Prompt:
    """Read the tokens (grouped into lines), the question and the page size from a prompt.

    Args:
        text: A `docval_grounding` layout_text prompt.

    Returns:
        The parsed prompt (no tokens if the prompt lists none).
    """
    raw = [
        (int(m.group(1)), m.group(3), tuple(float(v) for v in m.group(2).split(",")))
        for m in _TOKEN.finditer(text)
    ]
    question = _QUESTION.search(text)
    page = _PAGE.search(text)
    width, height = (float(page.group(1)), float(page.group(2))) if page else (1.0, 1.0)
    lines: list[list[tuple[int, str, tuple[float, ...]]]] = []
    for item in sorted(raw, key=lambda r: (r[2][1] + r[2][3], r[2][0])):
        box = item[2]
        if lines:
            head = lines[-1][0][2]
            overlap = min(head[3], box[3]) - max(head[1], box[1])
            if overlap > 0.5 * min(head[3] - head[1], box[3] - box[1]):
                lines[-1].append(item)
                continue
        lines.append([item])
    tokens: list[Token] = []
    for number, line in enumerate(lines):
        for rank, (index, word, box) in enumerate(sorted(line, key=lambda r: r[2][0])):
            x1, y1, x2, y2 = box
            tokens.append(Token(index, word, (x1, y1, x2, y2), number, rank, len(line)))
    return Prompt(tokens, question.group(1) if question else "", width, height)


def template(question: str) -> str:
    """The question with its entities masked: capitalised words after the first, numbers."""
    words = question.rstrip("?").split()
    masked = [
        "<E>" if i and (w[:1].isupper() or any(c.isdigit() for c in w)) else w.lower()
        for i, w in enumerate(words)
    ]
    return " ".join(masked)


def _stems(text: str, prefix: int) -> set[str]:
    return {w[:prefix] for w in _words(text)} if prefix else _words(text)


def keyword_rule(text: str, prefix: int = 4) -> tuple[str, list[float] | None]:
    """No training: the rest of the line after the token that best matches the question.

    Args:
        text: A layout_text prompt.
        prefix: Words match when their first `prefix` letters agree (0: whole words).

    Returns:
        The answer (the tokens right of the best match on its line, else the next line, else
        the match itself; ties go to the later token) and their enclosing box; ("", None)
        without tokens.
    """
    prompt = parse_prompt(text)
    if not prompt.tokens:
        return "", None
    wanted = _stems(prompt.question, prefix)
    best = max(prompt.tokens, key=lambda t: (len(wanted & _stems(t.text, prefix)), t.index))
    rest = [t for t in prompt.tokens if t.line == best.line and t.rank > best.rank]
    if not rest:
        rest = [t for t in prompt.tokens if t.line == best.line + 1] or [best]
    return _answer(rest)


def _answer(tokens: list[Token]) -> tuple[str, list[float]]:
    ordered = sorted(tokens, key=lambda t: (t.line, t.rank))
    box = [
        min(t.box[0] for t in ordered),
        min(t.box[1] for t in ordered),
        max(t.box[2] for t in ordered),
        max(t.box[3] for t in ordered),
    ]
    return " ".join(t.text for t in ordered), box


def _shape(text: str) -> list[float]:
    n = max(1, len(text))
    return [
        len(text),
        sum(c.isdigit() for c in text) / n,
        sum(c.isalpha() for c in text) / n,
        float(text[:1].isupper()),
        float(text.isupper()),
        float(any(c in "$£€" for c in text) or text.startswith("EUR")),
        float("." in text),
        float("," in text),
        float(":" in text),
        float("/" in text),
        float("-" in text),
        float("@" in text),
        float("%" in text),
        float(" " in text),
        float(text.endswith(":")),
    ]


class SurfaceTagger:
    """Gradient-boosted token tagger over surface features (see the module docstring).

    Args:
        vocabulary: How many of the training questions' most frequent words become features.
        seed: The booster's random state.
    """

    def __init__(self, vocabulary: int = 60, seed: int = 0) -> None:
        self.vocabulary_size = vocabulary
        self.seed = seed
        self.templates: dict[str, int] = {}
        self.vocabulary: list[str] = []
        self.model: Any = None

    def _features(self, prompt: Prompt) -> np.ndarray:
        wanted = _words(prompt.question)
        named = {w.lower() for w in prompt.question.rstrip("?").split()[1:] if w[:1].isupper()}
        named |= set(_WORD.findall(prompt.question)) & {
            w for t in prompt.tokens for w in _WORD.findall(t.text) if any(c.isdigit() for c in w)
        }
        by_line: dict[int, list[Token]] = {}
        for t in prompt.tokens:
            by_line.setdefault(t.line, []).append(t)
        match = {t.index: len(wanted & _words(t.text)) for t in prompt.tokens}
        mentions = [t for t in prompt.tokens if named & set(_WORD.findall(t.text.lower()))]
        best_match = max(match.values(), default=0)
        anchors = [t for t in prompt.tokens if best_match and match[t.index] == best_match]
        n_lines = max(t.line for t in prompt.tokens) + 1
        qtemplate = float(self.templates.get(template(prompt.question), -1))
        qbag = [float(w in wanted) for w in self.vocabulary]
        rows = []
        for t in prompt.tokens:
            line = by_line[t.line]
            left = [o for o in line if o.rank < t.rank]
            above = by_line.get(t.line - 1, [])
            cx = (t.box[0] + t.box[2]) / 2
            anchor_dx = min((t.box[0] - a.box[2] for a in anchors), key=abs, default=9999.0)
            anchor_dline = min((t.line - a.line for a in anchors), key=abs, default=99)
            rows.append(
                [
                    qtemplate,
                    t.box[0] / prompt.width,
                    t.box[1] / prompt.height,
                    t.box[2] / prompt.width,
                    t.box[3] / prompt.height,
                    t.box[3] - t.box[1],
                    t.index / len(prompt.tokens),
                    t.line,
                    n_lines - t.line,
                    t.rank,
                    t.line_size - t.rank - 1,
                    *_shape(t.text),
                    match[t.index],
                    max((match[o.index] for o in line), default=0),
                    max((match[o.index] for o in left), default=0),
                    match[left[-1].index] if left else -1,
                    max((match[o.index] for o in above), default=0),
                    float(best_match > 0 and match[t.index] == best_match),
                    anchor_dx,
                    anchor_dline,
                    float(bool(named & set(_WORD.findall(t.text.lower())))),
                    float(any(m.line == t.line for m in mentions)),
                    float(any(m.box[0] - 5 <= cx <= m.box[2] + 40 for m in mentions)),
                    *qbag,
                ]
            )
        return np.asarray(rows, dtype=float)

    @staticmethod
    def _inside(token: Token, gold: list[float]) -> bool:
        w = max(0.0, min(gold[2], token.box[2]) - max(gold[0], token.box[0]))
        h = max(0.0, min(gold[3], token.box[3]) - max(gold[1], token.box[1]))
        area = (token.box[2] - token.box[0]) * (token.box[3] - token.box[1])
        return area > 0 and w * h >= 0.5 * area

    def fit(self, docs: Iterable[dict[str, Any]]) -> SurfaceTagger:
        """Train on documents of a generated split (records with questions and gold boxes).

        Args:
            docs: Split records (`generate.make_document` rows), never the test split.

        Returns:
            The fitted tagger.
        """
        from collections import Counter

        from sklearn.ensemble import HistGradientBoostingClassifier

        pairs = [
            (parse_prompt(question_prompt(d, q["question"], "layout_text")), q["bbox"])
            for d in docs
            for q in d["questions"]
            if q.get("bbox")
        ]
        if not pairs:
            raise ValueError("SurfaceTagger.fit: no questions with a gold box")
        counts = Counter(template(p.question) for p, _ in pairs)
        self.templates = {t: i for i, (t, _) in enumerate(counts.most_common(250))}
        words = Counter(w for p, _ in pairs for w in _words(p.question))
        self.vocabulary = [w for w, _ in words.most_common(self.vocabulary_size)]
        features = np.vstack([self._features(p) for p, _ in pairs])
        labels = np.concatenate(
            [[self._inside(t, gold) for t in p.tokens] for p, gold in pairs]
        ).astype(int)
        with threadpool_limits(1):  # OpenMP threads thrash on a shared machine
            self.model = HistGradientBoostingClassifier(
                max_iter=200, categorical_features=[0], random_state=self.seed
            ).fit(features, labels)
        return self

    def __call__(self, text: str) -> tuple[str, list[float] | None]:
        """Answer one layout_text prompt (see `answer_all`).

        Args:
            text: The prompt.

        Returns:
            The answer and its box.
        """
        return self.answer_all([text])[0]

    def answer_all(self, texts: list[str]) -> list[tuple[str, list[float] | None]]:
        """Answer layout_text prompts in one batch.

        Args:
            texts: The prompts.

        Returns:
            Per prompt: the best-scored token and its neighbours on its line scored >= 0.5
            (text joined left to right) and their enclosing box; ("", None) without tokens.
        """

        if self.model is None:
            raise ValueError("SurfaceTagger: call fit() first")
        return tag_and_decode(self.model, [parse_prompt(t) for t in texts], self._features)


def tag_and_decode(
    model: Any, prompts: list[Prompt], features: Callable[[Prompt], np.ndarray]
) -> list[tuple[str, list[float] | None]]:
    """Tag every token of `prompts` with `model` in one batch and decode each (`_decode`).

    Args:
        model: A fitted binary classifier with `predict_proba`.
        prompts: Parsed prompts.
        features: One feature row per token of a prompt.

    Returns:
        Per prompt, the answer and its box; ("", None) without tokens.
    """
    listed = [p for p in prompts if p.tokens]
    if not listed:
        return [("", None) for _ in prompts]
    with threadpool_limits(1):
        proba = model.predict_proba(np.vstack([features(p) for p in listed]))[:, 1]
    replies: list[tuple[str, list[float] | None]] = []
    start = 0
    for prompt in prompts:
        if not prompt.tokens:
            replies.append(("", None))
            continue
        replies.append(_decode(prompt, proba[start : start + len(prompt.tokens)]))
        start += len(prompt.tokens)
    return replies


def _decode(prompt: Prompt, proba: np.ndarray) -> tuple[str, list[float]]:
    """The best token and its neighbours on its line with probability >= 0.5."""
    top = int(np.argmax(proba))
    best = prompt.tokens[top]
    line = sorted(
        (i for i, t in enumerate(prompt.tokens) if t.line == best.line),
        key=lambda i: prompt.tokens[i].rank,
    )
    at = line.index(top)
    lo, hi = at, at
    while lo > 0 and proba[line[lo - 1]] >= 0.5:
        lo -= 1
    while hi < len(line) - 1 and proba[line[hi + 1]] >= 0.5:
        hi += 1
    return _answer([prompt.tokens[i] for i in line[lo : hi + 1]])


def constant_attacker(docs: Iterable[dict[str, Any]]) -> Attacker:
    """The best constant: the most frequent first answer of `docs` and their median gold box.

    Args:
        docs: Training split records.

    Returns:
        An attacker that ignores its prompt.
    """
    from collections import Counter

    questions = [q for d in docs for q in d["questions"] if q.get("bbox")]
    if not questions:
        raise ValueError("constant_attacker: no questions with a gold box")
    answer = Counter(q["answers"][0] for q in questions).most_common(1)[0][0]
    box = [float(v) for v in np.median([q["bbox"] for q in questions], axis=0)]
    return lambda text: (answer, box)


def evaluate(attacker: Attacker, docs: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Mean ANLS and mAP of `attacker` over every question of `docs` (layout_text prompts).

    Args:
        attacker: A function from prompt text to (answer, box).
        docs: Split records.

    Returns:
        `{"anls": ..., "map": ..., "n": questions}`.
    """
    questions = [(doc, q) for doc in docs for q in doc["questions"]]
    texts = [question_prompt(doc, q["question"], "layout_text") for doc, q in questions]
    batch = getattr(attacker, "answer_all", None)
    replies = batch(texts) if batch is not None else [attacker(text) for text in texts]
    scores: list[tuple[float, float]] = []
    for (_, q), (answer, box) in zip(questions, replies, strict=True):
        overlap = iou(box, q["bbox"]) if box is not None and q.get("bbox") else 0.0
        scores.append((anls(answer, q["answers"]), map_fraction(overlap)))
    if not scores:
        raise ValueError("evaluate: no questions")
    values = np.asarray(scores)
    return {"anls": float(values[:, 0].mean()), "map": float(values[:, 1].mean()), "n": len(scores)}
