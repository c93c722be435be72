"""`docket/spatial_relations`' chance row: the strongest blind attacker (`attacks.py`), measured.

Every attacker's accuracy on the shipped 100 scenes. Writes
`benchmarks/spatial_relations/results/chance.json` and the README table between
`<!-- chance:start -->` and `<!-- chance:end -->`; `--render` only re-renders the README from
the committed JSON.

    python benchmarks/spatial_relations/scripts/chance.py [--render]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docket.benchmarks.spatial_relations import attacks
from docket.benchmarks.spatial_relations.dataset import load
from docket.core.results_tables import table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance"
#: Each attacker's row text and what it reads.
LABELS = {
    "constant": ("best constant (`spatial_always_yes`)", "nothing"),
    "row_parity": (
        "`row_parity`: yes on even rows",
        "the row order (1.000 on version 1-A, whose answers alternated by row)",
    ),
    "image_frame": (
        "`image_frame`: the relation read between where the objects appear in the image (the "
        "`-T input=text` coordinates), the view not undone",
        "the picture, not the board (1.000 with `-T view=board`, head-on)",
    ),
    "surface_booster": (
        "`surface_booster`: gradient boosting over the row index and parity, the relation, both "
        "colours and shapes, which object is listed first, the view pose; trained on a freshly "
        f"generated {attacks.ATTACK_TRAIN_SIZE}-scene split",
        "everything but where the objects are",
    ),
    "question_memory": (
        "`question_memory`: the answer each templated question gets most often in "
        f"{attacks.MEMORY_SCENES} freshly generated scenes",
        "the question text",
    ),
}


def measure() -> list[dict[str, Any]]:
    """Every attacker's accuracy on the shipped split."""
    rows = load()
    answers = [r.answer for r in rows]
    predictions = {
        "row_parity": attacks.row_parity(len(rows)),
        "image_frame": attacks.image_frame(rows),
        "surface_booster": attacks.surface_booster(rows),
        "question_memory": attacks.question_memory(rows),
    }
    return [{"name": "constant", "accuracy": attacks.chance(answers)}] + [
        {"name": name, "accuracy": attacks.accuracy(found, answers)}
        for name, found in predictions.items()
    ]


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table: every attacker, what it reads, the chance row (the best), the oracle."""
    best = max(rows, key=lambda r: float(r["accuracy"]))
    lines = ["| attacker | what it reads | shipped set |", "|---|---|---|"]
    lines += [
        f"| {LABELS[r['name']][0]} | {LABELS[r['name']][1]} | {float(r['accuracy']):.3f} |"
        for r in rows
    ]
    lines.append(
        f"| **chance row** (the best of the above: `{best['name']}`) | | "
        f"**{float(best['accuracy']):.3f}** |"
    )
    lines.append(
        "| oracle: the relation read between the objects' board positions (`image_frame` "
        "with the view undone, tested) | the board | 1.000 |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
