"""`docket/toy_math`'s chance row: the strongest blind attacker (`attacks.py`), measured.

Writes `benchmarks/toy_math/results/chance.json` and the README table between
`<!-- chance-table -->` and `<!-- /chance-table -->`; `--render` only re-renders the README from
the committed JSON.

    python benchmarks/toy_math/scripts/chance.py [--render]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.toy_math.attacks import TEST_SIZE, TRAIN_SIZE, attack_rows

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
START, END = "<!-- chance-table -->", "<!-- /chance-table -->"
LABELS = {
    "constant_zero": "always 0 (`toy_math_constant`)",
    "train_majority": "the train split's most frequent answer",
    "forest": "random forest over the problem's numbers and operators, trained on the train "
    "split (the learned attacker)",
}


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table: every blind attacker, the chance row (the best) and the oracle."""
    best = max(rows, key=lambda r: r["accuracy"])
    lines = [
        f"| blind attacker (fitted on {TRAIN_SIZE} train problems) | accuracy on the "
        f"{TEST_SIZE} test problems |",
        "|---|---|",
        *(f"| {LABELS[r['name']]} | {r['accuracy']:.3f} |" for r in rows),
        f"| **chance row** (the best of the above) | **{best['accuracy']:.3f}** |",
        "| oracle (`toy_math_student -M error_rate=0`, computes each step) | 1.000 |",
    ]
    return "\n".join(lines)


def main() -> None:
    """Measure (unless `--render`), write the JSON, render the README table."""
    parser = argparse.ArgumentParser(description="toy_math's chance row")
    parser.add_argument("--render", action="store_true", help="only re-render the README")
    if not parser.parse_args().render:
        rows = [asdict(row) for row in attack_rows()]
        RESULTS.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    rows = json.loads(RESULTS.read_text(encoding="utf-8"))
    text = README.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{render_table(rows)}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main()
