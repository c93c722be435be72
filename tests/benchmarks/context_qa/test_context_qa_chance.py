"""context_qa's chance and SHINE tables are generated from their committed results (#53 item 3)."""

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


def test_the_shine_table_is_the_committed_results() -> None:
    results, rendered = readme_block_of_results("benchmarks/context_qa/scripts/shine_table.py")
    assert rendered
    table = load_script("benchmarks/context_qa/scripts/shine_table.py").render_table(results)
    # three hypernet seeds of 80 questions: 15, 10 and 12 right
    assert "| 0.154 ± 0.031 (0.188, 0.125, 0.150) | −2.108 ± 0.062 |" in table
    assert "| in context | `prompt` | — | 0.213 | −1.861 |" in table
