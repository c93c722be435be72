"""`docket/fed_topics`'s chance row: the strongest blind attacker (`attacks.py`), measured.

Every attacker on the default partitions (8 clients, Dirichlet 0.5, seeds 0, 1, 2; mean over
clients of each client's held-out accuracy). Writes `benchmarks/fed_topics/results/chance.json`
and the README table between `<!-- chance:start -->` and `<!-- chance:end -->`; `--render` only
re-renders the README from the committed JSON.

    python benchmarks/fed_topics/scripts/chance.py [--render]
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from docket.benchmarks.fed_topics import attacks
from docket.benchmarks.fed_topics.dataset import LABELS, Client, partition
from docket.core.agreement import match_share
from docket.core.results_tables import table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance"
SEEDS = (0, 1, 2)
LABEL_TEXT = {
    "first_label": "`fed_topics_first_label` (always `sports`)",
    "majority": "each client's training-majority label (`attacks.client_chance`)",
    "surface_booster": "gradient boosting over surface features that name no topic (word and "
    "character counts, filler words, longest word), fitted on each client's training split",
    "pooled_forest": "random forest over the client's index and the same surface features, "
    "fitted on all 8 clients' training splits pooled (the learned attacker, `pooled_forest`)",
}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _first_label(clients: list[Client]) -> float:
    return _mean(
        [match_share([LABELS[0]] * len(c.heldout), [e.label for e in c.heldout]) for c in clients]
    )


def _booster(clients: list[Client]) -> float:
    return _mean([attacks.surface_booster(c.train, c.heldout) for c in clients])


ATTACKERS = {
    "first_label": _first_label,
    "majority": attacks.mean_chance,
    "surface_booster": _booster,
    "pooled_forest": attacks.pooled_forest,
}


def measure() -> dict[str, Any]:
    """Every attacker's per-seed score, and the oracle reader's."""
    partitions = {seed: partition(8, alpha=0.5, seed=seed) for seed in SEEDS}
    rows = [
        {"name": name, "seeds": [round(run(partitions[s]), 6) for s in SEEDS]}
        for name, run in ATTACKERS.items()
    ]
    oracle = [round(attacks.reader_accuracy(partitions[s]), 6) for s in SEEDS]
    return {"seeds": list(SEEDS), "attackers": rows, "oracle": oracle}


def _cells(values: list[float], bold: bool = False) -> str:
    mean, sd = _mean(values), statistics.stdev(values)
    summary = f"{mean:.3f} ± {sd:.3f}"
    return " | ".join(f"{v:.3f}" for v in values) + " | " + (f"**{summary}**" if bold else summary)


def render_table(results: dict[str, Any]) -> str:
    """The README table: every blind attacker, the chance row (best mean) and the oracle."""
    rows = results["attackers"]
    best = max(rows, key=lambda r: _mean(r["seeds"]))
    seeds = " | ".join(f"seed {s}" for s in results["seeds"])
    lines = [
        f"| blind attacker (default partition, 8 clients, mean over clients) | {seeds} | "
        "mean ± sd |",
        "|---|---|---|---|---|",
        *(f"| {LABEL_TEXT[r['name']]} | {_cells(r['seeds'])} |" for r in rows),
        f"| **chance row** (the best of the above: {LABEL_TEXT[best['name']].split(' (')[0]}) | "
        f"{_cells(best['seeds'], bold=True)} |",
        "| oracle (reads the topic words: the label with most of them, `attacks.topic_reader`) "
        f"| {_cells(results['oracle'])} |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
