"""`docket/smoke` end to end: scripted comply scores 1, refuse scores 0, bad args fail clearly.

With `tools=stateful`, a react agent (scripted policy `stateful`) drives Inspect's
bash_session and text_editor in the bwrap sandbox; the exact files and tool outputs are checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.model import ChatMessageTool, get_model

from docket.benchmarks.smoke.smoke import FILES, STATEFUL, smoke
from docket.core.inspect_private import PrerequisiteError

pytestmark = pytest.mark.bwrap


def _run(policy: str, log_dir: Path, tools: str = "bash") -> EvalLog:
    model = get_model("docket/scripted", policy=policy)
    [log] = inspect_eval(smoke(tools=tools), model=model, log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    return log


def _accuracy(policy: str, log_dir: Path, tools: str = "bash") -> float:
    log = _run(policy, log_dir, tools)
    expected = len(FILES) if tools == "bash" else len(STATEFUL)
    assert log.results is not None and log.results.completed_samples == expected
    return float(log.results.scores[0].metrics["accuracy"].value)


def test_comply_creates_every_file(tmp_path: Path) -> None:
    assert _accuracy("comply", tmp_path) == 1.0


def test_refuse_creates_nothing(tmp_path: Path) -> None:
    assert _accuracy("refuse", tmp_path) == 0.0


def _tool_outputs(sample: EvalSample) -> list[tuple[str, str]]:
    return [(m.function or "", m.text) for m in sample.messages if isinstance(m, ChatMessageTool)]


def test_stateful_tools_keep_the_shell_and_edit_files(tmp_path: Path) -> None:
    log = _run("stateful", tmp_path, tools="stateful")
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    for sample in log.samples or []:
        assert sample.scores and sample.scores["file_created"].value == "C", sample.scores
        outputs = _tool_outputs(sample)
        assert [name for name, _ in outputs[:5]] == [*["bash_session"] * 2, *["text_editor"] * 3]
        assert "/workspace/proj\n" in outputs[1][1]  # the second call ran where the first cd'd
        assert outputs[2][1] == "File created successfully at: /workspace/proj/notes.md"
        assert "1\tfinal draft" in outputs[3][1] and "1\tfinal draft" in outputs[4][1]


@pytest.mark.parametrize("policy", ["comply", "refuse"])
def test_stateful_baselines_score_zero(tmp_path: Path, policy: str) -> None:
    assert _accuracy(policy, tmp_path, tools="stateful") == 0.0


def _inspect(*args: str, log_dir: Path) -> subprocess.CompletedProcess[str]:
    inspect = Path(sys.executable).with_name("inspect")
    env = {**os.environ, "INSPECT_LOG_DIR": str(log_dir), "NO_COLOR": "1"}
    return subprocess.run(
        [str(inspect), "eval", "docket/smoke", "--display", "plain", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


def test_cli_run_is_green_offline(tmp_path: Path) -> None:
    result = _inspect("--model", "docket/scripted", "-M", "policy=comply", log_dir=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    [log_file] = list(tmp_path.glob("*.eval"))
    log = read_eval_log(str(log_file))
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    assert log.stats.model_usage["docket/scripted"].output_tokens > 0


def test_cli_bad_task_arg_is_one_clear_line(tmp_path: Path) -> None:
    result = _inspect(
        "--model",
        "docket/scripted",
        "-M",
        "policy=comply",
        "-T",
        "message_limit=lots",
        log_dir=tmp_path,
    )
    assert result.returncode != 0
    assert "-T message_limit='lots' must be int, got str" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"sandbox": "vm"}, "vm"),
        ({"message_limit": 0}, "-T message_limit=0 must be at least 1"),
        ({"timeout": "slow"}, "-T timeout='slow' must be int, got str"),
        ({"tools": "gui"}, "gui"),
    ],
)
def test_bad_task_args_raise_one_clear_error(args: dict[str, Any], message: str) -> None:
    with pytest.raises((PrerequisiteError, ValueError)) as error:
        smoke(**args)
    text = str(getattr(error.value, "message", error.value))
    assert message in text and "\n" not in text
