"""No-reasoning attackers of `docket/spatial_relations` (README.md: "Attackers").

Neither looks at where the objects are:

- `row_parity`: yes on even rows, no on odd ones (the label pattern of version 1, whose answers
  alternated by construction);
- `image_frame`: answers from where the objects appear in the image (`-T input=text`'s
  coordinates), without undoing the view: the relation read in the picture's frame, not the
  board's;
- `surface_booster`: gradient boosting (scikit-learn) over the row's surface features: the row's
  index and parity, the asked relation, both colours and shapes, which object the description
  lists first, and the view pose. It is trained on a freshly generated split
  (`evaluation_split(ATTACK_TRAIN_SIZE, ATTACK_SEED)`), never on the evaluated one.

Chance is the best constant answer on the split: 0.5 on the shipped set (50 yes, 50 no).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from docket.benchmarks.spatial_relations.dataset import (
    RELATIONS,
    Row,
    Scene,
    evaluation_split,
)
from docket.benchmarks.spatial_relations.render import COLOURS, Pose

ATTACK_SEED = 20260722
ATTACK_TRAIN_SIZE = 400
MEMORY_SCENES = 4000
SHAPES = ("disc", "square")


def chance(answers: Sequence[str]) -> float:
    """The best constant answer's accuracy (the majority answer's share).

    Args:
        answers: The gold answers of a split.

    Returns:
        The majority answer's share, 0.0 for an empty split.
    """
    return max(Counter(answers).values()) / len(answers) if answers else 0.0


def accuracy(predictions: Sequence[str], answers: Sequence[str]) -> float:
    """Share of predictions equal to the gold answers.

    Args:
        predictions: One answer per row.
        answers: The gold answers, in the same order.

    Returns:
        The accuracy (0.0 for an empty split).
    """
    pairs = list(zip(predictions, answers, strict=True))
    return sum(p == a for p, a in pairs) / len(pairs) if pairs else 0.0


def row_parity(count: int) -> list[str]:
    """Yes on even rows, no on odd rows, whatever the scene.

    Args:
        count: Rows in the split.

    Returns:
        One answer per row.
    """
    return ["yes" if i % 2 == 0 else "no" for i in range(count)]


def image_frame(rows: Sequence[Row]) -> list[str]:
    """The asked relation read between the objects' image positions, the view not undone.

    Args:
        rows: The split's rows (each with its view pose and the objects' board positions).

    Returns:
        One answer per row.
    """
    answers = []
    for row in rows:
        subject, relation, reference = _parts(row.question)
        pose = Pose(*row.pose)
        seen = {colour: pose.apply(centre) for colour, _, centre in row.objects}
        axis, sign = RELATIONS[relation]
        holds = sign * (seen[subject][axis] - seen[reference][axis]) > 0
        answers.append("yes" if holds else "no")
    return answers


def _parts(question: str) -> tuple[str, str, str]:
    """Subject colour, relation and reference colour of a question (surface parse)."""
    head = question.split("is the ", 1)[1]
    subject, rest = head.split(" object ", 1)
    relation = next(r for r in RELATIONS if rest.startswith(r + " "))
    reference = rest[len(relation) :].split("the ", 1)[1].split(" object", 1)[0]
    return subject, relation, reference


def surface_features(
    index: int,
    question: str,
    objects: Sequence[tuple[str, str]],
    pose: Sequence[float],
) -> list[float]:
    """Features that name no position: index, parity, relation, colours, shapes, order, pose.

    Args:
        index: The row's position in its split.
        question: The question text.
        objects: (colour, shape) of each object, in the order the description lists them.
        pose: The view pose's six parameters.

    Returns:
        A flat feature vector.
    """
    subject, relation, reference = _parts(question)
    colours, shapes = sorted(COLOURS), dict(objects)
    relation_hot = [float(relation == r) for r in sorted(RELATIONS)]
    return [
        float(index),
        float(index % 2),
        *relation_hot,
        float(colours.index(subject)),
        float(colours.index(reference)),
        float(SHAPES.index(shapes[subject])),
        float(SHAPES.index(shapes[reference])),
        float(objects[0][0] == subject),
        *map(float, pose),
    ]


def _scene_features(index: int, scene: Scene) -> list[float]:
    objects = [(o.colour, o.shape) for o in scene.objects]
    return surface_features(index, scene.question, objects, scene.pose.as_list())


def _row_features(index: int, row: Row) -> list[float]:
    objects = [(colour, shape) for colour, shape, _ in row.objects]
    return surface_features(index, row.question, objects, row.pose)


def surface_booster(rows: Sequence[Row], seed: int = 0) -> list[str]:
    """Gradient boosting over `surface_features`, trained on a freshly generated split.

    Args:
        rows: The evaluated split, in its order.
        seed: The booster's random state.

    Returns:
        One predicted answer per row.
    """
    from sklearn.ensemble import GradientBoostingClassifier

    train = evaluation_split(ATTACK_TRAIN_SIZE, ATTACK_SEED)
    model = GradientBoostingClassifier(random_state=seed)
    model.fit([_scene_features(i, s) for i, s in enumerate(train)], [s.answer for s in train])
    return [str(p) for p in model.predict([_row_features(i, r) for i, r in enumerate(rows)])]


def question_memory(rows: Sequence[Row], train: Sequence[Scene] | None = None) -> list[str]:
    """Answer each row by the answer its question text gets most often in a freshly generated
    split (the questions are templated, so each recurs there with other scenes); never looks
    at the scene.

    Args:
        rows: The evaluated split.
        train: Train scenes (default: `evaluation_split(MEMORY_SCENES, ATTACK_SEED)`).

    Returns:
        One answer per row ("yes" for a question the train split never asks).
    """
    if train is None:
        train = evaluation_split(MEMORY_SCENES, ATTACK_SEED)
    seen: dict[str, Counter[str]] = {}
    for scene in train:
        seen.setdefault(scene.question, Counter())[scene.answer] += 1
    return [
        max(sorted(seen[r.question]), key=seen[r.question].__getitem__)
        if r.question in seen
        else "yes"
        for r in rows
    ]
