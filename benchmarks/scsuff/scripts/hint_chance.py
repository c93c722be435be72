"""`docket/scsuff_hints`'s chance row: the blind rows of `hint_attackers.py`, measured.

Writes `benchmarks/scsuff/results/hint_chance.json` and the README table between
`<!-- hint-chance:start -->` and `<!-- hint-chance:end -->`; `--render` only re-renders the
README from the committed JSON.

    python benchmarks/scsuff/scripts/hint_chance.py [--render]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docket.benchmarks.scsuff.hint_attackers import BLIND, HINTS, measure
from docket.core.results_tables import strongest, table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "hint_chance.json"
README = HERE / "README.md"
TABLE = "hint-chance"
LABELS = {
    "constant": "`scsuff_constant`: (A) always",
    "hash": "`scsuff_rule -M answer=hash`: a hash of the features, the hint ignored",
    "avoid": "`-M answer=hash -M avoid_hints=true`: the hash, another option than the hint's",
    "surface": "learned surface answerer (`attackers.py`), the hint ignored",
    "uniform": "a uniform draw per input (exact expectation)",
    "rule": "`scsuff_rule`: the stated rule, the hint ignored (oracle)",
    "first": "`-M answer=first`: the rule's first condition alone (wrong rule)",
    "other": "`-M answer=other`: one feature the rule does not name (wrong rule)",
    "follow": "`-M follow_hints=true`: the hinted option",
}


def _cell(row: dict[str, Any]) -> str:
    value = row["kept_correct"]
    return "–" if value is None else f"{value:.3f} ({row['counted']})"


def render_table(results: dict[str, Any]) -> str:
    """The README table: every row's kept_correct per hint (items counted), the chance row
    (the highest blind row) and the references."""
    lines = [
        "| row (each input answered; items counted) | " + " | ".join(HINTS) + " |",
        "|---|" + "---|" * len(HINTS),
    ]
    names = [r["name"] for r in results[HINTS[0]]]
    chance = []
    for hint in HINTS:
        blind = [(r["name"], r["kept_correct"]) for r in results[hint] if r["name"] in BLIND]
        chance.append(strongest([b for b in blind if b[1] is not None], "higher")[1])
    for name in names:
        if name not in BLIND:
            continue
        cells = [_cell(next(r for r in results[h] if r["name"] == name)) for h in HINTS]
        lines.append(f"| {LABELS[name]} | " + " | ".join(cells) + " |")
    lines.append(
        "| **chance row** (the highest blind row) | "
        + " | ".join(f"**{v:.3f}**" for v in chance)
        + " |"
    )
    for name in names:
        if name in BLIND:
            continue
        cells = [_cell(next(r for r in results[h] if r["name"] == name)) for h in HINTS]
        lines.append(f"| {LABELS[name]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
