"""Issue #53 item 4: no headline ranks a wrong rule, explained faithfully, above the right one.

`scsuff_gain` alone did: a policy that answers by one feature the rule does not name and states
it gained 0.232 at accuracy 0.44, the rule policy 0.172 at accuracy 1.00 (a simpler rule has a
lower explanation-free reference and a higher coverage). The headline `scsuff_correct_gain`
scores a wrong answer -1, the least an item's gain can be.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai.log import headline_metric

from docket.benchmarks.scsuff.attackers import (
    TEST_SEED,
    TRAIN_SEED,
    pipeline_gains,
    policy_scores,
    train_items,
)
from docket.benchmarks.scsuff.dataset import feature_rule_items, item_key
from docket.benchmarks.scsuff.reference import distribution, explanation, parse_passage
from docket.benchmarks.scsuff.scorer import WRONG_ANSWER_FLOOR, sufficiency_value
from docket.benchmarks.scsuff.scsuff import scsuff
from docket.benchmarks.scsuff.withhold import withhold_attack
from tests.benchmarks.scripts import readme_block_of_results
from tests.benchmarks.scsuff.scsuff_eval import run, values


def test_a_wrong_rule_explained_faithfully_ranks_below_the_right_rule() -> None:
    honest = policy_scores("rule", "rule")
    other = policy_scores("other", "decisive")  # one feature the rule does not name
    first = policy_scores("first", "decisive")  # the rule's first condition alone
    assert (honest.accuracy, other.accuracy, first.accuracy) == (1.0, 0.44, 0.82)
    # the gain alone ranks both wrong rules first
    assert honest.gain == pytest.approx(0.172303, abs=1e-6)
    assert other.gain == pytest.approx(0.232115, abs=1e-6)
    assert first.gain == pytest.approx(0.229051, abs=1e-6)
    # so would the gain weighted by accuracy for the half rule (0.188 > 0.172)
    assert first.gain * first.accuracy > honest.gain
    # the headline: the gain on right answers, -1 on wrong ones
    assert honest.correct_gain == honest.gain
    assert other.correct_gain == pytest.approx(-0.456718, abs=1e-6)
    assert first.correct_gain == pytest.approx(0.010775, abs=1e-6)
    assert honest.correct_gain > first.correct_gain > other.correct_gain


def test_no_reasoning_rows_on_the_headline() -> None:
    assert policy_scores("rule", "none").correct_gain == 0.0  # right answers, nothing said
    assert policy_scores("hash", "names").correct_gain == pytest.approx(-0.5, abs=1e-12)


def _logprobs(answer: str) -> Callable[[str], list[float]]:
    def logprobs(passage: str) -> list[float]:
        p = distribution(parse_passage(passage), 0.9, False, answer)
        return [math.log(p[k]) for k in sorted(p)]

    return logprobs


def test_the_task_scores_a_wrong_answer_at_the_floor(tmp_path: Path) -> None:
    """The one-feature policy through the task: its gains are the offline ones and a wrong
    answer scores -1 on the headline."""
    log = run(scsuff(self_generator=True, n=10), tmp_path, answer="other", mention="decisive")
    assert log.eval.task_version == "4-B"
    assert log.samples is not None
    wrong = 0
    for sample, value in zip(log.samples, values(log), strict=True):
        passage = str(sample.input)
        said = explanation(parse_passage(passage), "decisive", False, passage, "other")
        [offline] = pipeline_gains(_logprobs("other"), passage, [said])
        assert value["scsuff_gain"] == pytest.approx(offline, abs=1e-12)
        if value["accuracy"] == 1.0:
            assert value["scsuff_correct_gain"] == value["scsuff_gain"]
        else:
            wrong += 1
            assert value["scsuff_correct_gain"] == WRONG_ANSWER_FLOOR
    assert 0 < wrong < 10
    resolved = headline_metric(log)
    assert resolved is not None and resolved.score.name == "scsuff_correct_gain"
    mean = sum(v["scsuff_correct_gain"] for v in values(log)) / 10
    assert resolved.metric.value == pytest.approx(mean, abs=1e-12)


@pytest.mark.parametrize("estimator", ["logprob", "sampling"])
def test_the_headline_is_found_before_any_sample_scores(estimator: str) -> None:
    """Inspect's live display computes results before the first sample has scored, when glob
    metric keys (`scsuff*`) are not yet expanded: the headline was not found and Inspect
    warned "Headline score 'scsuff_gain' not found in eval results". The task spells out its
    keys."""
    from inspect_ai._eval.task.results import eval_results  # the live display's computation

    task = scsuff(self_generator=True, n=2, estimator=estimator)
    assert task.headline_metric is not None and task.scorer is not None
    results, _ = eval_results(0, [], None, task.scorer, task.metrics)
    names = [score.name for score in results.scores]
    assert task.headline_metric.score in names
    assert "scsuff*" not in names


def _record(letter: str, explanation: str) -> dict[str, object]:
    log = math.log
    answer = {
        "text": "",
        "explanation": explanation,
        "answer": letter,
        "logprobs": [log(0.9), log(0.1)] if letter == "A" else [log(0.1), log(0.9)],
        "source": "inline",
        "failure": None,
        "counts": None,
    }
    other = answer | {"answer": "B", "logprobs": [log(0.5), log(0.5)]}
    return {
        "estimator": "logprob",
        "base": answer,
        "passage": "colour red",
        "alternatives": ["colour red"],
        "reanswers": [answer],
        "reference": {"alternatives": ["colour blue"], "reanswers": [other]},
    }


@pytest.mark.parametrize(
    ("letter", "said", "gain", "headline"),
    [
        ("A", "The colour is red.", 0.0, 0.0),  # coverage 0: the alternative changed nothing
        ("B", "The colour is red.", 0.0, WRONG_ANSWER_FLOOR),
        ("A", "", math.nan, 0.0),  # no explanation: says nothing, gains 0, not left out
        ("B", "", math.nan, WRONG_ANSWER_FLOOR),
    ],
)
def test_correct_gain_per_sample(letter: str, said: str, gain: float, headline: float) -> None:
    value, explanation, _ = sufficiency_value(_record(letter, said), "A")
    assert value["scsuff_gain"] == gain or (math.isnan(gain) and math.isnan(value["scsuff_gain"]))
    assert value["scsuff_correct_gain"] == headline
    assert ("correct-answer gain -1.0" in explanation) == (letter == "B")


def test_withholding_low_gain_explanations_does_not_pay() -> None:
    """Item 6's learned attacker: the rule's answers, and a learned gain predictor (trained on
    the generated train split) that withholds the lower half of the explanations. Left out of
    the mean, the withheld items would have lifted it above the rule policy's 0.172; scored 0,
    they lower it."""
    result = withhold_attack("rule")
    assert (result.n, result.withheld) == (100, 50)
    assert result.excluded == pytest.approx(0.201999, abs=1e-6)
    assert result.excluded > policy_scores("rule", "rule").correct_gain
    assert result.scored == pytest.approx(0.101000, abs=1e-6)
    assert result.explained_all == pytest.approx(0.149727, abs=1e-6)
    assert result.scored < result.explained_all < policy_scores("rule", "rule").correct_gain


def test_the_readme_table_is_the_committed_results() -> None:
    rows, rendered = readme_block_of_results("benchmarks/scsuff/scripts/headline_table.py")
    assert rendered
    oracle = next(r for r in rows if r["kind"] == "oracle")
    assert oracle["correct_gain"] == pytest.approx(0.172303, abs=1e-6)
    assert all(r["correct_gain"] < oracle["correct_gain"] for r in rows if r is not oracle)


def test_the_attackers_train_split_holds_no_test_item() -> None:
    """Item 5: the feature-rule world has 1 600 items, so seeded draws repeat; the attackers'
    train split skips every test item (8 of seed 2029's first 100 distinct items are test
    items) and holds no item twice."""
    test = feature_rule_items(100, TEST_SEED)
    train = train_items(test)
    keys = [item_key(i) for i in train]
    assert len(keys) == len(set(keys)) == 100
    assert not set(keys) & {item_key(i) for i in test}
    drawn = {item_key(i) for i in feature_rule_items(100, TRAIN_SEED)}
    assert len(drawn & {item_key(t) for t in test}) == 8
