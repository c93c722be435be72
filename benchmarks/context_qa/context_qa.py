"""`docket/context_qa`: one-word questions about short made-up profiles, with the context given
in the prompt (`-T context=prompt`), named only by its id (`reference`, for SHINE adapters), or
absent (`none`).

SHINE: `inspect eval docket/context_qa -T context=reference --model docket/local/RUN -M
method=shine -M context=CONTEXTS` where CONTEXTS is the shipped `data/contexts.jsonl` (or
`-T data=DIR`'s); the same run without `-M method=shine` is the no-context baseline, and
`-T context=prompt` in-context prompting. See README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import exact, f1
from inspect_ai.solver import generate

import docket.benchmarks.context_qa.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.context_qa.attacks import TEXT_FREE
from docket.benchmarks.context_qa.dataset import CONTEXTS_FILE, DATA, QUESTIONS_FILE, load
from docket.benchmarks.context_qa.prompts import PROMPTS, render
from docket.core.headline import headline
from docket.core.options import checked, one_of, positive
from docket.core.results_tables import attacker_scores, chance_metadata
from docket.core.splits import files_digest, split_metadata

VERSION = "2-A"
#: Every attacker's F1 on the shipped questions (`scripts/chance.py`).
CHANCE = Path(__file__).resolve().parent / "results" / "chance.json"
TAGS = ["context", "question-answering", "adaptation", "hypernetwork"]


def samples(mode: str, folder: Path = DATA) -> list[Sample]:
    """One sample per question; metadata keeps the context id, attribute and fact position."""
    contexts, questions = load(folder)
    return [
        Sample(
            id=q.id,
            input=render(
                mode, context=contexts[q.context_id], context_id=q.context_id, question=q.question
            ),
            target=q.answer,
            metadata={
                "context_id": q.context_id,
                "attribute": q.attribute,
                "position": q.position,
            },
        )
        for q in questions
    ]


def chance(mode: str) -> dict[str, Any]:
    """Task metadata `chance`: the condition's chance row on the headline (F1, the shipped
    questions): the best attacker of all with the text in the prompt, the best that never reads
    it (`attacks.TEXT_FREE`) for `reference` and `none`."""

    def rows(found: list[dict[str, Any]]) -> list[tuple[str, float]]:
        playable = [r for r in found if mode == "prompt" or r["name"] in TEXT_FREE]
        return attacker_scores(playable, "f1")

    return chance_metadata(CHANCE, rows)


@task
def context_qa(context: str = "prompt", data: str | None = None, max_tokens: int = 8) -> Task:
    """Answer one-word questions about a short context.

    Args:
        context: How the context reaches the model: `prompt` (in the prompt), `reference`
            (only `[context: ID]`; a SHINE model turns the context into an adapter) or `none`.
        data: A folder with `contexts.jsonl` and `questions.jsonl` (default: the shipped set),
            such as a private split from `docket generate context_qa --seed SECRET --out DIR`.
        max_tokens: Tokens each answer may use.

    Returns:
        The task: questions answered by `generate()`, scored by token F1 and exact match.
    """
    name = "context_qa"
    mode = one_of(name, "context", context, tuple(PROMPTS))
    folder = Path(checked(name, "data", data, str)) if data is not None else DATA
    h = headline("f1", "mean", direction="higher", value="continuous")
    files = [folder / CONTEXTS_FILE.name, folder / QUESTIONS_FILE.name]
    split = split_metadata(files_digest(folder, files), generated=folder != DATA, name=folder.name)
    return Task(
        dataset=MemoryDataset(samples(mode, folder), name=f"context_qa_{mode}"),
        solver=generate(),
        scorer=[f1(), exact()],
        config=GenerateConfig(max_tokens=positive(name, "max_tokens", max_tokens)),
        version=VERSION,
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": "context_qa",
            "context": mode,
            **split,
            **chance(mode),
        },
        tags=TAGS,
    )
