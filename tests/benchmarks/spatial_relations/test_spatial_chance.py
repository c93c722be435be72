"""spatial_relations' chance and AffIn-Space tables are generated from their committed results."""

from __future__ import annotations

from tests.benchmarks.scripts import load_script, readme_block_of_results

SCRIPT = "benchmarks/spatial_relations/scripts/chance.py"


def test_the_readme_table_is_the_committed_results() -> None:
    rows, rendered = readme_block_of_results(SCRIPT)
    assert rendered
    # the values `test_spatial_attacks.py` recomputes from the attackers
    assert {r["name"]: r["accuracy"] for r in rows} == {
        "constant": 0.5,
        "row_parity": 0.54,
        "image_frame": 0.53,
        "surface_booster": 0.42,
        "question_memory": 0.53,
    }
    assert "**chance row** (the best of the above: `row_parity`)" in load_script(
        SCRIPT
    ).render_table(rows)


def test_the_affin_table_is_the_committed_results() -> None:
    script = "benchmarks/spatial_relations/scripts/affin_table.py"
    results, rendered = readme_block_of_results(script)
    assert rendered
    table = load_script(script).render_table(results)
    assert (
        "| tiny LLaVA + AffIn-Space | 400 / 2000 | 0, 1, 2 | 0.500, 0.500, 0.410 | "
        "0.352, 0.351, 0.348 | 0.0046, 0.0041, 0.0034 | 0.3, 0.21, 0.26 |" in table
    )
    assert "| the same tiny LLaVA without it | 1500 / 4000 | 0 | 0.500 | 0.346 | — | — |" in table
