"""toy_math's chance row is the strongest blind attacker, measured (issue #53 items 3, 5, 6)."""

from __future__ import annotations

from docket.benchmarks.toy_math.attacks import Row, attack_rows, surface
from docket.benchmarks.toy_math.dataset import Chain, question, split_chains
from tests.benchmarks.scripts import readme_block_of_results


def test_blind_attackers_on_the_shipped_test_split() -> None:
    rows = {row.name: row.accuracy for row in attack_rows()}
    # 3, 6 and 12 of the 200 test problems
    assert rows == {"constant_zero": 0.015, "train_majority": 0.03, "forest": 0.06}


def test_the_forest_reads_numbers_only() -> None:
    assert surface(Chain(7, (("+", 5), ("*", 3)))) == [7, 2, 0, 2, 3, 5, 3, 0]
    # an attacker that memorises the train answers gets exactly the train-test overlap: none
    train = split_chains("train", 50)
    assert attack_rows(train, train)[2] == Row("forest", 1.0)


def test_train_and_test_problems_never_repeat() -> None:
    """Item 5: no test problem is a train or pretraining problem, as chains or as text."""
    test = split_chains("test", 200)
    seen = set(split_chains("train", 1000)) | set(split_chains("pretrain", 3000))
    assert not set(test) & seen
    assert not {question(c) for c in test} & {question(c) for c in seen}


def test_the_readme_table_is_the_committed_results() -> None:
    rows, rendered = readme_block_of_results("benchmarks/toy_math/scripts/chance.py")
    assert rendered
    assert rows == [{"name": r.name, "accuracy": r.accuracy} for r in attack_rows()]
