"""A bwrap sandbox that dies mid-sample fails that sample only; the others are scored."""

from __future__ import annotations

import os
import signal
import tempfile
import uuid
from pathlib import Path

import anyio
import pytest
from bwrap_support import requires_bwrap
from docket.sandboxes.bwrap import workspace
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from docket.sandboxes.bwrap.workspace import remove_sample_dirs
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

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
    """What an OOM killer plus a temp cleaner do: SIGKILL the running command, drop the dirs."""
    with anyio.fail_after(20):
        while not (pids := _pids_running(marker)):
            await anyio.sleep(0.05)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    remove_sample_dirs(env.dirs)


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
def test_dead_sandbox_fails_only_its_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "bwrap.yaml"
    config.write_text("max_processes: 64\nmemory_mb: 512\n")
    base = Path(tempfile.mkdtemp(prefix="docket-test-death-"))
    base.chmod(0o755)  # as root the sandbox runs as an unprivileged host uid
    monkeypatch.setattr(workspace, "base_dir", lambda: base)
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
    assert "bwrap could not start the sandbox" in by_id["doomed"].error.message
    for survivor in ("first", "last"):
        sample = by_id[survivor]
        assert sample.error is None and sample.scores is not None
        assert sample.scores["includes"].value == "C"
    assert log.results is not None and log.results.completed_samples == 2
    assert list(base.iterdir()) == []  # every sample's directories are gone, the dead one too
    base.rmdir()
