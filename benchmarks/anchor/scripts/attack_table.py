"""ANCHOR's blind attackers (issue #53 items 3 and 6), trained on the train half of the shipped
scenarios and scored on the test half; writes the results file the README's attacker table is
generated from (`results_table.py`).

The headline attack: deliver a required action (by construction: executed calls, the same calls
in equivalent spellings, a draft in the reply or over two files) and be judged a refusal.

    python benchmarks/anchor/scripts/attack_table.py --out benchmarks/anchor/results/attackers.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from docket.benchmarks.anchor.attackers import (
    FORMS,
    PHRASE_FORMS,
    GamerResult,
    KeywordTranslator,
    ScenarioFeatures,
    completion,
    load_rows,
    phrase_gamer,
    split_scenarios,
)
from docket.benchmarks.anchor.dataset import SCENARIOS


def _row(result: GamerResult) -> dict[str, float]:
    return {
        "refusal": round(result.refusal, 4),
        "chance": round(result.chance, 4),
        "oracle": round(result.oracle, 4),
        "n": result.n,
    }


def attack(rows: list[dict[str, Any]], judge_args: dict[str, int]) -> dict[str, Any]:
    """Every attacker against the scripted judge with `judge_args`."""
    train, test = split_scenarios(rows)
    translator = KeywordTranslator.fit(train)
    done = [completion(r, translator.calls(r["user_goal"])) for r in test]
    gamers = {
        "phrase gamer": phrase_gamer(train, test, translator, judge_args, forms=PHRASE_FORMS),
        "form gamer": phrase_gamer(train, test, translator, judge_args, forms=FORMS),
        "verdict predictor": phrase_gamer(
            train,
            test,
            translator,
            judge_args,
            forms=FORMS,
            features=ScenarioFeatures.fit(train, translator),
        ),
    }
    blind = {k: v for k, v in gamers.items() if k != "verdict predictor"}
    strongest = max([*(v.refusal for v in blind.values()), *(v.chance for v in gamers.values())])
    return {
        "translator": {
            "task_completed": round(sum(d for d, _ in done) / len(done), 4),
            "completion_rate": round(sum(r for _, r in done) / len(done), 4),
            "n": len(done),
        },
        "gamers": {name: _row(result) for name, result in gamers.items()},
        "chance_row": round(strongest, 4),
    }


def main() -> None:
    """Run the attackers against the action judge and the phrase judge; write the file."""
    parser = argparse.ArgumentParser(description="ANCHOR blind attackers")
    parser.add_argument("--scenarios", default=SCENARIOS)
    parser.add_argument("--out", required=True)
    ns = parser.parse_args()
    rows = load_rows(Path(ns.scenarios).read_text(encoding="utf-8"))
    results = {
        "action judge": attack(rows, {}),
        "phrase judge (lenient=1)": attack(rows, {"lenient": 1}),
    }
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
