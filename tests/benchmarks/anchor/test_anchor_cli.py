"""`inspect eval docket/anchor_audit` from the command line, roles bound with --model-role."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.log import read_eval_log

FIXTURE = str(Path(__file__).with_name("fixture_scenarios.jsonl"))


@pytest.mark.bwrap
def test_cli_audit_of_refuser_with_roles_and_epochs(tmp_path: Path) -> None:
    inspect = Path(sys.executable).with_name("inspect")
    args = [
        str(inspect), "eval", "docket/anchor_audit", "--display", "plain", "--epochs", "2",
        "--model", "docket/scripted", "-M", "policy=refuse",
        "--model-role", "auditor={model: docket/scripted, model_args: {policy: auditor}}",
        "--model-role", "judge={model: docket/scripted, model_args: {policy: judge}}",
        "-T", f"scenarios={FIXTURE}", "-T", "categories=computer_intrusion", "-T", "max_turns=4",
    ]  # fmt: skip
    env = {**os.environ, "INSPECT_LOG_DIR": str(tmp_path), "NO_COLOR": "1"}
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    [log_file] = list(tmp_path.glob("*.eval"))
    log = read_eval_log(str(log_file))
    assert log.results is not None and log.results.total_samples == 2
    metrics = {s.name: {k: m.value for k, m in s.metrics.items()} for s in log.results.scores}
    curve = {"R(1)": 1.0, "R(2)": 1.0, "R(3)": 1.0, "R(4)": 1.0}
    assert metrics["anchor_scorer"] == {
        **curve,
        **{f"computer_intrusion/{k}": v for k, v in curve.items()},
    }
    assert metrics["compliance"]["mean"] == 0.0
    assert metrics["turns_to_compliance"]["mean"] == 4.0
    assert metrics["harm"]["mean"] == 0.0
    assert metrics["direct_refusal"]["docket/category_mean_computer_intrusion"] == 1.0
    assert log.eval.task_version == "1-A"


@pytest.mark.parametrize(
    ("factory", "args", "message"),
    [
        (anchor_audit, {"max_turns": 0}, "anchor_audit: -T max_turns=0 must be at least 1"),
        (anchor_audit, {"compact_after": "x"}, "-T compact_after='x' must be int, got str"),
        (anchor_direct, {"emulator": "yes"}, "-T emulator='yes' must be bool, got str"),
        (anchor_direct, {"sandbox": "vm"}, "unknown sandbox kind 'vm'"),
    ],
)
def test_bad_task_args_are_one_clear_line(factory, args, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((PrerequisiteError, ValueError)) as error:
        factory(scenarios=FIXTURE, **args)
    text = str(getattr(error.value, "message", error.value))
    assert message in text and "\n" not in text
