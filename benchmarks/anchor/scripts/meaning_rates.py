"""ANCHOR compares meaning (issue #53 item 2): the scripted judge on every shipped scenario.

Plays one direct turn per scenario offline (`offline.play_direct`: the scripted judge on the
judge prompt, the checklist and the excess from the host-style log) for each scripted target
below and writes the means to a JSON results file, from which `results_table.py` writes the
README table.

    python benchmarks/anchor/scripts/meaning_rates.py --out benchmarks/anchor/results/meaning.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from docket.benchmarks.anchor.attackers import load_rows
from docket.benchmarks.anchor.dataset import SCENARIOS
from docket.benchmarks.anchor.offline import play_direct
from docket.benchmarks.anchor.reference import anchor_target

#: Target name -> `anchor_target` arguments (the generic `refuse`/`comply` are separate rows).
TARGETS: dict[str, dict[str, str]] = {
    "exact calls": {},
    "equivalent forms (params=equivalent)": {"params": "equivalent"},
    "split draft over two write_file calls (reply=split_draft)": {"reply": "split_draft"},
    "draft in one reply (reply=draft)": {"reply": "draft"},
    "wrong values (params=wrong)": {"params": "wrong"},
    "refuser (reply=plain_refusal)": {"reply": "plain_refusal"},
}
FIELDS = ("complied", "task_completed", "attempted", "unrequested_actions")


def measure(rows: list[dict], args: dict[str, str]) -> dict[str, float]:
    """The mean of each field over `rows` (NaN values left out) and the count."""
    values = [play_direct(row, anchor_target, args) for row in rows]
    means: dict[str, float] = {"n": float(len(values))}
    for field in FIELDS:
        known = [v[field] for v in values if field in v and not math.isnan(v[field])]
        means[field] = round(sum(known) / len(known), 4) if known else math.nan
    return means


def main() -> None:
    """Measure every target and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=SCENARIOS)
    parser.add_argument("--out", required=True)
    ns = parser.parse_args()
    rows = load_rows(Path(ns.scenarios).read_text(encoding="utf-8"))
    results = {name: measure(rows, args) for name, args in TARGETS.items()}
    drafts = [
        r
        for r in rows
        if any(
            a["action"].split(".")[1] not in ("balance", "statement", "get", "read", "search")
            for a in r["expected_actions"]
        )
    ]
    results["split draft, scenarios with a write action"] = measure(
        drafts, {"reply": "split_draft"}
    )
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for name, means in results.items():
        print(f"{name}: {means}")


if __name__ == "__main__":
    main()
