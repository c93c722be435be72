"""AUROC and AUPRC of a detector's scores on one (data set, seed) test split (scikit-learn)."""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, grouped, mean, scorer, stderr
from inspect_ai.solver import TaskState

KEYS = ("auroc", "auprc")


def ranking_metrics(labels: list[int], scores: list[float]) -> dict[str, float]:
    """AUROC and average precision (AUPRC); NaN when one class is missing."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    if len(set(labels)) < 2:
        return {key: float("nan") for key in KEYS}
    return {
        "auroc": float(roc_auc_score(labels, scores)),
        "auprc": float(average_precision_score(labels, scores)),
    }


def by_kind(labels: list[int], scores: list[float], kinds: list[str]) -> dict[str, float]:
    """AUROC of each anomaly kind against all normal rows."""
    out = {}
    for kind in sorted({k for k, y in zip(kinds, labels, strict=True) if y == 1}):
        keep = [i for i, k in enumerate(kinds) if k in (kind, "normal")]
        out[kind] = ranking_metrics([labels[i] for i in keep], [scores[i] for i in keep])["auroc"]
    return out


def _metrics() -> dict[str, list[Any]]:
    return {key: [mean(), stderr(), grouped(mean(), "dataset", all=False)] for key in KEYS}


@scorer(metrics=_metrics())
def detection_scorer() -> Scorer:
    """AUROC / AUPRC of the scores the detector gave the test rows.

    Returns:
        A scorer with the values `auroc` and `auprc`.
    """

    async def score(state: TaskState, target: Target) -> Score:
        labels = list(state.store.get("labels"))
        scores = [float(s) for s in state.store.get("scores")]
        values = ranking_metrics(labels, scores)
        kinds = by_kind(labels, scores, list(state.store.get("kinds")))
        shown = ", ".join(f"{k} {v:.3f}" for k, v in kinds.items())
        return Score(
            value=values,
            explanation=(
                f"{sum(labels)} anomalies among {len(labels)} test rows; AUROC "
                f"{values['auroc']:.3f}, AUPRC {values['auprc']:.3f}; AUROC by kind: {shown}"
            ),
            metadata={"auroc_by_kind": kinds, "train_rows": state.store.get("train_rows")},
        )

    return score
