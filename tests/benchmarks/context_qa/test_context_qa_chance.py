"""context_qa's chance table is generated from its committed results (#53 item 3)."""

from __future__ import annotations

from tests.benchmarks.scripts import load_script, readme_block_of_results

SCRIPT = "benchmarks/context_qa/scripts/chance.py"


def test_the_readme_table_is_the_committed_results() -> None:
    rows, rendered = readme_block_of_results(SCRIPT)
    assert rendered
    # the values `test_context_qa_attacks.py` and `test_context_qa.py` recompute
    assert {r["name"]: r["f1"] for r in rows} == {
        "first_fact": 0.1,
        "best_constant": 0.225,
        "relation_first": 0.6125,
        "surface_booster": 0.6125,
        "name_memory": 0.1625,
    }
    table = load_script(SCRIPT).render_table(rows)
    assert "never reads the text: `best_constant`) | any | **0.225** |" in table
    assert "(the best of all: `relation_first`) | `prompt` | **0.613** |" in table
