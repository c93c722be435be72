"""An eval-set SIGKILLed mid-run and re-run finishes with every sample scored exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

WORKER = Path(__file__).with_name("resume_worker.py")
SAMPLES = [f"s{i:02d}" for i in range(1, 13)]
COMPLETE_FIRST = 6
#: Longest wait for the first run to reach its kill point, and for the re-run to finish.
DEADLINE_S = 120.0


def _worker(log_dir: Path, run_file: Path, hold: bool) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DOCKET_RESUME_RUN_FILE": str(run_file),
        "DOCKET_RESUME_HOLD": "1" if hold else "0",
    }
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(log_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _ids(run_file: Path) -> list[str]:
    return run_file.read_text().split() if run_file.exists() else []


def _logs(log_dir: Path) -> list[EvalLog]:
    return [read_eval_log(info) for info in list_eval_logs(str(log_dir))]


def _wait_for_kill_point(worker: subprocess.Popen[bytes], log_dir: Path, run_file: Path) -> None:
    """Until every sample has started and the first ones are durably in the log."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert worker.poll() is None, worker.communicate()[0].decode()[-2000:]
        if len(_ids(run_file)) == len(SAMPLES):
            try:
                logs = _logs(log_dir)
            except Exception:  # caught the log mid-write: look again
                logs = []
            if logs and len(logs[0].samples or []) == COMPLETE_FIRST:
                return
        time.sleep(0.2)
    raise AssertionError("the first run never reached its kill point")


def test_sigkilled_eval_set_resumes_without_losing_or_redoing_samples(tmp_path: Path) -> None:
    log_dir, first, second = tmp_path / "logs", tmp_path / "run1.txt", tmp_path / "run2.txt"
    worker = _worker(log_dir, first, hold=True)
    try:
        _wait_for_kill_point(worker, log_dir, first)
        worker.send_signal(signal.SIGKILL)
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL
    (killed,) = _logs(log_dir)
    assert killed.status == "started"  # the process died without closing its log
    done_before = sorted(str(s.id) for s in killed.samples or [])
    assert done_before == SAMPLES[:COMPLETE_FIRST]

    rerun = _worker(log_dir, second, hold=False)
    output = rerun.communicate(timeout=DEADLINE_S)[0].decode()
    assert rerun.returncode == 0, output[-3000:]

    # the re-run ran only the samples the killed run had not finished
    assert sorted(_ids(second)) == SAMPLES[COMPLETE_FIRST:]
    assert Counter(_ids(first)) == Counter(SAMPLES)  # every sample had started once before
    finished = [log for log in _logs(log_dir) if log.status == "success"]
    assert len(finished) == 1
    samples = finished[0].samples or []
    assert Counter(str(s.id) for s in samples) == Counter(SAMPLES)  # each scored exactly once
    assert all(s.scores and s.scores["exact"].value == "C" for s in samples)
    results = finished[0].results
    assert results and results.completed_samples == len(SAMPLES)
    assert results.scores[0].metrics["mean"].value == 1.0
