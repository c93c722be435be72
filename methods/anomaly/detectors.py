"""Every detector of `docket/tabular_anomaly` behind one call: fit on normal rows, score others.

`dispat` and `anollm` are the language-model detectors of `dispat.py`; `iforest`, `ecod`,
`copod`, `lof`, `knn`, `deepsvdd` are PyOD's; `random` is the chance reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from .baselines import PYOD_DETECTORS, pyod_scores, random_scores
from .dispat import DiSPaT, LMConfig, SelfPlayConfig, TableLM
from .serialize import Column, Value

Row = Mapping[str, Value]
DETECTORS: tuple[str, ...] = ("dispat", "anollm", *PYOD_DETECTORS, "random")


def detect(
    name: str,
    columns: Sequence[Column],
    train: Sequence[Row],
    test: Sequence[Row],
    seed: int,
    lm: LMConfig | None = None,
    play: SelfPlayConfig | None = None,
) -> np.ndarray:
    """Anomaly scores of `test` (higher = more anomalous) by detector `name`."""
    if name == "random":
        return random_scores(test, seed)
    if name in PYOD_DETECTORS:
        return pyod_scores(name, columns, train, test, seed)
    config = replace(lm or LMConfig(), seed=seed)
    if name == "anollm":
        model: TableLM = TableLM(columns, config)
    elif name == "dispat":
        model = DiSPaT(columns, config, play)
    else:
        raise ValueError(f"unknown detector {name!r}; accepted: {', '.join(DETECTORS)}")
    model.fit(train)
    return model.score(test)
