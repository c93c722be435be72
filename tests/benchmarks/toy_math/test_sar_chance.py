"""toy_math_sar's chance row is the strongest blind student, measured (issue #53 item 3)."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from docket.benchmarks.toy_math.dataset import (
    HELD_TEST,
    SPLITS,
    begins_with,
    chains,
    split_chains,
)
from docket.benchmarks.toy_math.reference import Chain
from docket.benchmarks.toy_math.sar_attacks import (
    CONSTANT_REPLY,
    Row,
    attack_rows,
    expected_prior_yield,
    fit_chains,
    guess_yield,
    prefix_memory,
    step_majority,
    verified_share,
    written,
)
from tests.benchmarks.scripts import readme_block_of_results

SEVEN = Chain(7, (("+", 5), ("*", 3)))


def never(chain: Chain) -> list[int]:
    """A fallback guess that is never a step's result."""
    return [-1] * len(chain.steps)


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return attack_rows()


def test_blind_students_on_the_default_problems(rows: list[Row]) -> None:
    # 0, 0, 2 and 6 of the 100 problems; step_prior is an exact expectation
    assert rows == [
        Row("constant", 0.0),
        Row("step_majority", 0.0),
        Row("step_prior", 0.000507),
        Row("forest", 0.02),
        Row("prefix_memory", 0.06),
    ]


def test_the_readme_table_is_the_committed_results(rows: list[Row]) -> None:
    results, rendered = readme_block_of_results("benchmarks/toy_math/scripts/sar_chance.py")
    assert rendered
    assert results["attackers"] == [asdict(row) for row in rows]
    assert results["oracle"] == 1.0 and results["fitted"] == len(fit_chains())


def test_the_task_verifier_decides_a_blind_trace() -> None:
    assert written(SEVEN, [12, 36]) == "7+5=12\n12*3=36\nANSWER: 36"
    assert verified_share([written(SEVEN, [12, 36])], [SEVEN]) == 1.0
    assert verified_share([written(SEVEN, [12, 35])], [SEVEN]) == 0.0
    assert verified_share([written(SEVEN, [13, 39])], [SEVEN]) == 0.0  # consistent, wrong
    assert verified_share([CONSTANT_REPLY], [SEVEN]) == 0.0  # no step stated


def test_known_yields_on_constructed_chains() -> None:
    one = Chain(1, (("+", 1), ("+", 1)))  # results 2, 3
    two = Chain(2, (("+", 1), ("+", 1)))  # results 3, 4
    # position frequencies {2: 1/2, 3: 1/2} and {3: 1/2, 4: 1/2}: each problem 1/4
    assert expected_prior_yield([one, two], [one, two]) == 0.25
    # the majority (first of tied results) is 2 then 3: right for `one` only
    assert guess_yield(step_majority([one, two]), [one, two]) == 0.5
    # a recall of the problems themselves verifies each; recalling only a longer chain that
    # begins like `SEVEN` verifies it too, and a fallback that is always wrong verifies nothing
    assert guess_yield(prefix_memory([one, two], never), [one, two]) == 1.0
    longer = Chain(7, (("+", 5), ("*", 3), ("-", 1)))
    assert guess_yield(prefix_memory([longer], never), [SEVEN]) == 1.0
    assert guess_yield(prefix_memory([longer], never), [one]) == 0.0


def test_the_students_recall_every_sar_problem_when_fitted_on_them() -> None:
    problems = split_chains("train", 50)
    assert attack_rows(problems, problems)[-1] == Row("prefix_memory", 1.0)


def test_no_pretraining_chain_is_or_begins_with_a_train_or_test_problem() -> None:
    """2-C: 27 of the first 100 train problems were pretraining problems under 2-B."""
    held = set(chains(HELD_TEST, SPLITS["test"])) | set(split_chains("train", 1000))
    pretrain = split_chains("pretrain", 5000)
    assert len(set(pretrain)) == 5000
    assert not [c for c in pretrain if begins_with(c, held)]
    assert not set(fit_chains()) & set(split_chains("train", 1000))


def test_recall_stays_below_the_toy_math_chance_row() -> None:
    """The same recall on toy_math's test answers: fitted on train and pretrain, 11 of the 200
    test problems (0.310 under 2-B's pretrain split), below the forest's 0.060 chance row."""
    test = split_chains("test", 200)
    fit = split_chains("train", 1000) + split_chains("pretrain", 5000)
    guess = prefix_memory(fit, never)
    assert sum(guess(c)[-1] == c.answer for c in test) / len(test) == 0.055
