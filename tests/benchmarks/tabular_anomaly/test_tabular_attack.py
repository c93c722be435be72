"""docket/tabular_anomaly: the surface attacker (max robust z-score + unseen categories) is the
chance row: exact on a hand case, on the shipped splits, and through the task."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.tabular_anomaly.attacks import robust_z, surface_scores
from docket.benchmarks.tabular_anomaly.dataset import LOADERS, split
from docket.benchmarks.tabular_anomaly.scorer import ranking_metrics
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly
from docket.methods.anomaly.serialize import Column

COLUMNS = [Column("x", "numeric"), Column("colour", "categorical")]
TRAIN: list[dict[str, float | str]] = [
    {"x": 1.0, "colour": "red"},
    {"x": 2.0, "colour": "red"},
    {"x": 3.0, "colour": "blue"},
]


def test_robust_z_and_unseen_categories_on_a_hand_case() -> None:
    # median 2, MAD 1, scale 1.4826
    assert robust_z([1.0, 2.0, 3.0], [2.0, 5.0]).tolist() == pytest.approx([0.0, 3 / 1.4826])
    assert robust_z([4.0, 4.0], [4.0, 5.0]).tolist() == pytest.approx([0.0, 1e9])  # MAD 0
    test: list[dict[str, float | str]] = [
        {"x": 2.0, "colour": "green"},
        {"x": 5.0, "colour": "red"},
        {"x": 2.0, "colour": "red"},
    ]
    assert surface_scores(COLUMNS, TRAIN, test, numeric=False).tolist() == [1.0, 0.0, 0.0]
    scores = surface_scores(COLUMNS, TRAIN, test).tolist()
    assert scores == pytest.approx([1.0, 3 / 1.4826, 0.0])


def _auroc(name: str, scorer: str) -> list[float]:
    table = LOADERS[name]()
    out = []
    for seed in range(3):
        part = split(table, seed)
        numeric = scorer == "surface"
        scores = surface_scores(table.columns, part.train, part.test, numeric=numeric)
        out.append(round(ranking_metrics(part.labels, list(scores))["auroc"], 4))
    return out


def test_the_chance_row_on_the_shipped_splits() -> None:
    assert _auroc("pyod_categorical", "unseen") == [1.0, 1.0, 1.0]  # the count alone
    assert _auroc("shop", "surface") == [0.7542, 0.7918, 0.659]
    assert _auroc("wine", "surface") == [0.8879, 0.8538, 0.9187]


def test_the_task_runs_the_surface_detector(tmp_path: Path) -> None:
    [log] = inspect_eval(
        tabular_anomaly(detector="surface", datasets="breast_cancer,pyod_categorical", seeds=3),
        model=get_model("docket/scripted", policy="refuse"),
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success" and log.results is not None
    auroc = next(s for s in log.results.scores if s.name == "auroc")
    breast = [0.9564, 0.9101, 0.9634]
    assert auroc.metrics["mean"].value == pytest.approx((sum(breast) + 3) / 6, abs=1e-4)
