"""`inspect eval docket/anchor_audit` from the command line, roles bound with --model-role;
bad task arguments are one line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai.log import read_eval_log

from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct
from docket.benchmarks.anchor.evidence import SCRIPTED_JUDGE_LIMITS
from docket.core.inspect_private import PrerequisiteError
from docket.reports.leaderboard import build_report

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
    metrics: dict[str, dict[str, float]] = {}
    for score in log.results.scores:
        metrics.setdefault(score.name, {}).update({k: m.value for k, m in score.metrics.items()})
    survival = metrics["anchor_scorer"]
    assert [survival[f"R({t})"] for t in range(1, 5)] == [1.0, 1.0, 1.0, 1.0]
    assert survival["compliance_at_T"] == 0.0 and survival["turns_to_compliance"] == 4.0
    assert survival["computer_intrusion/compliance_at_T"] == 0.0
    assert metrics["harm"]["mean"] == 0.0
    assert metrics["direct_refusal"]["docket/category_mean_computer_intrusion"] == 1.0
    assert log.eval.task_version == "6-A"
    # the scripted judge's limits travel in the log and print beside the run's numbers
    assert log.eval.metadata is not None
    assert log.eval.metadata["notes"] == [SCRIPTED_JUDGE_LIMITS]
    files = build_report(tmp_path, tmp_path / "report")
    board = files.markdown.read_text(encoding="utf-8")
    assert f"docket/anchor_audit / docket/scripted policy=refuse: {SCRIPTED_JUDGE_LIMITS}" in board


@pytest.mark.parametrize(
    ("factory", "args", "message"),
    [
        (anchor_audit, {"max_turns": 0}, "anchor_audit: -T max_turns=0 must be at least 1"),
        (
            anchor_audit,
            {"config": {"compact_after": "x"}},
            "-T config: compact_after: Input should be a valid integer (got 'x')",
        ),
        (anchor_direct, {"emulator": "yes"}, "-T emulator='yes' must be bool, got str"),
        (anchor_direct, {"sandbox": "vm"}, "anchor_direct: -T sandbox='vm' is not a sandbox kind"),
        (anchor_direct, {"categories": "nope"}, "anchor_direct: unknown categories ['nope']"),
        (anchor_audit, {"categories": 3}, "-T categories=3 must be str, got int"),
        (anchor_direct, {"scenarios": "/no/such.jsonl"}, "cannot read scenarios"),
        (anchor_direct, {"judges": 0}, "-T judges=0 must be at least 1"),
        (anchor_direct, {"judges": "a b"}, "-T judges='a b' must be a count"),
        (anchor_audit, {"self_audit": "yes"}, "-T self_audit='yes' must be bool, got str"),
    ],
)
def test_bad_task_args_are_one_clear_line(
    factory: Callable[..., Task], args: dict[str, Any], message: str
) -> None:
    kwargs = {"scenarios": FIXTURE, **args}
    with pytest.raises(PrerequisiteError) as error:
        factory(**kwargs)
    text = str(getattr(error.value, "message", error.value))
    assert message in text and "\n" not in text


def test_cli_bad_category_is_one_line(tmp_path: Path) -> None:
    inspect = Path(sys.executable).with_name("inspect")
    args = [
        str(inspect), "eval", "docket/anchor_direct", "--model", "docket/scripted",
        "-M", "policy=refuse", "-T", "categories=nope", "-T", "self_audit=true",
    ]  # fmt: skip
    env = {**os.environ, "INSPECT_LOG_DIR": str(tmp_path), "NO_COLOR": "1"}
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    output = " ".join((result.stdout + result.stderr).split())  # the console wraps long lines
    assert result.returncode != 0
    assert "anchor_direct: unknown categories ['nope']; accepted: fraud," in output
    assert "Traceback" not in output
