"""Problems of a verifiable-reward family as Inspect samples.

A benchmark's shipped file (its own `data/test.jsonl`) is the family's deterministic test split
(`TaskFamily.split("test", 200)`; the runner never trains on these prompts and evaluates on
them). `-T data=PATH` reads another JSONL with the same fields; a malformed row is one line
naming the file and row.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai.dataset import MemoryDataset, Sample

from docket.core.inspect_private import PrerequisiteError
from docket.methods.rl.tasks import family as task_family
from docket.methods.rl.tasks.base import Problem, read_jsonl

from .prompts import render


def load_problems(task: str, family: str, data: str, shipped: Path) -> list[Problem]:
    """Rows of `data` (default: the benchmark's shipped split), checked against the family's
    fields.

    Args:
        task: The task's name, which starts every error line.
        family: The task family whose checker reads the rows.
        data: `-T data=`: '' for the shipped split, or a JSONL path with the same fields.
        shipped: The benchmark's shipped test split.

    Returns:
        The problems.

    Raises:
        PrerequisiteError: The file is missing or empty, or a row is malformed (one line).
    """
    path = Path(data) if data else shipped
    if not path.is_file():
        raise PrerequisiteError(f"{task}: -T data={data!r} is not a file")
    try:
        rows = read_jsonl(path)
    except (ValueError, OSError) as error:
        raise PrerequisiteError(f"{task}: {error}") from None
    needed = ("answer",) if family == "arith" else ("constraints",)
    checker = task_family(family)
    for number, row in enumerate(rows, start=1):
        missing = [key for key in needed if key not in row]
        if missing:
            raise PrerequisiteError(f"{task}: {path}:{number}: missing {', '.join(missing)}")
        try:
            checker.reward(row, "")
        except (KeyError, TypeError, ValueError) as error:
            raise PrerequisiteError(f"{task}: {path}:{number}: malformed row ({error})") from None
    if not rows:
        raise PrerequisiteError(f"{task}: {path} has no rows")
    return rows


def reference_answer(family: str, problem: Problem) -> str:
    """One correct response (the exact answer, or the canonical satisfying word)."""
    if family == "arith":
        return str(problem["answer"])
    checker = task_family(family)
    return str(checker.canonical(problem["constraints"]))  # type: ignore[attr-defined]


def to_dataset(family: str, problems: list[Problem], style: str, name: str) -> MemoryDataset:
    """One sample per problem; the problem itself rides in the metadata for the scorer."""
    return MemoryDataset(
        [
            Sample(
                id=str(p["id"]),
                input=render(family, str(p["prompt"]), style),
                target=reference_answer(family, p),
                metadata={"problem": p, "family": family},
            )
            for p in problems
        ],
        name=name,
    )
