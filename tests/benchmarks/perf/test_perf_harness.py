"""The perf harness: ratios, verdicts and result files on known numbers; a quick real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docket.benchmarks.perf.__main__ import main
from docket.benchmarks.perf.harness import Measurement, Skipped, markdown, paired_medians, write


def _measurement(docket_s: float, peer_s: float, target: float) -> Measurement:
    return Measurement("x", "op", "peer", docket_s, peer_s, target, repeats=1)


def test_ratio_and_verdict() -> None:
    assert _measurement(0.3, 0.1, 3.0).ratio == pytest.approx(3.0)
    assert _measurement(0.3, 0.1, 3.0).met
    assert not _measurement(0.31, 0.1, 3.0).met
    assert _measurement(0.02, 0.1, 0.25).met  # below 1: docket must be faster
    assert _measurement(1.0, 0.0, 100.0).ratio == float("inf")


def test_paired_medians_alternate_and_take_the_median() -> None:
    order: list[str] = []
    paired_medians(lambda: order.append("docket"), lambda: order.append("peer"), 3)
    assert order == ["docket", "peer"] * 3
    with pytest.raises(ValueError, match="at least 1"):
        paired_medians(lambda: None, lambda: None, 0)


def test_result_files(tmp_path: Path) -> None:
    results: list[Measurement | Skipped] = [
        _measurement(0.002, 0.001, 3.0),
        Skipped("y", "no bwrap"),
    ]
    json_path, md_path = write(results, tmp_path)
    rows = json.loads(json_path.read_text())
    assert rows[0]["ratio"] == pytest.approx(2.0) and rows[0]["met"] is True
    assert rows[1] == {"name": "y", "reason": "no bwrap"}
    assert "| x | op | 2.00 ms | peer | 1.00 ms | 2.00 | ≤ 3 | yes |" in md_path.read_text()
    assert "| y | skipped: no bwrap |" in markdown(results)


def test_a_quick_run_writes_results_and_an_unknown_name_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["--only", "nope", "--out", str(tmp_path)]) == 2
    code = main(["--only", "schema_retrieval", "--quick", "--out", str(tmp_path)])
    [row] = json.loads((tmp_path / "results.json").read_text())
    assert row["name"] == "schema_retrieval" and row["docket_s"] > 0 and row["peer_s"] > 0
    assert code == (0 if row["met"] else 1)
