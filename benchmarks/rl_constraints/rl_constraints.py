"""`docket/rl_constraints`: a word under 2-3 mechanically checkable constraints (HiR's setting).

The benchmark of `python methods/rl/scripts/run.py --task constraints` (variants grpo and hir).
`-T data=DIR` runs a private split written by `docket generate rl_constraints` (`splits.py`).
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

import docket.benchmarks.rl_constraints.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.rl_constraints.splits import SPLIT_FILE
from docket.core.options import checked
from docket.core.splits import checked_split, files_digest, split_metadata
from docket.methods.rl.verifiable.task import VerifiableBenchmark, verifiable_task

CONSTRAINTS = VerifiableBenchmark(
    name="rl_constraints",
    family="constraints",
    tags=("rl", "instruction-following", "verifiable"),
    shipped=Path(__file__).parent / "data" / "test.jsonl",
    chance=Path(__file__).parent / "results" / "chance.json",
    version="2-B",  # 2-A's instructed default and chat answers; the chance row as 1-B
)


def resolve_split(data: str) -> tuple[str, dict[str, dict[str, str]]]:
    """The JSONL file `-T data` names and the `split_metadata` of the split it holds.

    Args:
        data: '' (the shipped split), a directory from `docket generate rl_constraints`, or a
            JSONL file.

    Returns:
        (the file for `verifiable_task`, '' for the shipped one; the split's metadata).

    Raises:
        PrerequisiteError: A directory without a valid manifest of this benchmark (one line).
    """
    shipped = CONSTRAINTS.shipped
    if not data:
        return "", split_metadata(files_digest(shipped.parent, [shipped]), generated=False)
    path = Path(data)
    if path.is_dir():
        manifest = checked_split(CONSTRAINTS.name, "rl_constraints", path)
        named = split_metadata(str(manifest["sha256"]), generated=True, name=path.name)
        return str(path / SPLIT_FILE), named
    if path.is_file():
        named = split_metadata(files_digest(path.parent, [path]), generated=True, name=path.name)
        return data, named
    return data, {}  # verifiable_task says in one line that it is not a file


@task
def rl_constraints(
    data: str = "", style: str = "instructed", max_tokens: int | None = None
) -> Task:
    """Instruction following: `reward` 1 when every constraint holds, `cla` the share that does.

    Args:
        data: '' for the shipped 200-instruction test split, a private split's directory from
            `docket generate rl_constraints --seed SECRET --out DIR`, or a JSONL path with the
            same fields (id, prompt, constraints).
        style: `instructed` (default: one line explaining the constraint syntax, for chat
            models) or `bare` (the constraint list alone, as the RL runner trains: its
            checkpoints use this).
        max_tokens: Generation limit per answer (default 32; 8 with style=bare, what the RL
            runner samples).

    Returns:
        The task: constrained instructions answered by `generate()`, scored by `verifiable_reward`.
    """
    path, split = resolve_split(checked(CONSTRAINTS.name, "data", data, str))
    built = verifiable_task(CONSTRAINTS, path, style, max_tokens)
    built.metadata = {**(built.metadata or {}), **split}
    return built
