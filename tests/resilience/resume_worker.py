"""An eval-set of counted samples, run as a subprocess by test_resume.py (which kills it).

Usage: python resume_worker.py LOG_DIR. Each sample's solver appends its id to the file named by
$DOCKET_RESUME_RUN_FILE before answering. With $DOCKET_RESUME_HOLD=1, the samples after the
first `COMPLETE_FIRST` park (at most `HOLD_SECONDS`) so the run can be killed mid-way. Both
travel outside the task's arguments, so the killed run and the re-run are the same task.
"""

from __future__ import annotations

import os
import sys

import anyio
from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import exact
from inspect_ai.solver import Generate, Solver, TaskState, solver

SAMPLES = 12
COMPLETE_FIRST = 6
HOLD_SECONDS = 60.0


def sample_ids() -> list[str]:
    """Ids of the task's samples, in order."""
    return [f"s{i:02d}" for i in range(1, SAMPLES + 1)]


@solver
def counted() -> Solver:
    """Record that this sample ran, park it when asked to, then ask the model."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        with open(os.environ["DOCKET_RESUME_RUN_FILE"], "a", encoding="utf-8") as out:
            out.write(f"{state.sample_id}\n")
        held = os.environ.get("DOCKET_RESUME_HOLD") == "1"
        if held and sample_ids().index(str(state.sample_id)) >= COMPLETE_FIRST:
            await anyio.sleep(HOLD_SECONDS)
        return await generate(state)

    return solve


@task
def resumable() -> Task:
    """Counted samples whose answers the scripted `comply` policy gets right."""
    return Task(
        dataset=[Sample(id=i, input=f"Reply with '{i}'.", target=i) for i in sample_ids()],
        solver=counted(),
        scorer=exact(),
    )


def main(log_dir: str) -> int:
    ok, _logs = eval_set(
        resumable(),
        log_dir=log_dir,
        model=get_model("docket/scripted", policy="comply"),
        display="none",
        log_buffer=1,
        retry_attempts=0,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
