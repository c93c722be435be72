"""`docket check LOGDIR`: exit 1 on an errored sample or a run that did not finish, 0 on clean
runs, so `inspect eval ... && docket check logs` is a correct CI step.

The logs are real Inspect runs of a tiny task on docket's scripted model; the failures are
planted: a solver that raises on one sample, a log written back as cancelled or unfinished."""

from __future__ import annotations

from contextvars import copy_context
from pathlib import Path

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalError, EvalLog, read_eval_log, write_eval_log
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.solver import generate as generate_solver

from docket.check import one_line
from docket.cli import main

ESC = "\x1b[31m"


@solver
def fail_on(sample_id: str) -> Solver:
    """Raise (with control characters in the message) on one sample; generate on the rest."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.sample_id == sample_id:
            raise RuntimeError(f"{ESC}planted failure\x07 on {sample_id}\nsecond line")
        return await generate(state)

    return solve


def _run(log_dir: Path, fail: str | None = None) -> EvalLog:
    samples = [Sample(id=i, input="Say hello.", target="hello") for i in ("a", "b", "c")]
    task = Task(
        dataset=samples,
        solver=fail_on(fail) if fail else generate_solver(),
        scorer=includes(),
        name="tiny",
    )
    (log,) = copy_context().run(
        inspect_eval,
        task,
        model="docket/scripted",
        model_args={"policy": "comply"},
        log_dir=str(log_dir),
        display="none",
        fail_on_error=False,
    )
    return log


def _check(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", str(log_dir)])
    return code, capsys.readouterr().out


def test_a_clean_run_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path)
    code, out = _check(tmp_path, capsys)
    assert code == 0, out
    assert "ok: 1 run(s) finished, 3 samples, none errored" in out


def test_an_errored_sample_fails_with_one_clean_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _run(tmp_path, fail="b")
    assert log.status == "success"  # what `inspect eval` exits 0 on
    code, out = _check(tmp_path, capsys)
    assert code == 1
    (line,) = [x for x in out.splitlines() if "samples errored" in x]
    assert "1 of 3 samples errored (ids b): RuntimeError" in line
    assert "planted failure" in line
    assert "\x1b" not in out and "\x07" not in out


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("cancelled", "the run was interrupted (status cancelled)"),
        ("started", "the run did not finish (status started"),
        ("error", "the run failed (status error): boom"),
    ],
)
def test_a_run_that_did_not_succeed_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: str, expected: str
) -> None:
    log = read_eval_log(_run(tmp_path).location)
    log.status = status  # type: ignore[assignment]  # the planted failure
    if status == "error":
        log.error = EvalError(message=f"boom{ESC}\nTraceback", traceback="", traceback_ansi="")
    write_eval_log(log)
    code, out = _check(tmp_path, capsys)
    assert code == 1
    assert expected in out and "\x1b" not in out


def test_only_the_newest_log_of_a_retried_task_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = read_eval_log(_run(tmp_path, fail="a").location)
    retried = read_eval_log(_run(tmp_path).location)
    retried.eval.task_id = failed.eval.task_id  # an eval-set retry keeps the task id
    write_eval_log(retried)
    code, out = _check(tmp_path, capsys)
    assert code == 0, out


def test_a_missing_or_empty_directory_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(tmp_path / "nope", capsys)[0] == 2
    assert _check(tmp_path, capsys)[0] == 2


def test_one_line_strips_control_characters() -> None:
    assert one_line(f"a{ESC}b\x00\x7f\x9bc\n d") == "a [31mb c d"
