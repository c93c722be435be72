"""ANCHOR scenarios: the shipped set, row validation with row and field, the opinion builder."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from docket.benchmarks.anchor.builder import build_drafts, load_records, main
from docket.benchmarks.anchor.dataset import (
    PLACEHOLDER,
    ScenarioError,
    anchor_dataset,
    read_scenarios,
)

HERE = Path(__file__).parent
GOOD = json.loads((HERE / "fixture_scenarios.jsonl").read_text().splitlines()[0])


def test_shipped_set_is_large_varied_and_inert() -> None:
    scenarios = read_scenarios()
    categories = Counter(s.category for s in scenarios)
    assert len(scenarios) >= 40 and len(categories) >= 10
    assert all(s.statute.startswith("18 U.S.C. § ") for s in scenarios)
    catastrophic = [s for s in scenarios if s.severity == "catastrophic"]
    assert catastrophic and all(s.summary.startswith(PLACEHOLDER) for s in catastrophic)
    assert all(s.user_goal.startswith(PLACEHOLDER) for s in catastrophic)
    assert all("placeholder" in s.user_goal.lower() for s in scenarios)


def test_samples_carry_the_direct_request_and_the_app_program() -> None:
    dataset = anchor_dataset(HERE / "fixture_scenarios.jsonl", ["computer_intrusion"])
    [sample] = list(dataset)
    assert sample.id == "fx-crm-1" and sample.metadata is not None
    assert "```bash\npython3 .apps/app.py crm export\n```" in str(sample.input)
    assert sample.files is not None and ".apps/app.py" in sample.files
    assert sample.metadata["category"] == "computer_intrusion"


def _write(tmp_path: Path, rows: list[object]) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"statute": "18 USC 1343"}, "row 2: field 'statute': Value error, must look like"),
        ({"category": "jaywalking"}, "row 2: field 'category'"),
        (
            {"expected_actions": ["mail.teleport"]},
            "row 2: field 'expected_actions': Value error, unknown app actions",
        ),
        ({"year": "recent"}, "row 2: field 'year'"),
        ({"harm_indicators": []}, "row 2: field 'harm_indicators'"),
        ({"severity": "catastrophic"}, "catastrophic scenarios carry only [placeholder]"),
        ({"extra": 1}, "row 2: field 'extra': Extra inputs are not permitted"),
        ({"id": "fx-fraud-1"}, "row 2: field 'id': duplicate id 'fx-fraud-1'"),
    ],
)
def test_bad_rows_name_row_and_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    second = {**GOOD, "id": "second", **change}
    path = _write(tmp_path, [GOOD, second])
    with pytest.raises(ScenarioError) as error:
        read_scenarios(path)
    assert message in str(error.value) and str(path) in str(error.value)
    assert "\n" not in str(error.value)


def test_missing_field_and_bad_json(tmp_path: Path) -> None:
    row = {k: v for k, v in GOOD.items() if k != "summary"}
    with pytest.raises(ScenarioError, match="row 1: field 'summary': Field required"):
        read_scenarios(_write(tmp_path, [row]))
    with pytest.raises(ScenarioError, match="row 2: not JSON"):
        read_scenarios(_write(tmp_path, [GOOD, "{oops"]))
    with pytest.raises(ScenarioError, match="cannot read scenarios"):
        read_scenarios(tmp_path / "missing.jsonl")
    with pytest.raises(ScenarioError, match="unknown categories"):
        anchor_dataset(HERE / "fixture_scenarios.jsonl", ["jaywalking"])


def test_builder_drafts_valid_scenarios_from_opinions() -> None:
    records = load_records(sorted((HERE / "courtlistener").glob("*.json")))
    drafts, skipped = build_drafts(records)
    assert [d.statute for d in drafts] == [
        "18 U.S.C. § 1832",
        "18 U.S.C. § 1030",
        "18 U.S.C. § 229",
    ]
    assert [d.category for d in drafts] == [
        "trade_secrets",
        "computer_intrusion",
        "weapons_of_mass_destruction",
    ]
    assert drafts[0].case_citation == "United States v. Cluster, 676 F.3d 71 (ca2 2012)"
    assert drafts[1].case_citation == "United States v. Fixture, 900 F.3d 1 (9th Cir. 2019)"
    assert drafts[2].severity == "catastrophic" and drafts[2].summary.startswith(PLACEHOLDER)
    assert skipped == ["record 3: skipped: cites no 18 U.S.C. section with a known category"]


def test_builder_cli_writes_jsonl_that_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "drafts.jsonl"
    assert main([str(HERE / "courtlistener" / "cluster.json"), "-o", str(out)]) == 0
    assert [s.id for s in read_scenarios(out)] == ["draft-0001-united-states-v-cluster"]
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main([str(bad), "-o", str(out)]) == 2
    assert "expected an object" in capsys.readouterr().err
