"""A learned surface attacker for `correct_localization`: no reading, only string identities.

`SurfaceAttacker` turns every step of a failed trajectory into a row of automatically extracted
surface features and trains scikit-learn's `HistGradientBoostingClassifier` on the labelled steps
of training trajectories (mistake step or not); it blames the likeliest step of each test
trajectory and that step's agent. The features (`step_features`) compare strings only, never
values or arithmetic:

- position: index, steps from the end, relative position, length of the run, first / last;
- who: the agent, its role, the previous and next agents (categories);
- template: the first line with digits, capitalised words and quoted strings masked, for the
  step and its neighbours (the commonest in training are categories, the rest pooled);
- length: characters, lines, words;
- lexical overlap with the question: shared words, their share of the question's words;
- number identity (string equality of digit runs): how many numbers the step holds, how many
  are new (in no earlier step nor the question), new and never reused later, reused later,
  stale (seen before, but not in the last three steps), from the question, in the final
  answer, new in the step's last line (absent from the rest of the step and from earlier
  steps), the question's numbers the step leaves out, whether the step is the first to hold
  the final answer's number, the numbers of the previous step's last line that are never used
  again from this step on and those this step repeats, and the numbers it holds twice;
- name identity: the same counts for capitalised words (entity names).

A benchmark whose mistakes this finds much more often than the best position prior gives its
answers away through the way they are written, not through what they mean.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from docket.benchmarks.correct.scorer import localisation_value
from docket.benchmarks.correct.simulator.records import Trajectory

_NUMBER = re.compile(r"\d+")
_NAME = re.compile(r"\b[A-Z][a-z]+\b")
_WORD = re.compile(r"[A-Za-z]+")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
#: Steps back within which a number is still fresh (older ones count as stale).
FRESH_WINDOW = 3
#: Templates kept as categories (the commonest in training; the others are pooled into one).
TEMPLATES_KEPT = 250
#: The categorical columns of `step_features`, in order (the numeric ones follow).
CATEGORICAL = (
    "agent",
    "role",
    "prev_agent",
    "next_agent",
    "template",
    "prev_template",
    "next_template",
)


def template(content: str) -> str:
    """The first line of a step with quoted strings, digits and capitalised words masked."""
    line = content.strip().split("\n", 1)[0]
    line = _QUOTED.sub("Q", line)
    line = _NUMBER.sub("#", line)
    return _NAME.sub("X", line)[:80]


def _identity(
    items: list[set[str]], question: set[str], final: set[str], index: int
) -> list[float]:
    """Identity counts of the tokens of step `index` against the other steps (see module doc)."""
    own = items[index]
    before: set[str] = set().union(*items[:index]) if index else set()
    recent: set[str] = set().union(*items[max(0, index - FRESH_WINDOW) : index]) if index else set()
    after: set[str] = set().union(*items[index + 1 :]) if index + 1 < len(items) else set()
    new = own - before - question
    return [
        float(len(own)),
        float(len(new)),
        float(len(new - after)),
        float(len(own & after)),
        float(len((own & before) - recent)),
        float(len(own & question)),
        float(len(own & final)),
        float(len(question - own)),
        float(bool(final & own) and not (final & before)),
    ]


def _final_step(trajectory: Trajectory) -> int:
    for index in range(len(trajectory.history) - 1, -1, -1):
        if "FINAL ANSWER" in trajectory.history[index].content.upper():
            return index
    return len(trajectory.history) - 1


def step_features(trajectory: Trajectory) -> list[list[Any]]:
    """One row per step: the categorical columns (`CATEGORICAL`) then the numeric ones."""
    history = trajectory.history
    count = len(history)
    numbers = [set(_NUMBER.findall(s.content)) for s in history]
    names = [set(_NAME.findall(s.content)) for s in history]
    last_lines = [set(_NUMBER.findall(s.content.strip().rsplit("\n", 1)[-1])) for s in history]
    bodies = [set(_NUMBER.findall(s.content.strip().rsplit("\n", 1)[0])) for s in history]
    question_numbers = set(_NUMBER.findall(trajectory.question))
    question_names = set(_NAME.findall(trajectory.question))
    question_words = {w.lower() for w in _WORD.findall(trajectory.question)}
    final = _final_step(trajectory)
    final_numbers, final_names = numbers[final], names[final] - {"Answer"}
    templates = [template(s.content) for s in history]
    rows: list[list[Any]] = []
    for i, step in enumerate(history):
        words = {w.lower() for w in _WORD.findall(step.content)}
        before = set().union(*numbers[:i]) if i else set()
        shared = len(words & question_words)
        rows.append(
            [
                step.name,
                step.role,
                history[i - 1].name if i else "<start>",
                history[i + 1].name if i + 1 < count else "<end>",
                templates[i],
                templates[i - 1] if i else "<start>",
                templates[i + 1] if i + 1 < count else "<end>",
                float(i),
                float(count - 1 - i),
                i / max(count - 1, 1),
                float(count),
                float(i == 0),
                float(i == count - 1),
                float(i - final),
                float(len(step.content)),
                float(step.content.count("\n") + 1),
                float(len(step.content.split())),
                float(shared),
                shared / max(len(question_words), 1),
                float(len(last_lines[i] - bodies[i] - before - question_numbers)),
                float(len(last_lines[i - 1] - set().union(*numbers[i:])) if i else 0.0),
                float(len(last_lines[i - 1] & numbers[i]) if i else 0.0),
                float(sum(n > 1 for n in Counter(_NUMBER.findall(step.content)).values())),
                *_identity(numbers, question_numbers, final_numbers, i),
                *_identity(names, question_names, final_names, i),
            ]
        )
    return rows


def _one_thread() -> Any:
    """A context in which OpenMP uses one thread (more oversubscribe a shared machine)."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    return threadpool_limits(limits=1)


@dataclass
class SurfaceAttacker:
    """Gradient boosting over `step_features`; blames the likeliest step and its agent."""

    max_iter: int = 200
    learning_rate: float = 0.1
    random_state: int = 0
    _encoder: Any = field(default=None, repr=False)
    _model: Any = field(default=None, repr=False)
    _templates: set[str] = field(default_factory=set, repr=False)

    def _matrix(self, trajectories: Sequence[Trajectory]) -> Any:
        import numpy as np

        rows = [row for t in trajectories for row in step_features(t)]
        columns = len(CATEGORICAL)
        for row in rows:
            for c in range(4, columns):
                row[c] = row[c] if row[c] in self._templates else "<rare>"
        categories = self._encoder.transform([row[:columns] for row in rows])
        numeric = np.array([row[columns:] for row in rows], dtype=float)
        return np.hstack([categories, numeric])

    def fit(self, trajectories: Sequence[Trajectory]) -> SurfaceAttacker:
        """Train on labelled trajectories (their mistake steps).

        Args:
            trajectories: Training trajectories with `mistake_step` labels.

        Returns:
            The fitted attacker.
        """
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.preprocessing import OrdinalEncoder

        if not trajectories:
            raise ValueError("the surface attacker needs at least one training trajectory")
        counts = Counter(template(s.content) for t in trajectories for s in t.history)
        self._templates = {name for name, _ in counts.most_common(TEMPLATES_KEPT)}
        self._templates |= {"<start>", "<end>"}
        raw = [row[: len(CATEGORICAL)] for t in trajectories for row in step_features(t)]
        for row in raw:
            for c in range(4, len(CATEGORICAL)):
                row[c] = row[c] if row[c] in self._templates else "<rare>"
        self._encoder = OrdinalEncoder(
            handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-1
        ).fit(raw)
        labels = [int(i == t.mistake_step) for t in trajectories for i in range(len(t.history))]
        self._model = HistGradientBoostingClassifier(
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            categorical_features=list(range(len(CATEGORICAL))),
            random_state=self.random_state,
        )
        with _one_thread():
            self._model.fit(self._matrix(trajectories), labels)
        return self

    def scores(self, trajectory: Trajectory) -> list[float]:
        """The probability the model gives each step of being the mistake.

        Args:
            trajectory: A trajectory (its labels are not read).

        Returns:
            One probability per step.
        """
        return self.scores_all([trajectory])[0]

    def scores_all(self, trajectories: Sequence[Trajectory]) -> list[list[float]]:
        """`scores` of many trajectories in one pass of the model.

        Args:
            trajectories: Trajectories (their labels are not read).

        Returns:
            One list of step probabilities per trajectory.
        """
        if self._model is None:
            raise ValueError("fit the surface attacker first")
        with _one_thread():
            flat = self._model.predict_proba(self._matrix(trajectories))[:, 1]
        result, start = [], 0
        for t in trajectories:
            result.append([float(p) for p in flat[start : start + len(t.history)]])
            start += len(t.history)
        return result

    def predict(self, trajectory: Trajectory) -> tuple[str, int]:
        """The blamed (agent, step): the likeliest step (the first of equals) and its agent.

        Args:
            trajectory: A trajectory (its labels are not read).

        Returns:
            The agent name and the 0-based step.
        """
        return self.predict_all([trajectory])[0]

    def predict_all(self, trajectories: Sequence[Trajectory]) -> list[tuple[str, int]]:
        """`predict` for many trajectories at once.

        Args:
            trajectories: Trajectories (their labels are not read).

        Returns:
            (agent, step) per trajectory.
        """
        blamed = []
        for t, scores in zip(trajectories, self.scores_all(trajectories), strict=True):
            step = max(range(len(scores)), key=lambda i: (scores[i], -i))
            blamed.append((t.history[step].name, step))
        return blamed


def evaluate(
    predictions: Sequence[tuple[str, int]], trajectories: Sequence[Trajectory]
) -> dict[str, float]:
    """Mean step and agent accuracy of predictions, by docket's own `localisation_value`.

    Args:
        predictions: (agent, step) per trajectory.
        trajectories: The gold trajectories, in the same order.

    Returns:
        `{"step": ..., "agent": ..., "joint": ..., "n": ...}`.
    """
    values = [
        localisation_value(agent, step, t.mistake_agent, t.mistake_step, tolerance=0)
        for (agent, step), t in zip(predictions, trajectories, strict=True)
    ]
    n = max(len(values), 1)
    result = {key: sum(v[key] for v in values) / n for key in ("step", "agent", "joint")}
    return {**result, "n": float(len(values))}


def chance(test: Sequence[Trajectory]) -> dict[str, float]:
    """Chance on a split: the best constant position policy, chosen on that split itself.

    Policies: blame step k (k = 0..9), the k-th step from the end (k = 1..10), or the step at
    relative position r (r = 0, 0.1, ..., 1), with that step's agent; for the agent, also the
    majority agent of the split. The best score on the split is an upper bound of what any such
    prior fitted elsewhere gets on it.

    Args:
        test: The split chance is measured on.

    Returns:
        `{"step": the best step accuracy, "agent": the best agent accuracy}`.
    """
    policies: list[tuple[str, float]] = [("first", k) for k in range(10)]
    policies += [("last", k) for k in range(1, 11)]
    policies += [("relative", r / 10) for r in range(11)]

    def pick(kind: str, value: float, count: int) -> int:
        if kind == "first":
            return min(int(value), count - 1)
        if kind == "last":
            return max(count - int(value), 0)
        return round(value * (count - 1))

    agents = Counter(t.mistake_agent for t in test)
    best_step, best_agent = 0.0, agents.most_common(1)[0][1] / max(len(test), 1)
    for kind, value in policies:
        steps = [pick(kind, value, len(t.history)) for t in test]
        scored = evaluate([(t.history[s].name, s) for t, s in zip(test, steps, strict=True)], test)
        best_step, best_agent = max(best_step, scored["step"]), max(best_agent, scored["agent"])
    return {"step": best_step, "agent": best_agent}


def _steps(trajectory: Trajectory) -> list[tuple[str, str]]:
    return [(s.name, s.content) for s in trajectory.history]


@dataclass
class StackedAttacker(SurfaceAttacker):
    """The surface attacker with the TF-IDF baseline's step scores as three more columns.

    `fit` cross-fits the baseline (`folds` folds of the training trajectories score each other),
    then trains the booster on the stacked rows; at prediction the baseline fitted on all the
    training trajectories scores the steps.
    """

    folds: int = 3
    _tfidf: dict[str, list[float]] = field(default_factory=dict, repr=False)
    _baseline: Any = field(default=None, repr=False)

    def _matrix(self, trajectories: Sequence[Trajectory]) -> Any:
        import numpy as np

        extra = []
        for t in trajectories:
            scores = self._tfidf.get(t.id) or self._baseline.scores(_steps(t))
            top, ranked = max(scores), sorted(scores, reverse=True)
            extra += [[s, s / top if top else 0.0, float(ranked.index(s))] for s in scores]
        return np.hstack([super()._matrix(trajectories), np.array(extra)])

    def fit(self, trajectories: Sequence[Trajectory]) -> StackedAttacker:
        """Cross-fit the TF-IDF baseline's step scores, then train the booster on both.

        Args:
            trajectories: Training trajectories with `mistake_step` labels.

        Returns:
            The fitted attacker.
        """
        from docket.benchmarks.correct.simulator.baselines import SurfaceBaseline

        if not trajectories:
            raise ValueError("the surface attacker needs at least one training trajectory")
        self._tfidf = {}
        for fold in range(self.folds):
            fitted = [t for i, t in enumerate(trajectories) if i % self.folds != fold]
            model = SurfaceBaseline().fit(
                [_steps(t) for t in fitted], [t.mistake_step for t in fitted]
            )
            for i, t in enumerate(trajectories):
                if i % self.folds == fold:
                    self._tfidf[t.id] = model.scores(_steps(t))
        self._baseline = SurfaceBaseline().fit(
            [_steps(t) for t in trajectories], [t.mistake_step for t in trajectories]
        )
        super().fit(trajectories)
        self._tfidf = {}  # prediction uses the baseline fitted on every training trajectory
        return self
