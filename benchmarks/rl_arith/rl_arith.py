"""`docket/rl_arith`: multi-digit arithmetic (`347+8=`, `90-6=`) scored by an exact verifier.

The benchmark of `python methods/rl/scripts/run.py --task arith`: a checkpoint it writes is
scored with `inspect eval docket/rl_arith -T style=bare --model docket/local/OUT/model`.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

import docket.benchmarks.rl_arith.reference  # noqa: F401  (registers its policies)
from docket.methods.rl.verifiable.task import VerifiableBenchmark, verifiable_task

ARITH = VerifiableBenchmark(
    name="rl_arith",
    family="arith",
    tags=("rl", "math", "verifiable"),
    shipped=Path(__file__).parent / "data" / "test.jsonl",
    chance=Path(__file__).parent / "results" / "chance.json",
)


@task
def rl_arith(data: str = "", style: str = "instructed", max_tokens: int | None = None) -> Task:
    """Addition and subtraction of a 3-digit and a 1-digit number; exact-match reward.

    Args:
        data: '' for the shipped 200-problem test split, or a JSONL path with the same fields
            (id, prompt, answer).
        style: `instructed` (default: one line asking for the number only, for chat models) or
            `bare` (the expression alone, as the RL runner trains: its checkpoints use this).
        max_tokens: Generation limit per answer (default 32; 5 with style=bare, what the RL
            runner samples).

    Returns:
        The task: arithmetic problems answered by `generate()`, scored by `verifiable_reward`.
    """
    return verifiable_task(ARITH, data, style, max_tokens)
