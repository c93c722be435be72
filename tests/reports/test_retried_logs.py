"""A task retried in another process (a shard re-run, a Ray unit retried after its node was
lost): Inspect's eval-set retry reuses the finished samples of the attempt before, uuids and
all, and leaves that attempt's `started` log in place (another process wrote it). The report
counts every sample of the retry once, and lists the dead attempt as superseded."""

from __future__ import annotations

import shutil
from pathlib import Path

from inspect_ai.log import read_eval_log, write_eval_log

from docket.reports import build_runs, load_logs


def test_a_retry_counts_the_samples_it_reused(tmp_path: Path, gate_logs: Path) -> None:
    [source] = gate_logs.glob("*.eval")
    logs = tmp_path / "logs"
    logs.mkdir()
    retry = logs / "1-retry.eval"
    shutil.copy2(source, retry)
    final = read_eval_log(str(retry))
    assert final.samples is not None and len(final.samples) == 20
    # the attempt the node took down: the same task, its own eval id, five samples finished
    attempt = final.model_copy(deep=True)
    attempt.status = "started"
    attempt.results = None
    attempt.eval = attempt.eval.model_copy(update={"eval_id": "dead-attempt", "run_id": "dead"})
    attempt.samples = [s.model_copy() for s in final.samples[:5]]
    write_eval_log(attempt, str(logs / "0-attempt.eval"))
    assert attempt.eval.task_id == final.eval.task_id

    loaded = load_logs(logs)
    assert not loaded.errors and not loaded.warnings
    [run] = build_runs(loaded)
    assert run.log.endswith("1-retry.eval") and run.status == "success"
    assert run.sample_count == 20 and run.n == 20  # the five reused samples counted once
    assert run.headline_value == 0.9
    assert [old.status for old in run.superseded] == ["started"]
