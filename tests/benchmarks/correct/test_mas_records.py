"""Reading and validating Who&When / CORRECT-Error trajectory files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docket.benchmarks.correct.simulator.records import (
    TrajectoryError,
    read_trajectories,
    to_json,
    write_trajectories,
)

WHO_AND_WHEN = {
    "question": "How many?",
    "ground_truth": "4",
    "question_ID": "abc",
    "level": 1,
    "history": [
        {"content": "How many?", "role": "human"},
        {"content": "I think 5", "name": "Expert", "role": "assistant"},
    ],
    "mistake_agent": "Expert",
    "mistake_step": "1",
    "mistake_reason": "wrong count",
}


def test_who_and_when_folder_with_string_step_and_role_only_entries(tmp_path: Path) -> None:
    (tmp_path / "1.json").write_text(json.dumps(WHO_AND_WHEN))
    [trajectory] = read_trajectories(tmp_path)
    assert trajectory.id == "abc"
    assert trajectory.mistake_step == 1
    assert [s.name for s in trajectory.history] == ["human", "Expert"]
    # a record read from a folder without a dataset field is labelled with the folder's name
    assert trajectory.metadata == {"question_ID": "abc", "level": 1, "dataset": tmp_path.name}


def test_correct_error_rows_with_groundtruth_key(tmp_path: Path) -> None:
    row = {**WHO_AND_WHEN, "groundtruth": "", "trajectory_id": "gpt_x_task1_0"}
    del row["ground_truth"]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    [trajectory] = read_trajectories(path)
    assert (trajectory.id, trajectory.ground_truth) == ("gpt_x_task1_0", "")


def test_gzip_round_trip(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([WHO_AND_WHEN, WHO_AND_WHEN]))
    trajectories = read_trajectories(tmp_path / "a.json")
    write_trajectories(trajectories, tmp_path / "b.jsonl.gz")
    again = read_trajectories(tmp_path / "b.jsonl.gz")
    assert [to_json(t) for t in again] == [to_json(t) for t in trajectories]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"mistake_step": 2},
            r"rows\.json\[1\]: field 'mistake_step'=2 is out of range \(0\.\.1\)",
        ),
        ({"mistake_step": -1}, r"rows\.json\[1\]: field 'mistake_step'=-1 is out of range"),
        ({"mistake_step": "two"}, r"rows\.json\[1\]: field 'mistake_step'='two' is out of range"),
        ({"history": []}, r"rows\.json\[1\]: field 'history' must be a non-empty list"),
        ({"mistake_agent": ""}, r"rows\.json\[1\]: field 'mistake_agent' must be"),
        ({"history": [{"role": "x"}]}, r"rows\.json\[1\]\.history\[0\]: .*'content'"),
    ],
)
def test_bad_records_name_file_index_and_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([WHO_AND_WHEN, {**WHO_AND_WHEN, **change}]))
    with pytest.raises(TrajectoryError, match=message):
        read_trajectories(path)


def test_missing_fields_are_listed(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    row = {k: v for k, v in WHO_AND_WHEN.items() if k not in ("history", "mistake_step")}
    path.write_text(json.dumps(WHO_AND_WHEN) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(
        TrajectoryError, match=r"rows\.jsonl\[1\]: missing field\(s\) history, mistake_step"
    ):
        read_trajectories(path)


def test_invalid_json_and_missing_path(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(WHO_AND_WHEN) + "\n{not json\n")
    with pytest.raises(TrajectoryError, match=r"broken\.jsonl\[1\]: invalid JSON"):
        read_trajectories(path)
    with pytest.raises(TrajectoryError, match="no such trajectory file"):
        read_trajectories(tmp_path / "absent.json")
