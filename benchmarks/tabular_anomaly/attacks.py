"""The surface attacker of `docket/tabular_anomaly`, its chance row (README.md: "Chance row").

`surface_scores` looks at each column on its own, with no model: a row's score is its largest
robust z-score over the numeric columns (|x − median| / (1.4826 · MAD) on the training rows)
plus the number of its categorical values that no training row has. A detector earns its keep
by how far it lands above this (`-T detector=surface`), not above random.
"""

from __future__ import annotations

from collections.abc import Sequence

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
