"""Inspect's injected tool support on bwrap: exec_remote, and a bash_session that keeps state."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import bash_session
from inspect_ai.util import sandbox

from tests.sandboxes.bwrap_support import requires_bwrap

pytestmark = requires_bwrap


@solver
def _use_the_tools() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        remote = await sandbox().exec_remote(
            ["sh", "-c", "cd /tmp && pwd && echo err >&2; exit 3"], stream=False
        )
        shell = bash_session()
        await shell(action="type_submit", input="cd /tmp; export KEPT=yes; sleep 30 &")
        later = await shell(action="type_submit", input="echo $PWD $KEPT; jobs | wc -l")
        plain = await sandbox().exec(["sh", "-c", "echo $KEPT; pwd"])
        state.metadata["seen"] = {
            "remote": [remote.returncode, remote.stdout, remote.stderr],
            "later": str(later),
            "plain": plain.stdout,
        }
        return state

    return solve


def test_exec_remote_and_bash_session_state(tmp_path: Path) -> None:
    task = Task(dataset=[Sample(input="go")], solver=_use_the_tools(), sandbox="bwrap")
    model = get_model("docket/scripted", policy="refuse")
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples or []
    assert sample.error is None, sample.error
    seen = sample.metadata["seen"]
    assert seen["remote"] == [3, "/tmp\n", "err\n"]
    assert "/tmp yes\n1\n" in seen["later"]  # cwd, environment and a background job kept
    assert seen["plain"] == "\n/workspace\n"  # a plain exec starts afresh, in the workspace
