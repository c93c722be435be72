"""Session logs with known scores: docket/smoke on scripted comply (1.0) and refuse (0.0), and
the synthetic non-docket `synth_gate` task (tests/reports/reports_synthetic.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.smoke.smoke import smoke
from tests.reports.reports_synthetic import SURVIVAL_HEADLINE, run_gate_task


@pytest.fixture(scope="session")
def smoke_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two smoke logs: scripted comply (accuracy 1.0) and refuse (accuracy 0.0)."""
    log_dir = tmp_path_factory.mktemp("smoke_logs")
    for policy in ("comply", "refuse"):
        [log] = inspect_eval(
            smoke(),
            model=get_model("docket/scripted", policy=policy),
            log_dir=str(log_dir),
            display="none",
        )
        if log.status != "success":
            pytest.skip(f"docket/smoke could not run here: {log.error}")
    return log_dir


@pytest.fixture(scope="session")
def gate_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One synth_gate log with samples 1 and 3 planted as failing (accuracy 18/20 = 0.9)."""
    log_dir = tmp_path_factory.mktemp("gate_logs")
    run_gate_task(log_dir, failing={1, 3})
    return log_dir


@pytest.fixture(scope="session")
def survival_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """synth_gate declared as a survival headline (compliance by turn 3, lower is better), two
    rows told apart by temperature: 0.1 where samples 1-6 comply (at turn i mod 3 + 1), 0.2 where
    nobody complies."""
    log_dir = tmp_path_factory.mktemp("survival_logs")
    for temperature, complying in ((0.1, set(range(1, 7))), (0.2, set())):
        run_gate_task(
            log_dir,
            eval_args={"temperature": temperature},
            headline=SURVIVAL_HEADLINE,
            complying=complying,
        )
    return log_dir


@pytest.fixture()
def mixed_logs(tmp_path: Path, smoke_logs: Path, gate_logs: Path) -> Path:
    """Copies of the smoke and synth_gate logs in one directory."""
    target = tmp_path / "logs"
    target.mkdir()
    for source in (smoke_logs, gate_logs):
        for log in source.glob("*.eval"):
            shutil.copy2(log, target / log.name)
    return target
