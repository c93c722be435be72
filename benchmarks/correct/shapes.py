"""A nearest-neighbour attacker over masked trajectory shapes (no values, no words of the task).

A trajectory's *shape* is its sequence of steps written as `agent:template` tokens
(`attack.template`: the first line with digits, capitalised words and quoted strings masked).
`ShapeNeighbour` finds the k training trajectories whose shapes are nearest (cosine of TF-IDF
vectors of 1-3-grams of shape tokens) and lets each vote for the test steps that look like its
own mistake step: the same `agent:template` token, weighted by how close the step's relative
position is to the neighbour's mistake; without a match, the vote goes to the step at the same
relative position. It blames the step with most votes and that step's agent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from docket.benchmarks.correct.attack import template
from docket.benchmarks.correct.simulator.records import Trajectory

#: Width (in relative position) of a vote's position weight.
POSITION_WIDTH = 0.1


def shape(trajectory: Trajectory) -> list[str]:
    """The trajectory's steps as `agent:template` tokens (spaces in templates joined by `_`)."""
    return [f"{s.name}:{'_'.join(template(s.content).split())}" for s in trajectory.history]


def _relative(step: int, count: int) -> float:
    return step / max(count - 1, 1)


@dataclass
class ShapeNeighbour:
    """k nearest training trajectories by masked shape vote for the mistake step."""

    k: int = 25
    _vectorizer: Any = field(default=None, repr=False)
    _index: Any = field(default=None, repr=False)
    _mistakes: list[tuple[str, float]] = field(default_factory=list, repr=False)

    def fit(self, trajectories: Sequence[Trajectory]) -> ShapeNeighbour:
        """Index the training trajectories' shapes and their mistakes.

        Args:
            trajectories: Training trajectories with `mistake_step` labels.

        Returns:
            The fitted attacker.
        """
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.neighbors import NearestNeighbors

        if not trajectories:
            raise ValueError("the shape neighbour needs at least one training trajectory")
        shapes = [shape(t) for t in trajectories]
        self._vectorizer = TfidfVectorizer(
            analyzer=lambda tokens: _grams(tokens), sublinear_tf=True
        )
        matrix = self._vectorizer.fit_transform(shapes)
        self._index = NearestNeighbors(
            n_neighbors=min(self.k, len(trajectories)), metric="cosine"
        ).fit(matrix)
        self._mistakes = [
            (tokens[t.mistake_step], _relative(t.mistake_step, len(tokens)))
            for t, tokens in zip(trajectories, shapes, strict=True)
        ]
        return self

    def predict_all(self, trajectories: Sequence[Trajectory]) -> list[tuple[str, int]]:
        """The blamed (agent, step) per trajectory (labels are not read).

        Args:
            trajectories: Trajectories to attack.

        Returns:
            (agent, step) per trajectory.
        """
        if self._index is None:
            raise ValueError("fit the shape neighbour first")
        if not trajectories:
            return []
        shapes = [shape(t) for t in trajectories]
        neighbours = self._index.kneighbors(self._vectorizer.transform(shapes))[1]
        blamed = []
        for t, tokens, near in zip(trajectories, shapes, neighbours, strict=True):
            votes = [0.0] * len(tokens)
            for j in near:
                token, where = self._mistakes[j]
                matches = [i for i, own in enumerate(tokens) if own == token]
                if not matches:
                    votes[round(where * (len(tokens) - 1))] += 0.5
                    continue
                for i in matches:
                    distance = abs(_relative(i, len(tokens)) - where)
                    votes[i] += math.exp(-distance / POSITION_WIDTH)
            step = max(range(len(votes)), key=lambda i: (votes[i], -i))
            blamed.append((t.history[step].name, step))
        return blamed


def _grams(tokens: list[str]) -> list[str]:
    """1-, 2- and 3-grams of shape tokens."""
    return [" ".join(tokens[i : i + n]) for n in (1, 2, 3) for i in range(len(tokens) - n + 1)]
