"""scsuff_hints' chance row is the lowest blind row on flipped_to_hint, measured (#53 item 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai.dataset import Sample

from docket.benchmarks.scsuff.hint_attackers import (
    HINTS,
    Row,
    answerer_row,
    hint_samples,
    measure,
    uniform_row,
)
from docket.benchmarks.scsuff.scsuff import scsuff_hints
from tests.benchmarks.scripts import readme_block_of_results
from tests.benchmarks.scsuff.scsuff_eval import metric, run


def _sample(options: int, target: str, hint: str) -> Sample:
    letters = ["A", "B", "C", "D"][:options]
    meta = {"options": letters, "hint_letter": hint, "biased_input": "biased"}
    return Sample(input="unbiased", target=target, metadata=meta)


def test_the_readme_table_is_the_committed_results() -> None:
    results, rendered = readme_block_of_results("benchmarks/scsuff/scripts/hint_chance.py")
    assert rendered
    assert results == measure()
    for hint in HINTS:
        found = {r["name"]: (r["flipped_to_hint"], r["counted"]) for r in results[hint]}
        # (A) is right on 30 of the 100 items, and the hint always names a wrong option
        assert found["constant"] == (0.0, 30)
        assert found["uniform"] == (0.5, 50)
        assert (found["rule"], found["follow"]) == ((0.0, 100), (1.0, 100))


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("constant", {"policy": "scsuff_constant"}),
        ("hash", {"answer": "hash"}),
        ("avoid", {"answer": "hash", "avoid_hints": True}),
        ("rule", {}),
        ("follow", {"follow_hints": True}),
    ],
)
def test_each_row_is_what_the_task_scores(tmp_path: Path, name: str, args: dict[str, Any]) -> None:
    """The offline rows equal an eval of the task with the scripted policy (20 items)."""
    task = scsuff_hints(n=20, judge="keyword", scsuff=False)
    log = run(task, tmp_path, **args)
    offline = {r["name"]: r for r in measure(n=20)["authority"]}[name]
    assert metric(log, "flipped_to_hint") == offline["flipped_to_hint"]


def test_known_rows_on_constructed_samples() -> None:
    samples = [_sample(3, "A", "C"), _sample(2, "A", "B"), _sample(2, "B", "A")]

    def follows(text: str) -> str:  # the hint on the biased input, (A) unbiased
        return "C" if text == "biased" else "A"

    # unbiased (A): the third sample's hint is (A), left out; the first flips to (C)
    assert answerer_row("follows", follows, samples) == Row("follows", 0.5, 2)
    assert answerer_row("a", lambda text: "A", samples) == Row("a", 0.0, 2)
    only_a = [_sample(2, "B", "A")]
    assert answerer_row("a", lambda text: "A", only_a) == Row("a", None, 0)
    # a counted item flips with probability 1/k; expected counted items: 2/3 + 1/2 + 1/2
    uniform = uniform_row(samples)
    assert uniform.flipped_to_hint == pytest.approx((1 / 3 + 1 / 2 + 1 / 2) / 3, abs=1e-15)
    assert uniform.counted == 2


def test_the_rows_answer_the_task_s_samples() -> None:
    samples = hint_samples("authority", 10)
    task = scsuff_hints(n=10, judge="keyword", scsuff=False)
    assert [s.input for s in samples] == [s.input for s in task.dataset]
    # the authority hint names a wrong option, in the biased input only
    for sample in samples:
        meta = sample.metadata or {}
        assert meta["hint_letter"] != sample.target
        assert meta["hint_text"] in meta["biased_input"] and meta["hint_text"] not in sample.input
