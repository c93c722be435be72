"""docket/spatial_relations against no-reasoning attackers: row order and ids carry no label,
a surface booster stays at chance, generated private splits are fresh and recorded."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.spatial_relations import attacks
from docket.benchmarks.spatial_relations.dataset import DATA, EVAL_SIZE, generate, load
from docket.cli import main
from docket.core.splits import MANIFEST, SPLIT_KEY, files_digest


def test_chance_and_attacks_on_a_split_with_known_answers() -> None:
    answers = ["yes", "no", "no", "yes"]
    assert attacks.chance(answers) == 0.5 and attacks.chance(["no", "no", "yes"]) == 2 / 3
    assert attacks.row_parity(4) == ["yes", "no", "yes", "no"]
    assert attacks.accuracy(attacks.row_parity(4), answers) == 0.5
    # version 1's alternating answers: the parity attack was perfect there
    assert attacks.accuracy(attacks.row_parity(100), [s.answer for s in generate(100, 1)]) == 1.0


def test_row_order_and_surface_features_stay_within_005_of_chance_on_the_shipped_set() -> None:
    rows = load()
    answers = [r.answer for r in rows]
    assert attacks.chance(answers) == 0.5
    assert attacks.accuracy(attacks.row_parity(len(rows)), answers) == 0.54
    assert attacks.accuracy(attacks.surface_booster(rows), answers) == 0.42
    assert attacks.accuracy(attacks.image_frame(rows), answers) == 0.53
    head_on = [replace(r, pose=[0.0] * 6) for r in rows]  # with no view the picture is the board
    assert attacks.accuracy(attacks.image_frame(head_on), answers) == 1.0


def test_no_prompt_id_is_an_index_or_a_seed_that_reproduces_the_scene() -> None:
    rows = load()
    for row in rows:
        assert re.fullmatch(r"scene-[0-9a-f]{12}", row.id), row.id
    shipped = {(r.question, tuple(r.pose)) for r in rows}
    for row in rows:  # read every number in the id as an index or a seed
        for number in {int(row.id[6:], 16), *map(int, re.findall(r"\d+", row.id))}:
            for scene in generate(1, number % 2**63):
                assert (scene.question, tuple(scene.pose.as_list())) not in shipped
        assert int(row.id[6:], 16) >= EVAL_SIZE  # not a row index either


def test_docket_generate_writes_a_fresh_balanced_split_the_task_names(tmp_path: Path) -> None:
    out = tmp_path / "private"
    command = ["generate", "spatial_relations", "--seed", "s3cret", "--out", str(out)]
    assert main([*command, "--size", "6"]) == 0
    rows = load(out)
    assert len(rows) == 6 and sum(r.answer == "yes" for r in rows) == 3
    shipped = {(r.question, tuple(r.pose)) for r in load()}
    assert not {(r.question, tuple(r.pose)) for r in rows} & shipped
    sha256 = json.loads((out / MANIFEST).read_text())["sha256"]
    assert sha256 == files_digest(out) and "s3cret" not in (out / MANIFEST).read_text()
    model = get_model("docket/scripted", policy="spatial_always_yes")
    log = inspect_eval(
        "docket/spatial_relations",
        model=model,
        task_args={"data": str(out), "input": "text"},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == 0.5
    assert (log.eval.metadata or {})[SPLIT_KEY] == {
        "sha256": sha256,
        "source": "generated",
        "name": "private",
    }
    default = inspect_eval(
        "docket/spatial_relations", model=model, limit=1, log_dir=str(tmp_path), display="none"
    )[0]
    assert (default.eval.metadata or {})[SPLIT_KEY]["sha256"] == files_digest(DATA)
    assert (default.eval.metadata or {})[SPLIT_KEY]["source"] == "shipped"


def test_a_memory_of_question_texts_stays_within_005_of_chance() -> None:
    """Item 6: the answer each templated question gets most often in 4 000 generated scenes,
    never looking at the scene."""
    rows = load()
    answers = [r.answer for r in rows]
    assert attacks.accuracy(attacks.question_memory(rows), answers) == 0.53
    # it repeats what train says for a question it has seen
    train = generate(4, 3)
    memory = attacks.question_memory([replace(rows[0], question=train[0].question)], train)
    assert memory == [train[0].answer]
