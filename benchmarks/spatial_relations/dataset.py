"""Spatial-relations data: where two objects lie on the board, asked in the board's own frame.

`generate(n, seed)` draws scenes deterministically: two objects of distinct colours, a relation
(left of, right of, above, below) whose two sides differ by at least `MIN_GAP` on the asked
axis, the answer alternately yes and no, and a random view pose; the training script draws its
scenes from it with other seeds. An evaluation split is `evaluation_split(n, seed)`: the same
scenes in a seeded random order (so the row order carries no label pattern; yes and no stay
exactly balanced) under opaque ids (a hash of the scene's content, never its index or seed).
The shipped set (`data/samples.jsonl`, `data/images/`) is `evaluation_split(EVAL_SIZE,
EVAL_SEED)`; `generate_split` writes a private one for `docket generate spatial_relations`.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from docket.benchmarks.spatial_relations.render import (
    BOARD,
    COLOURS,
    IDENTITY,
    Pose,
    SceneObject,
    draw,
    random_pose,
)
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import read_jsonl, write_jsonl

DATA = Path(__file__).parent / "data"
SAMPLES_FILE = DATA / "samples.jsonl"
EVAL_SEED = 20260721
EVAL_SIZE = 100
MIN_GAP = 0.3
RELATIONS = {  # relation -> (axis, sign): "a REL b" holds when sign * (a - b) > 0 on axis
    "left of": (0, -1),
    "right of": (0, 1),
    "above": (1, -1),
    "below": (1, 1),
}
QUESTION = (
    "The white bar marks the top of the board. On the board, is the {a} object {relation} the "
    "{b} object? Answer yes or no."
)


@dataclass(frozen=True)
class Scene:
    """One question about one scene under one view."""

    id: str
    objects: tuple[SceneObject, ...]
    relation: str
    subject: str
    reference: str
    answer: str
    pose: Pose

    @property
    def question(self) -> str:
        return QUESTION.format(a=self.subject, relation=self.relation, b=self.reference)


def _holds(scene_objects: dict[str, SceneObject], a: str, b: str, relation: str) -> bool:
    axis, sign = RELATIONS[relation]
    return sign * (scene_objects[a].centre[axis] - scene_objects[b].centre[axis]) > 0


def make_scene(
    rng: random.Random, key: str, want_yes: bool, *, max_angle: float = 3.14159
) -> Scene:
    """A scene whose asked relation is clear (gap >= MIN_GAP) and whose answer is `want_yes`."""
    relation = rng.choice(sorted(RELATIONS))
    axis = RELATIONS[relation][0]
    while True:
        first, second = rng.sample(sorted(COLOURS), 2)
        centres = [(rng.uniform(-0.42, 0.42), rng.uniform(-0.28, 0.42)) for _ in range(2)]
        gap = abs(centres[0][axis] - centres[1][axis])
        apart = max(abs(centres[0][i] - centres[1][i]) for i in (0, 1)) > 0.3
        if gap >= MIN_GAP and apart:
            break
    objects = {
        colour: SceneObject(colour, rng.choice(("disc", "square")), centre)
        for colour, centre in zip((first, second), centres, strict=True)
    }
    subject, reference = first, second
    if _holds(objects, subject, reference, relation) != want_yes:
        subject, reference = reference, subject
    answer = "yes" if _holds(objects, subject, reference, relation) else "no"
    pose = random_pose(rng, max_angle=max_angle)
    return Scene(key, tuple(objects.values()), relation, subject, reference, answer, pose)


def generate(
    n: int, seed: int, *, max_angle: float = 3.14159, prefix: str = "scene"
) -> list[Scene]:
    """`n` scenes, deterministic in `seed`; yes and no alternate (exactly balanced)."""
    rng = random.Random(seed)
    return [make_scene(rng, f"{prefix}-{i:03d}", i % 2 == 0, max_angle=max_angle) for i in range(n)]


def opaque_id(scene: Scene) -> str:
    """`scene-` and 12 hex digits of the SHA-256 of the scene's content (question, objects,
    pose): stable for the same scene, and nothing a generator can be driven from."""
    content = {
        "question": scene.question,
        "objects": [asdict(o) for o in scene.objects],
        "pose": scene.pose.as_list(),
    }
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()
    return f"scene-{digest[:12]}"


def evaluation_split(n: int, seed: int, *, max_angle: float = 3.14159) -> list[Scene]:
    """`generate(n, seed)` in a seeded random order under opaque ids (no order or id cue).

    Args:
        n: Scenes (an even `n` keeps yes and no exactly balanced).
        seed: Seed of the scenes; the order comes from a generator seeded by it too.
        max_angle: Largest view rotation (radians).

    Returns:
        The scenes, shuffled, each with the id `opaque_id` gives it.
    """
    scenes = [replace(s, id=opaque_id(s)) for s in generate(n, seed, max_angle=max_angle)]
    random.Random(f"order:{seed}").shuffle(scenes)
    return scenes


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a fresh evaluation split (`docket generate spatial_relations`) for `-T data=DIR`.

    Args:
        seed: The secret seed's integer (`docket.core.splits.secret_seed`).
        out: The directory to write `samples.jsonl` and `images/` into.
        size: Scenes (default: the shipped set's `EVAL_SIZE`).
    """
    write(evaluation_split(size or EVAL_SIZE, seed), out)


def write(scenes: list[Scene], folder: Path, size: int = 64) -> None:
    """`samples.jsonl` plus `images/<id>.png` (the view) and `images/<id>-board.png` (the
    board seen without a view pose) under `folder`."""
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows = []
    for scene in scenes:
        draw(list(scene.objects), scene.pose, size).save(images / f"{scene.id}.png")
        draw(list(scene.objects), IDENTITY, size).save(images / f"{scene.id}-board.png")
        rows.append(
            {
                "id": scene.id,
                "question": scene.question,
                "answer": scene.answer,
                "relation": scene.relation,
                "pose": scene.pose.as_list(),
                "objects": [asdict(o) for o in scene.objects],
            }
        )
    write_jsonl(folder / SAMPLES_FILE.name, rows)


@dataclass(frozen=True)
class Row:
    """One evaluation row as shipped."""

    id: str
    question: str
    answer: str
    relation: str
    pose: list[float]
    image: Path
    board_image: Path
    objects: list[tuple[str, str, tuple[float, float]]]  # colour, shape, board centre


def load(folder: Path = DATA) -> list[Row]:
    """The rows of a data folder; one clear error naming the file, line and field."""
    path = folder / SAMPLES_FILE.name
    fields = ("id", "question", "answer", "relation", "pose", "objects")
    rows = []
    for number, raw in enumerate(read_jsonl(path, "spatial_relations", fields), 1):
        try:
            row = Row(
                id=str(raw["id"]),
                question=str(raw["question"]),
                answer=str(raw["answer"]),
                relation=str(raw["relation"]),
                pose=[float(v) for v in raw["pose"]],
                image=folder / "images" / f"{raw['id']}.png",
                board_image=folder / "images" / f"{raw['id']}-board.png",
                objects=[
                    (
                        str(o["colour"]),
                        str(o["shape"]),
                        (float(o["centre"][0]), float(o["centre"][1])),
                    )
                    for o in raw["objects"]
                ],
            )
        except (KeyError, TypeError, ValueError, IndexError) as ex:
            raise PrerequisiteError(
                f"spatial_relations: {path} row {number}: {type(ex).__name__}: {ex}"
            ) from None
        rows.append(row)
    return rows


def describe(row: Row, view: str) -> str:
    """The scene as text for models without vision (`-T input=text`): where the bar, the corner
    mark and each object appear in image coordinates, under the view's pose or head-on."""
    pose = Pose(*row.pose) if view == "random" else IDENTITY

    def at(point: tuple[float, float]) -> str:
        x, y = pose.apply(point)
        return f"({x:+.2f}, {y:+.2f})"

    b = BOARD
    lines = [
        "Image coordinates: x grows to the right, y grows downwards, both from -1 to 1.",
        f"The white bar runs from {at((-b, -b + 0.07))} to {at((b, -b + 0.07))}.",
        f"The cyan corner mark is at {at((-b + 0.1, -b + 0.1))}.",
    ]
    lines += [f"The {colour} {shape} is at {at(centre)}." for colour, shape, centre in row.objects]
    return "\n".join(lines)
