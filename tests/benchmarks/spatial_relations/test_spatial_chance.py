"""spatial_relations' chance table is generated from its committed results (#53 item 3)."""

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
