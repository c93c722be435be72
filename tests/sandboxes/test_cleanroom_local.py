"""Inspect's `local` sandbox gets no clean room: it is the evaluator's own host.

The sweep other sandboxes get (`kill -9 -1` until only pid 1 is left) would, run there, end
every process the evaluator may signal (the evaluator itself included), and the room's link
sweep and `chmod` would touch the host's `/tmp`. `clean_room` refuses it in one line before
any command runs; a scorer that asks for a room there errors, it never passes. Every command
is intercepted here, so a regression fails the test instead of running on this host.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import ExecResult

from docket.benchmarks.smoke.smoke import file_created
from docket.core.inspect_private import LocalSandboxEnvironment
from docket.sandboxes import CleanRoomError, clean_room, end_agent_processes
from docket.sandboxes.cleanroom import NO_LOCAL_ROOM


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every command run in a `local` sandbox (none runs: each is recorded and answered)."""
    seen: list[list[str]] = []

    async def record(self: LocalSandboxEnvironment, cmd: list[str], **_: Any) -> ExecResult[str]:
        seen.append(list(cmd))
        return ExecResult(True, 0, "", "")

    monkeypatch.setattr(LocalSandboxEnvironment, "exec", record)
    return seen


@pytest.mark.parametrize("live", [False, True])
def test_clean_room_refuses_the_local_sandbox(commands: list[list[str]], live: bool) -> None:
    with pytest.raises(CleanRoomError) as raised:
        asyncio.run(clean_room(LocalSandboxEnvironment(), live=live))
    assert str(raised.value) == NO_LOCAL_ROOM
    assert commands == []


def test_ending_processes_refuses_the_local_sandbox(commands: list[list[str]]) -> None:
    with pytest.raises(CleanRoomError, match="evaluator's own host"):
        asyncio.run(end_agent_processes(LocalSandboxEnvironment()))
    assert commands == []


@solver
def _writes_the_file() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state  # the file is there from the sample's files: an honest agent's result

    return solve


def test_a_clean_room_scorer_on_the_local_sandbox_errors(
    commands: list[list[str]], tmp_path: Path
) -> None:
    sample = Sample(
        input="write hello.txt",
        metadata={"expect": {"hello.txt": "hi"}},
        files={"hello.txt": "hi"},
    )
    task = Task(dataset=[sample], solver=_writes_the_file(), scorer=file_created(), sandbox="local")
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "error"
    assert log.error is not None and NO_LOCAL_ROOM in log.error.message
    assert not any("kill" in " ".join(cmd) for cmd in commands)
