"""`reports/scripts/scale.py`: its least-squares lines and its README block, rendered from the
committed results file (the measurement takes a quarter of an hour and is not run here)."""

from __future__ import annotations

import json

import pytest

from docket.core.results_tables import table_block
from tests.benchmarks.scripts import load_script

SCRIPT = "reports/scripts/scale.py"


def test_the_fit_is_least_squares() -> None:
    scale = load_script(SCRIPT)
    assert scale._fit([(250, 3.5), (500, 6.0), (1000, 11.0)]) == pytest.approx((1.0, 0.01))
    assert scale._fit([(1, 1.0), (2, 3.0), (3, 2.0)]) == pytest.approx((1.0, 0.5))


def test_the_readme_block_is_rendered_from_the_results_file() -> None:
    scale = load_script(SCRIPT)
    results = json.loads(scale.RESULTS.read_text())
    assert table_block(scale.README.read_text(), scale.TABLE) == scale.render(results).strip()
    rows = results["shards"]["rows"]
    assert [r["shards"] for r in rows] == [1, 2, 3] and rows[0]["speedup"] == 1.0
    assert all(r["speedup"] == round(rows[0]["wall_s"] / r["wall_s"], 2) for r in rows)
    assert results["shards"]["samples"] == 2000
    reports = results["report"]["reports"]
    assert [(r["logs"], r["records"]) for r in reports] == [
        (250, True),
        (500, True),
        (1000, True),
        (250, False),
    ]
