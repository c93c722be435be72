"""The surface attacker of `docket/tabular_anomaly`, its chance row (README.md: "Chance row").

`surface_scores` looks at each column on its own, with no model: a row's score is its largest
robust z-score over the numeric columns (|x − median| / (1.4826 · MAD) on the training rows)
plus the number of its categorical values that no training row has. A detector earns its keep
by how far it lands above this (`-T detector=surface`), not above random.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from docket.methods.anomaly.serialize import Column, Value

Row = dict[str, Value]
#: Scale of a column whose MAD is 0 (a constant column): any departure counts as large.
_TINY = 1e-9


def robust_z(train: Sequence[float], values: Sequence[float]) -> np.ndarray:
    """|x − median| / (1.4826 · MAD) of `values` against the training column.

    Args:
        train: The column's training values.
        values: The values to score.

    Returns:
        One robust z-score per value.
    """
    column = np.asarray(train, dtype=float)
    median = float(np.median(column))
    mad = float(np.median(np.abs(column - median))) * 1.4826
    return np.abs(np.asarray(values, dtype=float) - median) / max(mad, _TINY)


def surface_scores(
    columns: Sequence[Column], train: Sequence[Row], test: Sequence[Row], *, numeric: bool = True
) -> np.ndarray:
    """Max robust z-score over numeric columns plus the count of unseen categories.

    Args:
        columns: The table's columns.
        train: Training (normal) rows.
        test: Rows to score.
        numeric: Add the max robust z-score (False: the count of categorical values no
            training row has, alone).

    Returns:
        One anomaly score per test row (higher = more anomalous).
    """
    seen = {c.name: {row[c.name] for row in train} for c in columns if c.kind == "categorical"}
    unseen = [sum(row[name] not in values for name, values in seen.items()) for row in test]
    z = np.zeros(len(test))
    for name in [c.name for c in columns if c.kind == "numeric"] if numeric else []:
        column = robust_z([float(r[name]) for r in train], [float(r[name]) for r in test])
        z = np.maximum(z, column)
    return z + np.asarray(unseen, dtype=float)


def row_features(
    columns: Sequence[Column], train: Sequence[Row], test: Sequence[Row]
) -> np.ndarray:
    """What the learned attacker reads of each test row, against its own training rows, with no
    column's meaning: the largest and the mean robust z-score over the numeric columns, how many
    are above 3, how many categorical values no training row has, and the rarest of its
    categorical values' training shares.

    Args:
        columns: The table's columns.
        train: Training (normal) rows.
        test: Rows to describe.

    Returns:
        One row of 5 features per test row.
    """
    numeric = [c.name for c in columns if c.kind == "numeric"]
    z = np.zeros((len(test), max(len(numeric), 1)))
    for j, name in enumerate(numeric):
        z[:, j] = robust_z([float(r[name]) for r in train], [float(r[name]) for r in test])
    z = np.minimum(z, 1e3)  # a constant column's 1e9 would swamp the mean
    categorical = [c.name for c in columns if c.kind == "categorical"]
    shares = {
        name: {v: sum(r[name] == v for r in train) / len(train) for v in {r[name] for r in train}}
        for name in categorical
    }
    unseen = [sum(r[n] not in shares[n] for n in categorical) for r in test]
    rarest = [min((shares[n].get(r[n], 0.0) for n in categorical), default=1.0) for r in test]
    return np.column_stack(
        [z.max(axis=1), z.mean(axis=1), (z > 3).sum(axis=1), unseen, rarest]
    ).astype(float)


@dataclass(frozen=True)
class Labelled:
    """A split the learned attacker may see: columns, training rows, test rows and labels."""

    columns: Sequence[Column]
    train: Sequence[Row]
    test: Sequence[Row]
    labels: Sequence[int]


def fit_booster(
    splits: Sequence[Labelled], seed: int = 0
) -> Callable[[Sequence[Column], Sequence[Row], Sequence[Row]], np.ndarray]:
    """The learned attacker of issue #53 item 6: gradient boosting over `row_features`, fitted on
    labelled splits it may see (a generated private split's fresh tables); returns a detector
    `(columns, train, test) -> scores` (the probability of an anomaly).

    Args:
        splits: The labelled splits to fit on.
        seed: The booster's random state.

    Returns:
        The fitted detector.
    """
    from sklearn.ensemble import GradientBoostingClassifier

    model = GradientBoostingClassifier(random_state=seed)
    model.fit(
        np.vstack([row_features(s.columns, s.train, s.test) for s in splits]),
        [label for s in splits for label in s.labels],
    )

    def detect(columns: Sequence[Column], train: Sequence[Row], test: Sequence[Row]) -> np.ndarray:
        return np.asarray(model.predict_proba(row_features(columns, train, test))[:, 1])

    return detect


#: The generated split the learned attacker is fitted on (`splits.private_splits(TRAIN_SEED, 3)`;
#: only its fresh tables, `shop` and `pyod_categorical`: the other two ship their rows).
TRAIN_SEED = 53
FRESH = ("shop", "pyod_categorical")


def training_splits(seed: int = TRAIN_SEED) -> list[Labelled]:
    """The learned attacker's labelled splits: a generated split's fresh tables."""
    from docket.benchmarks.tabular_anomaly.splits import private_splits
    from docket.methods.anomaly.serialize import Column as Col

    return [
        Labelled(
            [Col(c["name"], c["kind"], c["decimals"]) for c in row["columns"]],
            row["train"],
            row["test"],
            row["labels"],
        )
        for row in private_splits(seed, 3)
        if row["dataset"] in FRESH
    ]
