"""The real formats, offline: Who&When folders and CORRECT-Error rows (JSONL and parquet).

The fixtures are small hand-written files in the published record formats (fields as in the
released datasets): Who&When `Hand-Crafted/` (Magentic-One roles in `role`, string `mistake_step`,
`question_ID`, `level` null) and `Algorithm-Generated/` (agents in `name`, `system_prompt`,
`is_correct`); CORRECT-Error rows (`trajectory_id`, `dataset`, `generator_model`,
`question_id`, empty `groundtruth`, int `mistake_step`, `is_corrected`, `gaia_level`, `level`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from docket.benchmarks.correct.correct import correct_localization
from docket.benchmarks.correct.dataset import load_trajectories, to_sample
from docket.benchmarks.correct.simulator.records import read_trajectories
from docket.core.jsonl import parse_lines

FIXTURES = Path(__file__).parent / "fixtures"
WHO_AND_WHEN = FIXTURES / "who_and_when"
CORRECT_ERROR = FIXTURES / "correct_error" / "test.jsonl"


def test_who_and_when_hand_crafted_folder() -> None:
    rows = read_trajectories(WHO_AND_WHEN / "Hand-Crafted")
    assert [len(t.history) for t in rows] == [8, 5, 5]  # 1.json, 2.json, 10.json: numeric order
    first = rows[0]
    assert first.id.startswith("0c5e3a6f")  # question_ID
    assert first.mistake_step == 5 and first.mistake_agent == "Orchestrator"
    assert [s.name for s in first.history[:3]] == [
        "human",
        "Orchestrator (thought)",
        "Orchestrator (-> WebSurfer)",
    ]
    assert first.metadata["dataset"] == "Hand-Crafted"
    assert first.metadata["level"] is None and first.metadata["is_corrected"] is None
    sample = to_sample(first)
    assert sample.metadata is not None and sample.metadata["task_family"] == "Hand-Crafted"
    assert sample.metadata["tier"] == "short"


def test_who_and_when_algorithm_generated_folder() -> None:
    rows = read_trajectories(WHO_AND_WHEN / "Algorithm-Generated")
    assert [t.mistake_agent for t in rows] == ["Verification_Expert", "Calendar_Expert"]
    assert [s.name for s in rows[0].history] == [
        "DataAnalysis_Expert",
        "DataManipulation_Expert",
        "Computer_terminal",
        "Verification_Expert",
        "DataAnalysis_Expert",
    ]
    assert rows[0].history[2].role == "user"
    assert rows[0].metadata["system_prompt"]["Computer_terminal"] == "You run code."
    assert rows[0].metadata["is_correct"] is False and rows[0].metadata["level"] == "2"
    assert len(read_trajectories(WHO_AND_WHEN)) == 5  # both subsets from the parent folder


def _correct_error_check(rows: list[Any]) -> None:
    assert [t.id for t in rows] == [
        "gpt-5-nano_hotpot_task12_0",
        "gpt-5-nano_math500_task3_1",
        "gpt-4o-mini_gaia_level1_task7_0",
    ]
    assert [t.ground_truth for t in rows] == ["", "", ""]  # released with empty groundtruth
    assert [t.mistake_step for t in rows] == [4, 3, 1]
    assert rows[0].metadata["dataset"] == "hotpot"
    assert rows[2].metadata["gaia_level"] == 1 and rows[1].metadata["level"] == "Level 2"
    assert rows[0].history[4].name == "Orchestrator (thought)"


def test_correct_error_rows_as_jsonl_and_as_the_published_parquet(tmp_path: Path) -> None:
    _correct_error_check(read_trajectories(CORRECT_ERROR))
    import pandas as pd

    frame = pd.DataFrame([row for _, row in parse_lines(CORRECT_ERROR.read_text().splitlines())])
    parquet = tmp_path / "test-00000-of-00001.parquet"
    frame.to_parquet(parquet)
    _correct_error_check(read_trajectories(parquet))


def test_a_broken_parquet_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    path.write_bytes(b"not parquet")
    from docket.core.inspect_private import PrerequisiteError

    with pytest.raises(PrerequisiteError, match=r"x\.parquet: cannot read parquet"):
        load_trajectories(str(path))


def _step(log: EvalLog, key: str = "step") -> float:
    assert log.results is not None
    return next(s for s in log.results.scores if s.name == key).metrics["accuracy"].value


@pytest.mark.parametrize("source", [WHO_AND_WHEN / "Hand-Crafted", CORRECT_ERROR])
def test_the_task_runs_on_each_format_with_data_path(tmp_path: Path, source: Path) -> None:
    copy = tmp_path / source.name
    if source.is_dir():
        copy.mkdir()
        for file in source.iterdir():
            (copy / file.name).write_text(file.read_text())
    else:
        copy.write_text(source.read_text())
    task = correct_localization(data=str(copy), split="all")
    model = get_model("docket/scripted", policy="correct_oracle", labels=str(copy), memoize=False)
    [log] = inspect_eval(task, model=model, display="none", log_dir=str(tmp_path / "logs"))
    assert log.status == "success", log.error
    assert _step(log) == 1.0 and _step(log, "agent") == 1.0
    first = get_model("docket/scripted", policy="correct_first_step", memoize=False)
    [log] = inspect_eval(task, model=first, display="none", log_dir=str(tmp_path / "logs"))
    assert _step(log) == 0.0  # no fixture has its mistake at step 0 (the human's question)
