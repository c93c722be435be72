"""CORRECT's chance row and its own learned attacker; no test question repeats a train question.

The README's attacker table is generated from `results/attackers.json`
(`benchmarks/correct/scripts/chance.py`); these tests check that the README holds that table,
that the chance row is the strongest attacker in the file, that the shape-neighbour attacker
(`shapes.ShapeNeighbour`) stays near it, and the deduplication of the generator.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from docket.benchmarks.correct.attack import evaluate
from docket.benchmarks.correct.chance import ATTACKERS, TABLE, chance, render
from docket.benchmarks.correct.dataset import SPLIT_FILE, load_trajectories, select
from docket.benchmarks.correct.shapes import ShapeNeighbour, shape
from docket.benchmarks.correct.simulator.generate import generate_split, question_key
from docket.benchmarks.correct.simulator.records import Step, Trajectory

#: How far above the chance row the shape neighbour may score on the 400 test trajectories it is
#: checked on: two standard errors of an accuracy near 0.2 on 400 items (2 x 0.02).
MARGIN = 0.04


def test_the_shipped_file_holds_no_question_twice() -> None:
    trajectories = load_trajectories()
    keys = Counter(question_key(t.question) for t in trajectories)
    assert max(keys.values()) == 1
    train = {question_key(t.question) for t in select(trajectories, "train")}
    assert not [t.id for t in select(trajectories, "test") if question_key(t.question) in train]


def test_the_key_strips_irrelevant_sentences_and_spaces_but_keeps_numbers() -> None:
    base = "What is 12 plus 30?"
    noisy = (
        "The weather was mild today.  What is 12 plus   30? The parking lot has room for 7 cars."
    )
    assert question_key(noisy) == question_key(base) == base
    assert question_key("What is 12 plus 31?") != question_key(base)


def test_generate_split_draws_another_variant_for_a_held_question() -> None:
    first = generate_split(3, seed=41)
    assert len({question_key(t.question) for t in first}) == 3
    taken = frozenset({question_key(first[0].question)})
    again = generate_split(3, seed=41, taken=taken)
    assert question_key(again[0].question) not in taken
    assert again[0].id == first[0].id and again[1:] == first[1:]


def test_the_readme_table_is_the_results_file() -> None:
    results = TABLE.load()
    assert TABLE.held() == render(results)
    name, row = chance(results)
    shipped = results["splits"]["shipped"]
    assert set(shipped) == set(ATTACKERS)
    assert row["step"] == max(r["step"] for r in shipped.values())
    assert f"{ATTACKERS[name][0]} (**chance row**)" in render(results)


def test_shape_is_agents_and_masked_templates() -> None:
    trajectory = select(load_trajectories(), "test")[0]
    tokens = shape(trajectory)
    assert len(tokens) == len(trajectory.history)
    assert all(
        tok.startswith(f"{s.name}:") for tok, s in zip(tokens, trajectory.history, strict=True)
    )
    assert not any(c.isdigit() for tok in tokens for c in tok)


def test_shape_neighbour_learns_a_planted_shape() -> None:
    """Control: when the mistake step alone has its own agent and template, the neighbours find
    it in every test trajectory."""

    def planted(t: Trajectory) -> Trajectory:
        history = list(t.history)
        history[t.mistake_step] = Step("Marker", "assistant", "marked turn")
        return replace(t, history=tuple(history))

    everything = load_trajectories()
    train = [planted(t) for t in select(everything, "train")[:200]]
    test = [planted(t) for t in select(everything, "test")[:100]]
    assert evaluate(ShapeNeighbour().fit(train).predict_all(test), test)["step"] == 1.0


def test_shape_neighbour_stays_near_the_chance_row() -> None:
    everything = load_trajectories()
    train, test = select(everything, "train"), select(everything, "test")[:400]
    scored = evaluate(ShapeNeighbour().fit(train).predict_all(test), test)
    _, row = chance(TABLE.load())
    assert scored["step"] <= row["step"] + MARGIN, (scored, row)


def test_a_private_split_repeats_no_shipped_question(tmp_path: Path) -> None:
    from docket.benchmarks.correct.generated import generate_split as private_split

    private_split(7, tmp_path, 4)
    shipped = {question_key(t.question) for t in load_trajectories()}
    rows = load_trajectories(str(tmp_path / SPLIT_FILE))
    assert len(rows) == 4 and not {question_key(t.question) for t in rows} & shipped
