"""Write ANCHOR's README tables from the committed results files (never typed by hand).

`results/meaning.json` (`meaning_rates.py`), `results/attackers.json` (`attack_table.py`) and
`results/scripted.json` (`inspect eval` runs of the scripted references, its `source` says which)
become the tables between the README's `<!-- NAME:start -->` and `<!-- NAME:end -->` markers
(`docket.core.results_tables`). `--check` exits 1 when the README differs from what the files
give.

    python benchmarks/anchor/scripts/results_table.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from docket.core.results_tables import block, markers, table_block

HERE = Path(__file__).resolve().parent.parent
README = HERE / "README.md"
RESULTS = HERE / "results"


def _f(value: float) -> str:
    return f"{value:.3f}"


def meaning_table(results: dict[str, dict[str, float]]) -> str:
    """The targets' table: n, judged complied, task completed, attempted, unrequested."""
    lines = [
        "| target (`docket/scripted`), one direct turn | scenarios | judged complied | "
        "task completed | attempted | unrequested actions |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in results.items():
        lines.append(
            f"| {name} | {int(row['n'])} | {_f(row['complied'])} | {_f(row['task_completed'])} "
            f"| {_f(row['attempted'])} | {_f(row['unrequested_actions'])} |"
        )
    return "\n".join(lines)


def attacker_table(results: dict[str, Any]) -> str:
    """The attackers' table: judged refusal among delivering replies, per judge."""
    lines = [
        "| attacker (trained on the train half) | judge | judged refusal while delivering "
        "(test half) | chance row | oracle | n |",
        "|---|---|---|---|---|---|",
    ]
    for judge, rows in results.items():
        for name, row in rows["gamers"].items():
            lines.append(
                f"| {name} | {judge} | {_f(row['refusal'])} | {_f(rows['chance_row'])} | "
                f"{_f(row['oracle'])} | {row['n']} |"
            )
    translator = results["action judge"]["translator"]
    lines.append(
        f"| keyword translator (task completion, not gated) | - | completed "
        f"{_f(translator['task_completed'])}, rate {_f(translator['completion_rate'])} | - | "
        f"1.000 (`anchor_target`) | {translator['n']} |"
    )
    return "\n".join(lines)


def _excess(counts: list[float]) -> str:
    """The four excess means, or "none" when all are zero."""
    return " / ".join(f"{x:.2f}" for x in counts) if any(counts) else "none"


def scripted_table(results: dict[str, Any]) -> str:
    """The scripted references' table: direct refusal, compliance@T, R(t), turns, completion,
    harm and the four excess means (unrequested / automation / infrastructure / artifacts)."""
    lines = [
        "| target (`docket/scripted`) | task, T | direct refusal | compliance@T any / final "
        "branch | R(1..T) | turns to compliance any / final | task completed | harm | excess |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        harm = f"{row['harm']:.1f}"
        if row["harm_stderr"] is not None:
            harm += f" ± {row['harm_stderr']:.1f}"
        lines.append(
            f"| {row['target']} | {row['task']}, {row['horizon']} | {row['direct_refusal']:.2f} | "
            f"{row['compliance_any']:.2f} / {row['compliance_final']:.2f} | "
            f"{', '.join(f'{r:g}' for r in row['R'])} | "
            f"{row['turns_any']:.1f} / {row['turns_final']:.1f} | {row['task_completed']:.2f} | "
            f"{harm} | {_excess(row['excess'])} |"
        )
    return "\n".join(lines)


def render(readme: str, results: Path = RESULTS) -> str:
    """`readme` with every marked table rewritten from the results files."""
    tables = {
        "meaning": meaning_table(json.loads((results / "meaning.json").read_text("utf-8"))),
        "attackers": attacker_table(json.loads((results / "attackers.json").read_text("utf-8"))),
        "scripted": scripted_table(json.loads((results / "scripted.json").read_text("utf-8"))),
    }
    for name, table in tables.items():
        try:
            table_block(readme, name)  # both markers are there
        except ValueError as error:
            raise SystemExit(f"{README}: {error}") from None
        start, end = markers(name)
        head, rest = readme.split(start, 1)
        readme = head + block(name, table) + rest.split(end, 1)[1]
    return readme


def main() -> None:
    """Rewrite the README's tables (or check them)."""
    parser = argparse.ArgumentParser(description="ANCHOR README tables from results files")
    parser.add_argument("--check", action="store_true")
    ns = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    fresh = render(text)
    if ns.check:
        sys.exit(0 if fresh == text else 1)
    README.write_text(fresh, encoding="utf-8")


if __name__ == "__main__":
    main()
