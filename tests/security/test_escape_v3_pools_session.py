"""Escape attempt (v3), through Inspect: at `--max-samples 2`, sample A exhausts four per-uid
pools at once (all but epoll, which has its own short test) from a lingering exec while sample B
uses `bash_session()`, `exec` and `write_file` (B's tool-support server is injected and started
during the attack)."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import bash_session
from inspect_ai.util import sandbox

from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import ready_file
from tests.security.test_escape_v3_pools import (
    _ATTACK,
    ATTACKS,
    CHECKS,
    EXPECTED_CHECK,
    LIMITS,
    pytestmark,  # noqa: F401  (root and bwrap only)
)

#: The pools A exhausts together, and the errno each attack must end with (epoll has its own
#: test, which lowers fs.epoll.max_user_watches for seconds, not for a whole eval).
POOLS = {
    "unix_fds": "ETOOMANYREFS",
    "inotify": "EMFILE",
    "pipe_pages": "EPERM",
    "signals": "EAGAIN",
}


def all_pools_attack() -> str:
    """One script exhausting every pool of POOLS, reporting `pool=ERRNO after N` lines."""
    bodies = [
        textwrap.dedent(ATTACKS[pool]).replace("def exhaust()", f"def exhaust_{pool}()")
        for pool in POOLS
    ]
    calls = " + ".join(f'"{pool}=" + exhaust_{pool}() + "\\n"' for pool in POOLS)
    return _ATTACK.replace("{body}", "\n".join([*bodies, f"def exhaust():\n    return {calls}"]))


@solver
def _starve_or_use(gate: dict[str, Any]) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for name in ("ready", "done"):
            gate.setdefault(name, anyio.Event())
        env = sandbox().as_type(BwrapSandboxEnvironment)
        if state.sample_id == "a":
            await _attack(env, state, gate)
        else:
            try:
                with anyio.fail_after(60):
                    await gate["ready"].wait()
                await _use_everything(env, state)
            finally:
                gate["done"].set()
        return state

    return solve


async def _attack(env: BwrapSandboxEnvironment, state: TaskState, gate: dict[str, Any]) -> None:
    async with anyio.create_task_group() as tg:

        async def linger() -> None:
            await env.exec(["python3", "-c", all_pools_attack()], timeout=120)

        tg.start_soon(linger)
        report = ready_file(env)
        deadline = time.monotonic() + 60
        while not report.exists() and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        state.metadata["report"] = report.read_text() if report.exists() else "never ready"
        gate["ready"].set()
        with anyio.move_on_after(90):
            await gate["done"].wait()
        tg.cancel_scope.cancel()


async def _use_everything(env: BwrapSandboxEnvironment, state: TaskState) -> None:
    shell = bash_session()
    typed = await shell(action="type_submit", input="echo $((6 * 7)) > answer; cat answer")
    await env.write_file("note.txt", "still writable")
    checks = {
        pool: (await env.exec(["python3", "-c", textwrap.dedent(CHECKS[pool])])).stdout
        for pool in POOLS
    }
    state.metadata["seen"] = {
        "typed": str(typed),
        "answer": await env.read_file("answer"),
        "note": await env.read_file("note.txt"),
        "checks": checks,
    }


@pytest.mark.escape(
    "Starve a concurrent sample's bash_session, exec and write_file through fds in flight, "
    "inotify, pipe pages and queued signals at once (--max-samples 2)",
    "each concurrent sample runs as a host uid of its own (host_uid_range)",
)
def test_bash_session_exec_and_write_file_of_b_survive_a(tmp_path: Path) -> None:
    gate: dict[str, Any] = {}
    config = tmp_path / "bwrap.yaml"
    config.write_text(yaml.safe_dump(LIMITS.model_dump(include={"memory_mb", "max_processes"})))
    task = Task(
        dataset=[Sample(input="attack", id="a"), Sample(input="use", id="b")],
        solver=_starve_or_use(gate),
        sandbox=("bwrap", str(config)),
    )
    model = get_model("docket/scripted", policy="refuse")
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none", max_samples=2)
    assert log.status == "success", log.error
    samples = {sample.id: sample for sample in log.samples or []}
    assert all(sample.error is None for sample in samples.values()), samples
    report = dict(
        line.split("=", 1) for line in samples["a"].metadata["report"].splitlines() if line
    )
    assert {pool: report[pool].split()[0] for pool in POOLS} == POOLS  # every pool ran out
    seen = samples["b"].metadata["seen"]
    assert "42" in seen["typed"] and seen["answer"] == "42\n"
    assert seen["note"] == "still writable"
    assert seen["checks"] == {pool: EXPECTED_CHECK[pool] for pool in POOLS}
