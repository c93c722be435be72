"""`docket/erm_retrieval`'s chance row: the strongest blind attacker (`attacks.py`), measured.

Writes `benchmarks/erm_retrieval/results/chance.json` and the README table between
`<!-- chance:start -->` and `<!-- chance:end -->`; `--render` only re-renders the README from
the committed JSON.

    python benchmarks/erm_retrieval/scripts/chance.py [--render]
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.erm_retrieval.attacks import attack_rows
from docket.core.results_tables import chance_table, table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance"
LABELS = {
    "random": "a seeded random ranking (`-T method=random`, seed 0: one draw)",
    "random_expected": "a uniformly random ranking, its exact expectation "
    "(`attacks.expected_random`)",
    "feedback_prior": "documents by their count of relevant feedback queries (one ranking for "
    "all queries)",
    "id_neighbours": "the query's id only, fitted on the feedback qrels: documents by distance to "
    "the interpolated rank of their id among the sorted ids (the learned attacker, "
    "`attacks.id_neighbours`)",
    "order_neighbours": "the query's row in queries.jsonl only, fitted on the feedback qrels: "
    "documents by distance to the interpolated row of corpus.jsonl (`attacks.order_neighbours`)",
}


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table: every blind attacker, the chance row (the best) and the oracle."""
    header = (
        "| blind attacker (never reads a query's words) | nDCG@10, 240 shipped held-out queries |"
    )
    oracle = "| oracle (the qrels' documents first) | 1.000 |"
    return chance_table(rows, "ndcg_10", LABELS, header, oracle)


def measure() -> list[dict[str, Any]]:
    """Every attacker's row."""
    return [asdict(row) for row in attack_rows()]


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
