"""The README's method comparison is generated from `results/methods.json`, and the committed rows
of the shipped corpus are what `scripts/experiment.py` measures on it today."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from docket.core.results_tables import block
from tests.benchmarks.scripts import load_script

SCRIPT = "benchmarks/erm_retrieval/scripts/experiment.py"


def _committed() -> dict[str, Any]:
    script = load_script(SCRIPT)
    results: dict[str, Any] = json.loads(script.RESULTS.read_text(encoding="utf-8"))
    return results


def test_the_readme_table_is_the_committed_results() -> None:
    script = load_script(SCRIPT)
    results = _committed()
    assert block(script.TABLE, script.render_table(results)) in script.README.read_text()
    assert results["seeds"] == list(script.SEEDS)
    assert [(s["retriever"], s["expander"], tuple(s["rows"])) for s in results["settings"]] == [
        (retriever, expander, methods) for retriever, expander, methods in script.SETTINGS
    ]


@pytest.mark.parametrize("setting", [0, 1])
def test_the_shipped_corpus_rows_are_reproduced(setting: int) -> None:
    """The first seed is the shipped corpus (2026): re-measured, every method's four columns
    equal the committed ones to the 6 decimals they are stored with."""
    script = load_script(SCRIPT)
    committed = _committed()["settings"][setting]
    retriever, expander, methods = script.SETTINGS[setting]
    measured = asyncio.run(script.corpus_rows(script.SEEDS[0], retriever, expander, methods))
    for method in methods:
        assert [round(v, 6) for v in measured[method]] == committed["rows"][method][0], method


def test_the_table_renders_mean_and_spread_per_method() -> None:
    """Two corpora with known values: the cell is their mean ± sample sd; methods that expand
    name the expander, the others a dash."""
    script = load_script(SCRIPT)
    results = {
        "seeds": [2026, 1],
        "columns": ["nDCG@10", "Recall@20", "nDCG@10 seen", "nDCG@10 unseen"],
        "settings": [
            {
                "retriever": "bm25",
                "expander": "prf",
                "rows": {
                    "static": [[0.1, 0.2, 0.3, 0.4], [0.3, 0.2, 0.3, 0.4]],
                    "erm": [[0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]],
                },
            }
        ],
    }
    lines = script.render_table(results).splitlines()
    assert lines[0].startswith(
        "Held-out queries, mean ± sd over the corpora of seeds 2026 (shipped), 1;"
    )
    assert (
        lines[-2]
        == "| static index | – | 0.200 ± 0.141 | 0.200 ± 0.000 | 0.300 ± 0.000 | 0.400 ± 0.000 |"
    )
    assert (
        lines[-1] == "| ERM | prf | 0.500 ± 0.000 | 0.500 ± 0.000 | 0.500 ± 0.000 | 0.500 ± 0.000 |"
    )
