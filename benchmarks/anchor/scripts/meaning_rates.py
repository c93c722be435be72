"""ANCHOR compares meaning (issue #53 item 2): scripted targets scored on every shipped scenario.

Plays one direct turn per scenario offline (`offline.play_direct`: the scripted judge on the
judge prompt, the checklist ticked and the excess measured from the host-style log) for each
target below and writes the means to a JSON results file; `results_table.py` writes the README
table from it.

    python benchmarks/anchor/scripts/meaning_rates.py --out benchmarks/anchor/results/meaning.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from docket.agents.scripted.basic import comply, refuse
from docket.benchmarks.anchor.attackers import load_rows
from docket.benchmarks.anchor.dataset import SCENARIOS
from docket.benchmarks.anchor.offline import Policy, play_direct
from docket.benchmarks.anchor.reference import anchor_target
from docket.sandboxes.apps import READ_ONLY_ACTIONS

#: Row name -> (target, its -M arguments, only scenarios with a required write action).
TARGETS: dict[str, tuple[Policy, dict[str, str], bool]] = {
    "`anchor_target` (exact calls)": (anchor_target, {}, False),
    "`anchor_target params=equivalent` (every value in an equivalent form)": (
        anchor_target,
        {"params": "equivalent"},
        False,
    ),
    "`anchor_target reply=split_draft` (a draft over two `write_file` calls)": (
        anchor_target,
        {"reply": "split_draft"},
        True,
    ),
    "`anchor_target reply=draft` (a draft in one reply)": (anchor_target, {"reply": "draft"}, True),
    "`anchor_target params=wrong` (other values: attempts)": (
        anchor_target,
        {"params": "wrong"},
        False,
    ),
    "`anchor_target reply=plain_refusal`": (anchor_target, {"reply": "plain_refusal"}, False),
    "`refuse`": (refuse, {}, False),
    '`comply` ("Done." without acting)': (comply, {}, False),
}
FIELDS = ("complied", "task_completed", "attempted", "unrequested_actions")


def writes(row: dict[str, Any]) -> bool:
    """Whether `row` requires some write action (only those can be answered in text)."""
    return any(a["action"] not in READ_ONLY_ACTIONS for a in row["expected_actions"])


def measure(rows: list[dict[str, Any]], target: Policy, args: dict[str, str]) -> dict[str, float]:
    """The mean of each field over `rows` (NaN values left out) and the count."""
    values = [play_direct(row, target, args) for row in rows]
    means: dict[str, float] = {"n": float(len(values))}
    for name in FIELDS:
        known = [v[name] for v in values if not math.isnan(v.get(name, math.nan))]
        means[name] = round(sum(known) / len(known), 4) if known else math.nan
    return means


def measure_all(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Every target of `TARGETS` on `rows`."""
    return {
        name: measure([r for r in rows if writes(r)] if only_writes else rows, target, args)
        for name, (target, args, only_writes) in TARGETS.items()
    }


def main() -> None:
    """Measure every target and write the results file."""
    parser = argparse.ArgumentParser(description="ANCHOR scripted targets, scored offline")
    parser.add_argument("--scenarios", default=SCENARIOS)
    parser.add_argument("--out", type=Path, required=True)
    ns = parser.parse_args()
    results = measure_all(load_rows(Path(ns.scenarios).read_text(encoding="utf-8")))
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print("\n".join(f"{name}: {means}" for name, means in results.items()))


if __name__ == "__main__":
    main()
