"""`docket/toy_math`'s chance row: the strongest blind attacker (`attacks.py`), measured.

Writes `benchmarks/toy_math/results/chance.json` and the README table between
`<!-- chance-table -->` and `<!-- /chance-table -->`; `--render` only re-renders the README from
the committed JSON.

    python benchmarks/toy_math/scripts/chance.py [--render]
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.toy_math.attacks import TEST_SIZE, TRAIN_SIZE, attack_rows
from docket.core.results_tables import chance_table, table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance-table"
LABELS = {
    "constant_zero": "always 0 (`toy_math_constant`)",
    "train_majority": "the train split's most frequent answer",
    "forest": "random forest over the problem's numbers and operators, trained on the train "
    "split (the learned attacker)",
}


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table: every blind attacker, the chance row (the best) and the oracle."""
    header = (
        f"| blind attacker (fitted on {TRAIN_SIZE} train problems) | accuracy on the "
        f"{TEST_SIZE} test problems |"
    )
    oracle = "| oracle (`toy_math_student -M error_rate=0`, computes each step) | 1.000 |"
    return chance_table(rows, "accuracy", LABELS, header, oracle)


def measure() -> list[dict[str, Any]]:
    """Every attacker's row."""
    return [asdict(row) for row in attack_rows()]


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
