"""`docket/rl_arith`'s chance row: the strongest blind attacker (`attacks.py`), measured.

Writes `benchmarks/rl_arith/results/chance.json` and the README table between
`<!-- chance-table -->` and `<!-- /chance-table -->`; `--render` only re-renders the README from
the committed JSON.

    python benchmarks/rl_arith/scripts/chance.py [--render]
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.rl_arith.attacks import TRAIN_SIZE, attack_rows
from docket.core.results_tables import chance_table, table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance-table"
LABELS = {
    "first_operand": "repeats the first number (`rl_arith_first_operand`)",
    "offset_prior": "the first number plus the operator's most frequent train offset, never "
    "reading the second number (the learned attacker)",
}


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table: every blind attacker, the chance row (the best) and the oracle."""
    header = (
        f"| blind attacker (fitted on {TRAIN_SIZE} generated train problems) | reward on the "
        "200 shipped test problems |"
    )
    return chance_table(rows, "reward", LABELS, header, "| oracle (`rl_arith_oracle`) | 1.000 |")


def measure() -> list[dict[str, Any]]:
    """Every attacker's row."""
    return [asdict(row) for row in attack_rows()]


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
