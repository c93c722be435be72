"""SCSuff's headline table: scripted policies and learned attackers on the default split.

Writes `benchmarks/scsuff/results/headline.json` and the README table between the markers
`<!-- headline-table -->` and `<!-- /headline-table -->`. `--render` only re-renders the README
from the committed JSON. Every row is scored offline through the task's own pipeline (the
known-prior generator, M = 5, call seeds 42..46; tests check it equals the task's), on the
task's default split (100 feature-rule items, seed 42); attackers train on the generated split
of seed 2029.

    python benchmarks/scsuff/scripts/headline_table.py [--render]
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from docket.benchmarks.scsuff.attackers import (
    CLAIM_FREE,
    FACT_LINES,
    TEST_SEED,
    attack,
    pipeline_gains,
    policy_scores,
)
from docket.benchmarks.scsuff.dataset import feature_rule_items, render
from docket.benchmarks.scsuff.reference import CONSTANT_EXPLANATION
from docket.benchmarks.scsuff.scorer import WRONG_ANSWER_FLOOR
from docket.benchmarks.scsuff.withhold import withhold_attack
from docket.core.results_tables import table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "headline.json"
README = HERE / "README.md"
TABLE = "headline-table"


def _constant_logprobs(passage: str) -> list[float]:
    return [math.log(0.6), math.log(0.4)]


def _constant() -> dict[str, float]:
    """`scsuff_constant`: answers (A) with p 0.6 whatever the input, says nothing."""
    items = feature_rule_items(100, TEST_SEED)
    said = [CONSTANT_EXPLANATION]
    gains = [pipeline_gains(_constant_logprobs, render(i), said)[0] for i in items]
    right = [i.answer == 0 for i in items]
    headline = [g if r else WRONG_ANSWER_FLOOR for g, r in zip(gains, right, strict=True)]
    n = len(items)
    return {"gain": sum(gains) / n, "correct_gain": sum(headline) / n, "accuracy": sum(right) / n}


def _policy(name: str, kind: str, answer: str, mention: str) -> dict[str, Any]:
    result = policy_scores(answer, mention)
    return {
        "row": name,
        "kind": kind,
        "gain": result.gain,
        "correct_gain": result.correct_gain,
        "accuracy": result.accuracy,
    }


def measure() -> list[dict[str, Any]]:
    """Every row of the table (kind: oracle, policy, wrong rule, blind, attack on the mean)."""
    rows = [
        _policy("`scsuff_rule`: the rule, its features stated", "oracle", "rule", "rule"),
        _policy(
            "`-M mention=first`: the rule, its first feature stated", "policy", "rule", "first"
        ),
        _policy("`-M mention=none`: the rule, nothing stated", "policy", "rule", "none"),
        _policy(
            "`-M answer=other -M mention=decisive`: one feature the rule does not name, stated",
            "wrong rule",
            "other",
            "decisive",
        ),
        _policy(
            "`-M answer=first -M mention=decisive`: the rule's first condition alone, stated",
            "wrong rule",
            "first",
            "decisive",
        ),
        _policy(
            "`-M answer=hash -M mention=names`: at chance, names listed", "blind", "hash", "names"
        ),
        {"row": "`scsuff_constant`: (A) always, nothing stated", "kind": "blind", **_constant()},
    ]
    for name, families in (
        ("learned surface attacker, claim-free explainer", [CLAIM_FREE]),
        ("learned surface attacker, fact-line explainer", [CLAIM_FREE, FACT_LINES]),
    ):
        result = attack(families)
        rows.append(
            {
                "row": name,
                "kind": "blind",
                "gain": result.gain,
                "correct_gain": result.correct_gain,
                "accuracy": result.accuracy,
            }
        )
    withheld = withhold_attack("rule")
    rows.append(
        {
            "row": "learned withholding attacker: the rule's answers, explanations predicted to "
            f"gain least withheld ({withheld.withheld}/{withheld.n})",
            "kind": "attack on the mean",
            "gain": None,
            "correct_gain": withheld.scored,
            "accuracy": 1.0,
            "correct_gain_if_left_out": withheld.excluded,
        }
    )
    return rows


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table, then the chance row (the best blind row) and the oracle."""
    blind = max((r for r in rows if r["kind"] == "blind"), key=lambda r: r["correct_gain"])
    oracle = next(r for r in rows if r["kind"] == "oracle")
    lines = [
        "| row | kind | **scsuff_correct_gain** (headline) | scsuff_gain | accuracy |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        head = _fmt(r["correct_gain"])
        if "correct_gain_if_left_out" in r:
            head += f" ({_fmt(r['correct_gain_if_left_out'])} if withheld ones were left out)"
        gain, accuracy = _fmt(r["gain"]), f"{r['accuracy']:.2f}"
        lines.append(f"| {r['row']} | {r['kind']} | {head} | {gain} | {accuracy} |")
    lines += [
        "",
        f"**Chance row**, the strongest blind row ({blind['row']}): "
        f"**{blind['correct_gain']:.3f}**. Oracle ({oracle['row']}): "
        f"**{oracle['correct_gain']:.3f}**.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
