"""`docket/rl_arith`'s models table, rendered from the committed `results/models.json`.

The rows are `inspect eval docket/rl_arith` runs (scripted references, and the RL runner's
checkpoints from `python methods/rl/scripts/compare.py`); their scores are recorded in the
results file, and this script writes the README table between `<!-- models:start -->` and
`<!-- models:end -->`.

    python benchmarks/rl_arith/scripts/models_table.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docket.core.results_tables import mean_stderr, replace_table

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "models.json"
README = HERE / "README.md"
TABLE = "models"


def render_table(results: dict[str, Any]) -> str:
    """The README table: each model's mean reward on the shipped split.

    Args:
        results: The parsed results file (`rows`: model, reward, stderr or null, n).

    Returns:
        The Markdown table.
    """
    lines = ["| model / policy | reward | samples |", "|---|---|---|"]
    lines += [
        f"| {r['model']} | {mean_stderr(r['reward'], r['stderr'])} | {r['n']} |"
        for r in results["rows"]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    replace_table(README, TABLE, render_table(json.loads(RESULTS.read_text(encoding="utf-8"))))
