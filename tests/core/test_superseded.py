"""`docket.core.superseded`: after an eval_set, the logs it returned are kept and the older
finished logs of their tasks go, whatever the modification times say (an object store lists
them to the second, so a crash recovery and the retry after it can tie)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.solver import Generate, Solver, TaskState, solver

from docket.core.superseded import remove_superseded, superseded_logs


@solver
def _no_model() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state

    return solve


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """One real log of a one-sample task (no model call)."""
    folder = tmp_path_factory.mktemp("genuine")
    [log] = eval(
        Task(dataset=[Sample(input="x", target="y")], solver=_no_model()),
        model="mockllm/model",
        log_dir=str(folder),
        display="none",
    )
    assert log.status == "success" and log.location
    return read_eval_log(log.location)


def _write(
    log: EvalLog, folder: Path, stamp: str, task_id: str, status: str, suffix: str = ""
) -> EvalLog:
    copy = log.model_copy(deep=True)
    copy.eval.task_id = task_id
    copy.status = status  # type: ignore[assignment]
    copy.location = str(folder / f"{stamp}_task_{task_id}{suffix}.eval")
    write_eval_log(copy, copy.location)
    return copy


def test_the_returned_log_is_kept_when_a_recovery_ties_it(genuine: EvalLog, tmp_path: Path) -> None:
    """The killed shard's story: its started log, Inspect's recovery of it (an `error` log), the
    retry's finished log, all with the same modification time; another unit's log beside them."""
    unit = "k" * 22
    started = _write(genuine, tmp_path, "2026-01-01T00-00-00-00-00", unit, "started")
    recovered = _write(genuine, tmp_path, "2026-01-01T00-00-00-00-00", unit, "error", "-recovered")
    earlier_error = _write(genuine, tmp_path, "2026-01-01T00-00-05-00-00", unit, "error")
    finished = _write(genuine, tmp_path, "2026-01-01T00-00-09-00-00", unit, "success")
    other = _write(genuine, tmp_path, "2026-01-01T00-00-00-00-00", "o" * 22, "error")
    for log in (started, recovered, earlier_error, finished, other):
        assert log.location
        os.utime(log.location, (1_700_000_000, 1_700_000_000))  # one second for all

    assert superseded_logs(str(tmp_path), [finished]) == sorted(
        [str(recovered.location), str(earlier_error.location)]
    )
    removed = remove_superseded(str(tmp_path), [finished])
    assert len(removed) == 2
    left = sorted(p.name for p in tmp_path.glob("*.eval"))
    assert left == sorted(Path(str(x.location)).name for x in (started, finished, other))


def test_nothing_goes_without_a_returned_log_of_the_task(genuine: EvalLog, tmp_path: Path) -> None:
    lone = _write(genuine, tmp_path, "2026-01-01T00-00-00-00-00", "a" * 22, "error")
    assert superseded_logs(str(tmp_path), []) == []
    assert remove_superseded(str(tmp_path), [lone]) == []
    assert lone.location and Path(lone.location).exists()


def test_a_file_that_is_no_log_is_left_for_the_report(genuine: EvalLog, tmp_path: Path) -> None:
    unit = "u" * 22
    finished = _write(genuine, tmp_path, "2026-01-01T00-00-09-00-00", unit, "success")
    broken = tmp_path / f"2026-01-01T00-00-00-00-00_task_{unit}.eval"
    broken.write_bytes(b"PK\x03\x04 not a zip")
    assert remove_superseded(str(tmp_path), [finished]) == []
    assert broken.exists()
