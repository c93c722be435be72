"""`docket/rl_constraints`: a word under 2-3 mechanically checkable constraints (HiR's setting).

The benchmark of `python methods/rl/scripts/run.py --task constraints` (variants grpo and hir).
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

import docket.benchmarks.rl_constraints.reference  # noqa: F401  (registers its policies)
from docket.methods.rl.verifiable.task import VerifiableBenchmark, verifiable_task

CONSTRAINTS = VerifiableBenchmark(
    name="rl_constraints",
    family="constraints",
    tags=("rl", "instruction-following", "verifiable"),
    shipped=Path(__file__).parent / "data" / "test.jsonl",
    version="2-B",  # 2-A's instructed default and chat answers; the chance row as 1-B
)


@task
def rl_constraints(
    data: str = "", style: str = "instructed", max_tokens: int | None = None
) -> Task:
    """Instruction following: `reward` 1 when every constraint holds, `cla` the share that does.

    Args:
        data: '' for the shipped 200-instruction test split, or a JSONL path with the same
            fields (id, prompt, constraints).
        style: `instructed` (default: one line explaining the constraint syntax, for chat
            models) or `bare` (the constraint list alone, as the RL runner trains: its
            checkpoints use this).
        max_tokens: Generation limit per answer (default 32; 8 with style=bare, what the RL
            runner samples).

    Returns:
        The task: constrained instructions answered by `generate()`, scored by `verifiable_reward`.
    """
    return verifiable_task(CONSTRAINTS, data, style, max_tokens)
