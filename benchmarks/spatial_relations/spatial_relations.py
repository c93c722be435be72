"""`docket/spatial_relations`: is one object left of / right of / above / below another, in the
board's own frame, with the board seen under a random affine view (`-T view=random`) or head-on
(`-T view=board`, the control without a pose).

AffIn-Space: `inspect eval docket/spatial_relations --model docket/local/RUN/affin -M
method=affin`; the same tiny model trained without it: `--model docket/local/RUN/base`
(both from `train_affin.py`). See README.md.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, Content, ContentImage, ContentText, GenerateConfig
from inspect_ai.scorer import pattern
from inspect_ai.solver import generate

import docket.benchmarks.spatial_relations.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.spatial_relations.dataset import DATA, describe, load
from docket.benchmarks.spatial_relations.prompts import ANSWER_PATTERN
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError
from docket.core.options import checked, one_of, positive
from docket.core.results_tables import attacker_scores, chance_metadata
from docket.core.splits import files_digest, split_metadata

VERSION = "1-B"
#: Every blind attacker's accuracy on the shipped scenes (`scripts/chance.py`): the task records
#: the strongest as its chance row (metadata `chance`).
CHANCE = Path(__file__).resolve().parent / "results" / "chance.json"
VIEWS = ("random", "board")
INPUTS = ("image", "text")
TAGS = ["vision", "spatial-reasoning", "affine-invariance"]


def samples(view: str, folder: Path = DATA, given: str = "image") -> list[Sample]:
    """One sample per scene: the image (posed or head-on), or its description in text, then
    the question."""
    out = []
    for row in load(folder):
        image = row.image if view == "random" else row.board_image
        content: list[Content]
        if given == "text":
            content = [ContentText(text=f"{describe(row, view)}\n\n{row.question}")]
        elif not image.is_file():
            raise PrerequisiteError(f"spatial_relations: image not found: {image}")
        else:
            content = [ContentImage(image=str(image)), ContentText(text=row.question)]
        out.append(
            Sample(
                id=row.id,
                input=[ChatMessageUser(content=content)],
                target=row.answer,
                metadata={"relation": row.relation, "pose": row.pose},
            )
        )
    return out


@task
def spatial_relations(
    view: str = "random", input: str = "image", data: str | None = None, max_tokens: int = 4
) -> Task:
    """Relative positions of two objects on a board, asked in the board's frame.

    Args:
        view: `random` (the board under a random affine view) or `board` (head-on, no pose).
        input: `image` (the rendered view) or `text` (where each thing appears in image
            coordinates, for models without vision).
        data: A folder with `samples.jsonl` and `images/` (default: the shipped set), such as
            a private split from `docket generate spatial_relations --seed SECRET --out DIR`.
        max_tokens: Tokens each answer may use.

    Returns:
        The task: board questions answered by `generate()`, scored by the `ANSWER:` pattern.
    """
    name = "spatial_relations"
    chosen = one_of(name, "view", view, VIEWS)
    given = one_of(name, "input", input, INPUTS)
    folder = Path(checked(name, "data", data, str)) if data is not None else DATA
    h = headline("pattern", "accuracy", direction="higher", value="binary")
    return Task(
        dataset=MemoryDataset(
            samples(chosen, folder, given), name=f"spatial_relations_{chosen}_{given}"
        ),
        solver=generate(),
        scorer=pattern(ANSWER_PATTERN),
        config=GenerateConfig(max_tokens=positive(name, "max_tokens", max_tokens)),
        version=VERSION,
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": "spatial_relations",
            "view": chosen,
            "input": given,
            **split_metadata(files_digest(folder), generated=folder != DATA, name=folder.name),
            **chance_metadata(CHANCE, lambda rows: attacker_scores(rows, "accuracy")),
        },
        tags=TAGS,
    )
