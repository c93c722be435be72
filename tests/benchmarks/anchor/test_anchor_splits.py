"""ANCHOR's split record and ids: runs name their scenario file by content hash; no prompt shows
a scenario id (the scenarios are hand-written from court cases: there is no generator an id
could drive)."""

from __future__ import annotations

import json
from pathlib import Path

from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct
from docket.benchmarks.anchor.dataset import SCENARIOS
from docket.benchmarks.anchor.prompts import auditor_system
from docket.core.splits import SPLIT_KEY, files_digest

FIXTURE = Path(__file__).with_name("fixture_scenarios.jsonl")


def test_runs_name_their_scenario_file_by_content_hash(tmp_path: Path) -> None:
    shipped = anchor_direct().metadata
    assert shipped is not None
    assert shipped[SPLIT_KEY] == {
        "sha256": files_digest(Path(SCENARIOS).parent, [Path(SCENARIOS)]),
        "source": "shipped",
        "name": "scenarios.jsonl",
    }
    copy = tmp_path / FIXTURE.name  # the hash covers the file name and its content
    copy.write_bytes(FIXTURE.read_bytes())
    fixture = anchor_audit(scenarios=str(FIXTURE)).metadata
    same = anchor_audit(scenarios=str(copy)).metadata
    assert fixture is not None and same is not None
    assert fixture[SPLIT_KEY]["sha256"] == same[SPLIT_KEY]["sha256"]
    assert fixture[SPLIT_KEY]["sha256"] != shipped[SPLIT_KEY]["sha256"]


def test_no_prompt_shows_a_scenario_id() -> None:
    for sample in anchor_audit().dataset:
        meta = sample.metadata or {}
        brief = auditor_system().format(**meta, strategies="")
        assert str(sample.id) not in str(sample.input) + brief
    rows = [json.loads(line) for line in Path(SCENARIOS).read_text().splitlines() if line]
    assert all(row["id"] not in row["user_goal"] for row in rows)
