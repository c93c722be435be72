"""`docket/spatial_relations`' AffIn-Space table, rendered from the committed `results/affin.json`.

The runs are `train_affin.py` (both variants per seed) and the README's `inspect eval` lines;
their scores are recorded in the results file, and this script writes the README table between
`<!-- affin:start -->` and `<!-- affin:end -->`.

    python benchmarks/spatial_relations/scripts/affin_table.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docket.core.results_tables import replace_table

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "affin.json"
README = HERE / "README.md"
TABLE = "affin"


def _each(values: list[float] | None) -> str:
    """The per-seed values, comma-separated (— when the variant has no such output)."""
    return "—" if values is None else ", ".join(f"{v:g}" for v in values)


def render_table(results: dict[str, Any]) -> str:
    """The README table: one row per variant and training length, one value per seed.

    Args:
        results: The parsed results file (`rows`: variant, steps, scenes, seeds, and per seed the
            harness accuracy, answer loss, pose and reconstruction MSE or null).

    Returns:
        The Markdown table.
    """
    lines = [
        "| variant | steps / scenes | seeds | accuracy (harness) | answer loss | pose MSE | "
        "reconstruction MSE |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        accuracy = ", ".join(f"{a:.3f}" for a in row["accuracy"])
        lines.append(
            f"| {row['variant']} | {row['steps']} / {row['scenes']} | {_each(row['seeds'])} | "
            f"{accuracy} | {_each(row['answer_loss'])} | {_each(row['pose_mse'])} "
            f"| {_each(row['reconstruction_mse'])} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    replace_table(README, TABLE, render_table(json.loads(RESULTS.read_text(encoding="utf-8"))))
