"""`docket/toy_math_sar`'s chance row: the strongest blind student (`sar_attacks.py`), measured.

Writes `benchmarks/toy_math/results/sar_chance.json` and the README table between
`<!-- sar-chance-table:start -->` and `<!-- sar-chance-table:end -->`; `--render` only
re-renders the README from the committed JSON.

    python benchmarks/toy_math/scripts/sar_chance.py [--render]
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.toy_math.dataset import split_chains
from docket.benchmarks.toy_math.sar_attacks import SCORED, attack_rows, fit_chains, oracle_yield
from docket.core.results_tables import chance_table, table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "sar_chance.json"
README = HERE / "README.md"
TABLE = "sar-chance-table"
LABELS = {
    "constant": "`ANSWER: 0`, no step (`toy_math_constant`)",
    "step_majority": "each step's most frequent result at its position",
    "step_prior": "each step's result drawn from its position's frequencies (exact expectation)",
    "forest": "random forest per step over the problem's numbers and operators",
    "prefix_memory": "the result a public chain with the same start and steps so far records, "
    "else the forest's",
}


def render_table(results: dict[str, Any]) -> str:
    """The README table: every blind student, the chance row (the best) and the oracle."""
    header = (
        f"| blind student (fitted on {results['fitted']} public non-SAR chains) | rs_yield on "
        f"the {SCORED} default train problems |"
    )
    oracle = (
        "| oracle (`toy_math_student -M error_rate=0`, computes each step) | "
        f"{results['oracle']:.3f} |"
    )
    return chance_table(results["attackers"], "rs_yield", LABELS, header, oracle)


def measure() -> dict[str, Any]:
    """Every blind student's row, the fitted chains' count and the oracle's yield."""
    return {
        "attackers": [asdict(row) for row in attack_rows()],
        "fitted": len(fit_chains()),
        "oracle": oracle_yield(split_chains("train", SCORED)),
    }


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
