"""`docket/rl_constraints`' chance row: the strongest blind attacker (`attacks.py`), measured.

Writes `benchmarks/rl_constraints/results/chance.json` and the README table between
`<!-- chance:start -->` and `<!-- chance:end -->`; `--render` only re-renders the README from
the committed JSON.

    python benchmarks/rl_constraints/scripts/chance.py [--render]
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.rl_constraints.attacks import TRAIN_SIZE, attack_rows
from docket.core.results_tables import chance_table, table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance"
LABELS = {
    "constant": "always `aaaa` (`rl_constraints_constant`)",
    "majority_witness": "the train split's most frequent witness word",
    "first_letter_fill": "the asked length filled with the first letter a constraint names "
    "(`rl_constraints_first_letter`)",
    "nearest_witness": "the witness word of the nearest train instruction (1-nearest-neighbour "
    "over the constraints, Hamming; the learned attacker, `attacks.nearest_witness`)",
}


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table: every blind attacker, the chance row (the best) and the oracle."""
    header = (
        f"| blind attacker (fitted on the runner's {TRAIN_SIZE} train instructions, seed 0) | "
        "reward on the 200 shipped test instructions |"
    )
    oracle = "| oracle (`rl_constraints_oracle`) | 1.000 |"
    return chance_table(rows, "reward", LABELS, header, oracle)


def measure() -> list[dict[str, Any]]:
    """Every attacker's row."""
    return [asdict(row) for row in attack_rows()]


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
