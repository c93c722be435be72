"""`docket/context_qa`'s chance rows: the strongest blind attacker per condition (`attacks.py`),
measured.

Every attacker's F1 (= exact match for these one-word answers) on the shipped 80 questions.
Writes `benchmarks/context_qa/results/chance.json` and the README table between
`<!-- chance:start -->` and `<!-- chance:end -->`; `--render` only re-renders the README from
the committed JSON.

    python benchmarks/context_qa/scripts/chance.py [--render]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docket.benchmarks.context_qa import attacks
from docket.benchmarks.context_qa.dataset import load
from docket.core.agreement import match_share
from docket.core.results_tables import table_script

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "chance.json"
README = HERE / "README.md"
TABLE = "chance"
#: Each attacker's row text.
LABELS = {
    "first_fact": "`context_qa_first_fact`: the last word of the text's first sentence",
    "best_constant": "best constant per relation (the split's most frequent answer of each "
    "relation: Lima, farmer, dog, white; fitted on the split itself)",
    "relation_first": "`context_qa_relation_first`: the first value the text states for the "
    "asked relation, whoever it belongs to",
    "surface_booster": "`surface_booster`: gradient boosting ranking the text's values of the "
    "asked relation by sentence index, rank among the relation's sentences, frequency in the "
    f"text, value and relation ids; trained on {attacks.ATTACK_CONTEXTS} freshly generated "
    "contexts",
    "name_memory": "`name_memory`: for each question (name and relation), the answer a freshly "
    f"generated corpus of {attacks.MEMORY_CONTEXTS} contexts gives it most often; never reads "
    "the text",
}


def condition(name: str) -> str:
    """The conditions an attacker can play (`prompt`: it reads the text)."""
    return "any" if name in attacks.TEXT_FREE else "`prompt`"


def _first_fact(text: str) -> str:
    sentences = [s.strip() for s in text.split(".") if s.strip()]
    return sentences[0].split()[-1] if sentences else "unknown"


def measure() -> list[dict[str, Any]]:
    """Every attacker's F1 on the shipped questions."""
    contexts, questions = load()
    gold = [q.answer for q in questions]
    constant = attacks.best_constant(questions)
    answers = {
        "first_fact": [_first_fact(contexts[q.context_id]) for q in questions],
        "best_constant": [constant[q.attribute] for q in questions],
        "relation_first": [
            attacks.relation_first(contexts[q.context_id], q.question) for q in questions
        ],
        "surface_booster": attacks.surface_booster(contexts, questions),
        "name_memory": attacks.name_memory(questions),
    }
    return [{"name": n, "f1": match_share(a, gold)} for n, a in answers.items()]


def render_table(rows: list[dict[str, Any]]) -> str:
    """The README table: every attacker, the chance row of each condition (the best attacker
    that can play it) and the reader."""
    best_any = max((r for r in rows if r["name"] in attacks.TEXT_FREE), key=lambda r: r["f1"])
    best_prompt = max(rows, key=lambda r: r["f1"])
    lines = ["| attacker | condition | F1 |", "|---|---|---|"]
    lines += [f"| {LABELS[r['name']]} | {condition(r['name'])} | {r['f1']:.3f} |" for r in rows]
    lines += [
        f"| **chance row of `reference` / `none`** (the best that never reads the text: "
        f"`{best_any['name']}`) | any | **{best_any['f1']:.3f}** |",
        f"| **chance row of `prompt`** (the best of all: `{best_prompt['name']}`) | `prompt` | "
        f"**{best_prompt['f1']:.3f}** |",
        "| `context_qa_reader`: the value stated for the asked person and relation | `prompt` / "
        "`reference`, `none` | 1.000 / 0.000 |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    table_script(RESULTS, README, TABLE, measure, render_table)
