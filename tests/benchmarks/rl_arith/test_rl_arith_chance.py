"""rl_arith's chance row is the strongest blind attacker, measured (issue #53 items 3, 6)."""

from __future__ import annotations

from docket.benchmarks.rl_arith.attacks import attack_rows, shipped, train_problems
from tests.benchmarks.scripts import readme_block_of_results


def test_blind_attackers_on_the_shipped_split() -> None:
    rows = {row.name: row.reward for row in attack_rows()}
    # 13 and 25 of the 200 test problems
    assert rows == {"first_operand": 0.065, "offset_prior": 0.125}


def test_the_attacker_trains_on_problems_the_test_split_does_not_hold() -> None:
    test = shipped()
    train = train_problems(test, 500)
    assert len(train) == 500 and not {p["prompt"] for p in train} & {p["prompt"] for p in test}
    # every test problem answered by a + b or a - b: an offset prior for '+' of b == 9 scores
    # exactly the share of '+' problems whose b is 9
    plus = [p for p in test if p["op"] == "+"]
    assert all(int(p["answer"]) == p["a"] + p["b"] for p in plus)


def test_the_readme_table_is_the_committed_results() -> None:
    rows, rendered = readme_block_of_results("benchmarks/rl_arith/scripts/chance.py")
    assert rendered
    assert rows == [{"name": r.name, "reward": r.reward} for r in attack_rows()]


def test_the_models_table_is_the_committed_results() -> None:
    results, rendered = readme_block_of_results("benchmarks/rl_arith/scripts/models_table.py")
    assert rendered
    rows = {row["model"].split("`")[1]: row for row in results["rows"]}
    # the scripted rows are exact: 200 of 200, 13 of 200 (as the attacker above), none
    assert rows["docket/scripted -M policy=rl_arith_oracle"]["reward"] == 1.0
    assert rows["docket/scripted -M policy=rl_arith_first_operand"]["reward"] == 13 / 200
    assert rows["docket/scripted -M policy=refuse"]["reward"] == 0.0
