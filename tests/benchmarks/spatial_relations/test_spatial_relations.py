"""docket/spatial_relations: shipped data, images that match their geometry, the baseline's
exact score, a text reader that undoes the view, one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.spatial_relations.dataset import (
    DATA,
    EVAL_SEED,
    EVAL_SIZE,
    RELATIONS,
    Row,
    describe,
    evaluation_split,
    load,
    write,
)
from docket.benchmarks.spatial_relations.render import BOARD, COLOURS, Pose
from docket.benchmarks.spatial_relations.spatial_relations import samples
from docket.core.inspect_private import PrerequisiteError


def test_shipped_data_is_the_generator_output(tmp_path: Path) -> None:
    scenes = evaluation_split(EVAL_SIZE, EVAL_SEED)
    write(scenes[:3], tmp_path)  # the first rows of the shipped set
    shipped = (DATA / "samples.jsonl").read_text().splitlines()
    assert len(shipped) == EVAL_SIZE
    assert (tmp_path / "samples.jsonl").read_text().splitlines() == shipped[:3]
    for name in (f"{scenes[2].id}.png", f"{scenes[2].id}-board.png"):
        assert (tmp_path / "images" / name).read_bytes() == (DATA / "images" / name).read_bytes()
    rows = load()
    assert [r.id for r in rows] == [s.id for s in scenes]
    assert sum(r.answer == "yes" for r in rows) == EVAL_SIZE // 2  # exactly balanced
    assert {r.relation for r in rows} == set(RELATIONS)


def _board_answer(row: Row, subject: str, relation: str, reference: str) -> str:
    centres = {colour: centre for colour, _, centre in row.objects}
    axis, sign = RELATIONS[relation]
    return "yes" if sign * (centres[subject][axis] - centres[reference][axis]) > 0 else "no"


def _asked(question: str) -> tuple[str, str, str]:
    found = re.search(
        r"is the (\w+) object (left of|right of|above|below) the (\w+) object", question
    )
    assert found is not None
    return found.group(1), found.group(2), found.group(3)


def test_answers_hold_on_the_board_and_images_show_each_object_where_the_pose_puts_it() -> None:
    from PIL import Image

    for row in load():
        subject, relation, reference = _asked(row.question)
        assert _board_answer(row, subject, relation, reference) == row.answer
        pose = Pose(*row.pose)
        for image_path, view in ((row.image, pose), (row.board_image, Pose(*[0.0] * 6))):
            with Image.open(image_path) as image:
                rgb = image.convert("RGB")
                for colour, _, centre in row.objects:
                    x, y = view.apply(centre)
                    pixel = rgb.getpixel((int((x + 1) / 2 * 64), int((y + 1) / 2 * 64)))
                    assert pixel == COLOURS[colour], (row.id, colour)


def _read_text_scene(text: str) -> str:
    """Answers from the `-T input=text` description alone: the bar's ends and the corner mark
    fix the affine view, whose inverse brings each object back to the board's frame."""
    points = [tuple(map(float, p)) for p in re.findall(r"\(([-+.\d]+), ([-+.\d]+)\)", text)]
    b = BOARD
    board = np.array([(-b, -b + 0.07), (b, -b + 0.07), (-b + 0.1, -b + 0.1)])
    view = np.array(points[:3])
    solution = np.linalg.solve(np.hstack([board, np.ones((3, 1))]), view)  # [M^T; t]
    matrix, shift = solution[:2].T, solution[2]
    objects = re.findall(r"The (\w+) (?:disc|square) is at", text)
    on_board = {
        colour: np.linalg.solve(matrix, np.array(p) - shift)
        for colour, p in zip(objects, points[3:], strict=True)
    }
    subject, relation, reference = _asked(text)
    axis, sign = RELATIONS[relation]
    return "yes" if sign * (on_board[subject][axis] - on_board[reference][axis]) > 0 else "no"


def test_text_description_determines_the_answer_under_any_view() -> None:
    for row in load():
        for view in ("random", "board"):
            assert _read_text_scene(describe(row, view) + "\n" + row.question) == row.answer


def test_always_yes_baseline_scores_exactly_one_half(tmp_path: Path) -> None:
    log = inspect_eval(
        "docket/spatial_relations",
        model=get_model("docket/scripted", policy="spatial_always_yes"),
        limit=10,
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None and log.samples is not None
    assert log.results.scores[0].metrics["accuracy"].value == 0.5
    metadata = log.eval.metadata or {}
    assert metadata["benchmark"] == "spatial_relations" and metadata["view"] == "random"
    assert metadata["headline"]["direction"] == "higher"
    first_input = log.samples[0].input
    assert isinstance(first_input, list) and isinstance(first_input[0].content, list)
    content = first_input[0].content
    assert [c.type for c in content] == ["image", "text"]


def test_text_input_carries_the_description_then_the_question() -> None:
    row = load()[0]
    sample = samples("board", DATA, "text")[0]
    message = sample.input[0]
    assert not isinstance(message, str)
    assert message.text == describe(row, "board") + "\n\n" + row.question
    assert sample.target == row.answer and sample.metadata == {
        "relation": row.relation,
        "pose": row.pose,
    }


def test_bad_arguments_and_rows_are_one_line(tmp_path: Path) -> None:
    refuse = get_model("docket/scripted", policy="refuse")
    with pytest.raises(PrerequisiteError, match="-T view='side' is not accepted"):
        inspect_eval("docket/spatial_relations", model=refuse, task_args={"view": "side"})
    row = json.loads((DATA / "samples.jsonl").read_text().splitlines()[0])
    row["pose"] = "tilted"
    (tmp_path / "samples.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(PrerequisiteError, match=r"samples.jsonl row 1: ValueError"):
        load(tmp_path)
    row["pose"] = [0.0] * 6
    (tmp_path / "samples.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(PrerequisiteError, match=rf"image not found: .*{row['id']}.png"):
        inspect_eval("docket/spatial_relations", model=refuse, task_args={"data": str(tmp_path)})
