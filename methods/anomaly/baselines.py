"""The field's detectors (PyOD) on the same rows, and the chance reference.

Rows are encoded for them as numbers: numeric columns standardised with the training rows'
mean and deviation, categorical columns one-hot over the training rows' categories plus one
slot for a category the training rows never had. Every detector is fitted on normal training
rows only (the one-class protocol AnoLLM uses) and scores test rows with `decision_function`
(higher = more anomalous).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .serialize import Column, Value

Row = Mapping[str, Value]
PYOD_DETECTORS = ("iforest", "ecod", "copod", "lof", "knn", "deepsvdd")


class Encoder:
    """Rows -> a float matrix (standardised numbers, one-hot categories)."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[Row]) -> None:
        self.columns = list(columns)
        self.stats: dict[str, tuple[float, float]] = {}
        self.categories: dict[str, list[str]] = {}
        for column in self.columns:
            values = [row[column.name] for row in rows]
            if column.kind == "numeric":
                numbers = np.asarray(values, dtype=float)
                self.stats[column.name] = (float(numbers.mean()), float(numbers.std()) or 1.0)
            else:
                self.categories[column.name] = sorted({str(v) for v in values})

    def __call__(self, rows: Sequence[Row]) -> np.ndarray:
        parts = []
        for column in self.columns:
            if column.kind == "numeric":
                mean, std = self.stats[column.name]
                values = np.asarray([float(r[column.name]) for r in rows])
                parts.append(((values - mean) / std)[:, None])
            else:
                known = self.categories[column.name]
                hot = np.zeros((len(rows), len(known) + 1))  # the last slot: unseen category
                index = {c: i for i, c in enumerate(known)}
                for i, row in enumerate(rows):
                    hot[i, index.get(str(row[column.name]), len(known))] = 1.0
                parts.append(hot)
        return np.hstack(parts)


def _pyod(name: str, n_features: int, seed: int) -> Any:
    if name == "iforest":
        from pyod.models.iforest import IForest

        return IForest(random_state=seed)
    if name == "ecod":
        from pyod.models.ecod import ECOD

        return ECOD()
    if name == "copod":
        from pyod.models.copod import COPOD

        return COPOD()
    if name == "lof":
        from pyod.models.lof import LOF

        return LOF()
    if name == "knn":
        from pyod.models.knn import KNN

        return KNN()
    if name == "deepsvdd":
        from pyod.models.deep_svdd import DeepSVDD

        return DeepSVDD(n_features=n_features, random_state=seed, epochs=50, verbose=0)
    raise ValueError(f"unknown PyOD detector {name!r}; accepted: {', '.join(PYOD_DETECTORS)}")


def pyod_scores(
    name: str, columns: Sequence[Column], train: Sequence[Row], test: Sequence[Row], seed: int
) -> np.ndarray:
    """Fit PyOD detector `name` on `train`; anomaly scores of `test`."""
    encode = Encoder(columns, train)
    x_train, x_test = encode(train), encode(test)
    detector = _pyod(name, x_train.shape[1], seed)
    detector.fit(x_train)
    return np.asarray(detector.decision_function(x_test), dtype=float)


def random_scores(test: Sequence[Row], seed: int) -> np.ndarray:
    """Scores that ignore the rows (the chance reference: AUROC 0.5 in expectation)."""
    return np.random.default_rng(seed).random(len(test))
