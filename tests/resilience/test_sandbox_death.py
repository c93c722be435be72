"""A bwrap sandbox that dies mid-sample fails that sample only, with one clear error."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import anyio
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import requires_bwrap

pytestmark = requires_bwrap


def _pids_running(marker: str) -> list[int]:
    """Host pids whose command line holds `marker` (only our own sandbox's processes do)."""
    pids: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


async def _kill_sandbox(env: BwrapSandboxEnvironment, marker: str) -> None:
    """What an OOM killer does to the sandbox's pid 1 (the exec service) mid-command."""
    with anyio.fail_after(20):
        while not _pids_running(marker):
            await anyio.sleep(0.05)
    os.kill(env.session.child_pid, signal.SIGKILL)


def _pid_is_another_evaluators(pid: int) -> bool:
    """Whether a sandbox service belongs to another process (other tests may run in parallel)."""
    try:
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        grandparent = int(Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return True  # already gone
    return grandparent != os.getpid()


@solver
def _work_then_maybe_die() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        box = sandbox()
        assert (await box.exec(["sh", "-c", "echo ok > note"])).success
        if state.sample_id == "doomed":
            marker = f"docket_doomed_{uuid.uuid4().hex[:10]}"
            async with anyio.create_task_group() as tg:
                tg.start_soon(_kill_sandbox, box.as_type(BwrapSandboxEnvironment), marker)
                killed = await box.exec(["sh", "-c", f"sleep 30; : {marker}"], timeout=60)
            state.metadata["killed_returncode"] = killed.returncode
        state.output.completion = (await box.exec(["cat", "note"])).stdout
        return state

    return solve


@pytest.mark.bwrap
def test_dead_sandbox_fails_only_its_sample(tmp_path: Path) -> None:
    config = tmp_path / "bwrap.yaml"
    config.write_text("max_processes: 64\nmemory_mb: 512\n")
    task = Task(
        dataset=[Sample(id=i, input="go", target="ok") for i in ("first", "doomed", "last")],
        solver=_work_then_maybe_die(),
        scorer=includes(),
        sandbox=("bwrap", str(config)),
    )
    model = get_model("docket/scripted", policy="refuse")
    logs = eval(
        task, model=model, log_dir=str(tmp_path / "logs"), display="none", fail_on_error=False
    )
    log = logs[0]
    assert log.status == "success", log.error
    by_id = {str(s.id): s for s in log.samples or []}
    assert by_id["doomed"].error is not None
    message = by_id["doomed"].error.message
    assert "the bwrap sandbox of this sample is gone" in message and "\n" not in message
    for survivor in ("first", "last"):
        sample = by_id[survivor]
        assert sample.error is None and sample.scores is not None
        assert sample.scores["includes"].value == "C"
    assert log.results is not None and log.results.completed_samples == 2
    ours = [pid for pid in _pids_running("execd.py") if not _pid_is_another_evaluators(pid)]
    assert ours == []  # every sample's sandbox is gone, the dead one's too
