"""`docket/tabular_anomaly`'s chance row: the strongest blind attacker (`attacks.py`), measured.

Every attacker's AUROC on the task's shipped samples (4 data sets × seeds 0-2, the task's
split and scorer). Writes `benchmarks/tabular_anomaly/results/chance.json` and the README table
between `<!-- chance:start -->` and `<!-- chance:end -->`; `--render` only re-renders the README
from the committed JSON.

    python benchmarks/tabular_anomaly/scripts/chance.py [--render]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docket.benchmarks.tabular_anomaly.attacks import fit_booster, surface_scores, training_splits
from docket.benchmarks.tabular_anomaly.dataset import DATASETS, LOADERS, split
from docket.benchmarks.tabular_anomaly.scorer import ranking_metrics
from docket.core.results_tables import table_script
from docket.methods.anomaly.detectors import detect

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance"
SEEDS = (0, 1, 2)
LABELS = {
    "random": "random scores (`-T detector=random`)",
    "surface": "max robust z-score + unseen categories, fitted on nothing (`-T detector=surface`)",
    "booster": "gradient boosting over 5 column-blind row statistics, fitted on the labelled "
    "fresh tables of a generated split (the learned attacker, `attacks.fit_booster`)",
}


def measure() -> dict[str, Any]:
    """Every attacker's AUROC per data set (mean over the seeds) and overall."""
    booster = fit_booster(training_splits())
    rows: dict[str, dict[str, float]] = {name: {} for name in LABELS}
    for dataset in DATASETS:
        table = LOADERS[dataset]()
        found: dict[str, list[float]] = {name: [] for name in LABELS}
        for seed in SEEDS:
            part = split(table, seed)
            scores: dict[str, Any] = {
                "random": detect("random", table.columns, part.train, part.test, seed),
                "surface": surface_scores(table.columns, part.train, part.test),
                "booster": booster(table.columns, part.train, part.test),
            }
            for name, values in scores.items():
                found[name].append(
                    ranking_metrics(part.labels, [float(v) for v in values])["auroc"]
                )
        for name, values in found.items():
            rows[name][dataset] = round(sum(values) / len(values), 6)
    return {
        "datasets": list(DATASETS),
        "attackers": [
            {"name": n, "auroc": r, "mean": round(sum(r.values()) / len(r), 6)}
            for n, r in rows.items()
        ],
    }


def render_table(results: dict[str, Any]) -> str:
    """The README table: every blind attacker, the chance row (best mean AUROC)."""
    datasets = results["datasets"]
    rows = results["attackers"]
    best = max(rows, key=lambda r: r["mean"])
    lines = [
        "| blind attacker (AUROC, mean over seeds 0-2) | " + " | ".join(datasets) + " | mean |",
        "|---|" + "---|" * (len(datasets) + 1),
    ]
    for r in [*rows, {**best, "chance": True}]:
        cells = " | ".join(f"{r['auroc'][d]:.3f}" for d in datasets)
        if r.get("chance"):
            label = f"**chance row** (the best of the above: {r['name']})"
            lines.append(f"| {label} | {cells} | **{r['mean']:.3f}** |")
        else:
            lines.append(f"| {LABELS[r['name']]} | {cells} | {r['mean']:.3f} |")
    lines.append(
        "| ceiling: a detector that ranks every anomaly first | "
        + " | ".join("1.000" for _ in datasets)
        + " | 1.000 |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
