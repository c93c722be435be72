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
    version="1-B",  # the chance row (first-letter fill, 0.570) is stated; data and reward as 1-A
)


@task
def rl_constraints(data: str = "", style: str = "bare", max_tokens: int | None = None) -> Task:
    """Instruction following: `reward` 1 when every constraint holds, `cla` the share that does.

    Args:
        data: '' for the shipped 200-instruction test split, or a JSONL path with the same
            fields (id, prompt, constraints).
        style: `bare` (the constraint list alone, as the RL runner trains) or `instructed` (one
            line explaining the constraint syntax, for chat models).
        max_tokens: Generation limit per answer (default 8, what the RL runner samples; 32
            with style=instructed).

    Returns:
        The task: constrained instructions answered by `generate()`, scored by `verifiable_reward`.
    """
    return verifiable_task(CONSTRAINTS, data, style, max_tokens)
