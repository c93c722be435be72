"""rl_constraints: the chance row is the strongest blind attacker, measured (#53 items 3, 5, 6)."""

from __future__ import annotations

from docket.benchmarks.rl_constraints.attacks import (
    Row,
    attack_rows,
    nearest_witness,
    one_hot,
    shipped,
    train_problems,
)
from tests.benchmarks.scripts import readme_block_of_results


def test_blind_attackers_on_the_shipped_split() -> None:
    rows = {row.name: row.reward for row in attack_rows()}
    # 15, 13, 114 and 133 of the 200 test instructions
    assert rows == {
        "constant": 0.075,
        "majority_witness": 0.065,
        "first_letter_fill": 0.57,
        "nearest_witness": 0.665,
    }


def test_the_lookup_stays_below_its_threshold() -> None:
    """Item 6. The lookup is the chance row (0.665); the threshold is that row plus 0.025 (5 of
    200 instructions): a train split that covers more of the 1530-instruction family (or test
    instructions leaking into it) raises it past the threshold and fails here."""
    assert attack_rows()[-1].reward < 0.665 + 0.025


def test_the_lookup_scores_one_when_the_answers_are_planted() -> None:
    test = shipped()
    assert attack_rows(train=test, test=test)[-1] == Row("nearest_witness", 1.0)
    assert nearest_witness(test[:3], test[:3]) == [str(p["witness"]) for p in test[:3]]
    assert sum(one_hot([{"kind": "len", "arg": "4"}, {"kind": "no", "arg": "a"}])) == 2


def test_no_test_instruction_is_a_train_instruction() -> None:
    """Item 5: exact and with the constraints sorted (the prompt order is fixed anyway)."""
    test, train = shipped(), train_problems()
    assert len({p["prompt"] for p in test}) == 200
    assert not {p["prompt"] for p in test} & {p["prompt"] for p in train}
    key = lambda p: tuple(sorted((c["kind"], c["arg"]) for c in p["constraints"]))  # noqa: E731
    assert not {key(p) for p in test} & {key(p) for p in train}


def test_the_readme_table_is_the_committed_results() -> None:
    rows, rendered = readme_block_of_results("benchmarks/rl_constraints/scripts/chance.py")
    assert rendered
    assert rows == [{"name": r.name, "reward": r.reward} for r in attack_rows()]


def test_the_models_table_is_the_committed_results() -> None:
    results, rendered = readme_block_of_results("benchmarks/rl_constraints/scripts/models_table.py")
    assert rendered
    rows = {row["model"].split("`")[1]: row for row in results["rows"]}
    # the scripted rows equal the chance table's attackers: 114 and 15 of 200
    first_letter = rows["docket/scripted -M policy=rl_constraints_first_letter"]
    assert (first_letter["reward"], first_letter["cla"]) == (114 / 200, 0.824)
    assert rows["docket/scripted -M policy=rl_constraints_constant"]["reward"] == 15 / 200
