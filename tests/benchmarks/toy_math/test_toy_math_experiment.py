"""The SAR toy experiment: its table on a hand case, and the CLI end to end at a tiny size."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[3] / "benchmarks" / "toy_math" / "scripts"
EXPERIMENT = runpy.run_path(str(SCRIPTS / "experiment.py"))
SOURCES, main, table = EXPERIMENT["SOURCES"], EXPERIMENT["main"], EXPERIMENT["table"]


def test_the_table_has_the_initial_row_mean_sd_per_seed_and_empty_sources() -> None:
    results = {
        "initial_accuracy": 0.4,
        "sources": {
            "rs": {"examples": 12, "nll": 0.1234, "accuracy": [0.5, 0.3]},
            "synth": {"examples": 0, "nll": None, "accuracy": []},
        },
    }
    lines = table(results).splitlines()
    assert lines[2] == "| initial student (no SFT) | – | – | 0.400 | – |"
    assert lines[3] == "| rs | 12 | 0.123 | 0.400 ± 0.141 | 0.500, 0.300 |"
    assert lines[4] == "| synth | 0 | – | – | – |"


@pytest.mark.slow  # six tiny evals and five tiny SFT runs: 34 s on the shared CPU
def test_the_cli_runs_every_stage_at_a_tiny_size(tmp_path: Path) -> None:
    tiny = "--pretrain 16 --pretrain-steps 2 --hidden 16 --layers 1 --train 2 --test 2 --k 2"
    argv = [*tiny.split(), "--steps", "1", "--seeds", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert 0 <= results["initial_accuracy"] <= 1 and 0 <= results["rs_yield"] <= 1
    assert results["repairs"]["repairs_tried"] == 4 * (1 - results["rs_yield"])
    assert set(results["sources"]) == set(SOURCES) and results["wall_s"] >= 0
    for name in ("rewrite", "synth"):  # the scripted teacher's outputs always verify
        row = results["sources"][name]
        assert row["examples"] == 4 and row["nll"] > 0 and len(row["accuracy"]) == 1
