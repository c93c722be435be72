"""`docket/erm_rag`'s chance row: the strongest blind attacker (`rag_attacks.py`), measured.

Writes `benchmarks/erm_retrieval/results/rag_chance.json` (the attackers and, as references,
`erm_reader` behind the oracle ranking and behind each method) and the README table between
`<!-- rag-chance:start -->` and `<!-- rag-chance:end -->`; `--render` only re-renders the
README from the committed JSON.

    python benchmarks/erm_retrieval/scripts/rag_chance.py [--render]
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.erm_retrieval.dataset import load_beir
from docket.benchmarks.erm_retrieval.rag_attacks import (
    FRESH_SEEDS,
    attack_rows,
    fresh_queries,
    reader_accuracy,
)
from docket.core.results_tables import chance_table, table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "rag_chance.json"
README = HERE / "README.md"
TABLE = "rag-chance"
#: The readers measured as references: the oracle ranking, the task's default and the static index.
READERS = ("oracle", "erm", "static")
LABELS = {
    "constant_1900": "always 1900 (`erm_reader -M mode=constant`)",
    "uniform_expected": "a uniformly drawn year of the generator's range (exact expectation)",
    "fresh_majority": "the most frequent answer of fresh corpora",
    "fresh_words": "logistic regression over the question's words and thesaurus terms, fitted on "
    "fresh corpora (the learned attacker)",
}
READER_LABELS = {
    "oracle": "`erm_reader` behind the judged documents (oracle)",
    "erm": "`erm_reader` behind ERM (the task's default)",
    "static": "`erm_reader` behind the static index",
}


def render_table(results: dict[str, Any]) -> str:
    """The README table: every blind attacker, the chance row (the best) and the readers."""
    seeds = ", ".join(str(s) for s in results["fresh_seeds"])
    header = (
        f"| blind attacker (never reads a passage; fresh corpora: seeds {seeds}, "
        f"{results['fitted']} questions) | accuracy, 240 shipped held-out questions |"
    )
    readers = "\n".join(
        f"| {READER_LABELS[r['name']]} | {r['accuracy']:.3f} |" for r in results["readers"]
    )
    return chance_table(results["attackers"], "accuracy", LABELS, header, readers)


def measure() -> dict[str, Any]:
    """Every attacker's row, the fitted questions' count and every reader's row."""
    data, fitted = load_beir(), fresh_queries()
    return {
        "attackers": [asdict(row) for row in attack_rows(data, fitted)],
        "fresh_seeds": list(FRESH_SEEDS),
        "fitted": len(fitted),
        "readers": [{"name": m, "accuracy": reader_accuracy(data, m)} for m in READERS],
    }


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
