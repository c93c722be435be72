"""Issue #53 item 4, every benchmark whose headline scores a reply: no degenerate reply (a
constant, the test split's most frequent answer, an empty reply, every answer at once, the
question echoed) raises the headline by being wrong. Each is scored by the task's own scorer on
its shipped split; the exact values are the audit's measurements (the right answer scores 1)."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable

import pytest
from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import Target, value_to_float
from inspect_ai.solver import TaskState

from docket.benchmarks.context_qa.context_qa import context_qa
from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag
from docket.benchmarks.fed_topics.fed_topics import fed_topics
from docket.benchmarks.rl_arith.rl_arith import rl_arith
from docket.benchmarks.rl_constraints.rl_constraints import rl_constraints
from docket.benchmarks.spatial_relations.spatial_relations import spatial_relations
from docket.benchmarks.tabular_anomaly.scorer import ranking_metrics
from docket.benchmarks.toy_math.toy_math import toy_math

TASKS: dict[str, Callable[[], Task]] = {
    "context_qa": context_qa,
    "fed_topics": fed_topics,
    "spatial_relations": spatial_relations,
    "toy_math": toy_math,
    "rl_arith": rl_arith,
    "rl_constraints": rl_constraints,
    "erm_rag": erm_rag,
}
#: gold, the split's most frequent answer, empty, every answer at once, the question echoed
MEASURED = {
    "context_qa": (1.0, 0.0625, 0.0, 0.06, 0.04),
    "fed_topics": (1.0, 0.4375, 0.0, 0.4375, 0.3125),
    "spatial_relations": (1.0, 0.5, 0.0, 0.5, 0.0),
    "toy_math": (1.0, 0.065, 0.0, 0.0, 0.0),
    "rl_arith": (1.0, 0.015, 0.0, 0.0, 0.0),
    "rl_constraints": (1.0, 0.075, 0.0, 0.0, 0.0),
    "erm_rag": (1.0, 0.025, 0.0, 0.0, 0.0),
}


def _target(sample: Sample) -> str:
    return sample.target if isinstance(sample.target, str) else sample.target[0]


def _headline(task: Task, reply: Callable[[Sample], str]) -> float:
    assert task.scorer is not None and task.metadata is not None
    scorer, key = task.scorer[0], task.metadata["headline"].get("sample_key")
    to_float = value_to_float()

    async def one(sample: Sample) -> float:
        state = TaskState(
            model=ModelName("docket/scripted"),
            sample_id=sample.id or 0,
            epoch=1,
            input=sample.input,
            messages=[],
            output=ModelOutput.from_content("docket/scripted", reply(sample)),
            metadata=sample.metadata or {},
        )
        score = await scorer(state, Target(sample.target))
        assert score is not None
        value = score.value[key] if isinstance(score.value, dict) else score.value
        return to_float(value)

    values = [asyncio.run(one(sample)) for sample in task.dataset]
    return sum(values) / len(values)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_no_degenerate_reply_outranks_the_right_answer(name: str) -> None:
    task = TASKS[name]()
    assert task.metadata is not None and task.metadata["headline"]["direction"] == "higher"
    answers = Counter(_target(s) for s in task.dataset)
    majority = answers.most_common(1)[0][0]
    every = " ".join(sorted(answers))[:2000]
    replies: list[Callable[[Sample], str]] = [
        _target,
        lambda _: majority,
        lambda _: "",
        lambda _: every,
        lambda s: s.input if isinstance(s.input, str) else "",
    ]
    scores = tuple(round(_headline(task, reply), 6) for reply in replies)
    assert scores == MEASURED[name]
    assert max(scores[1:]) < scores[0]


def test_tabular_anomaly_auroc_of_degenerate_detectors() -> None:
    """A detector that flags every row alike, or ranks them backwards, cannot beat ranking."""
    labels = [0, 0, 0, 1, 1]
    assert ranking_metrics(labels, [1.0] * 5)["auroc"] == 0.5  # flag everything
    assert ranking_metrics(labels, [0.1, 0.2, 0.3, 0.8, 0.9])["auroc"] == 1.0
    assert ranking_metrics(labels, [0.9, 0.8, 0.7, 0.2, 0.1])["auroc"] == 0.0  # inverted


def test_erm_retrieval_ndcg_of_degenerate_rankings() -> None:
    """Repeating the relevant document does not count it twice; an empty ranking scores 0."""
    pytest.importorskip("pytrec_eval")
    from docket.methods.retrieval.metrics import evaluate

    qrels = {"q": {"d1": 1, "d2": 1}}
    once = evaluate(qrels, {"q": ["d1", "x", "y"]})["q"]["ndcg_10"]
    assert evaluate(qrels, {"q": ["d1"] * 10})["q"]["ndcg_10"] == once
    assert once == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)
    assert evaluate(qrels, {"q": []})["q"] == {"ndcg_10": 0.0, "recall_at_k": 0.0, "rr": 0.0}
    assert evaluate(qrels, {"q": ["d1", "d2"]})["q"]["ndcg_10"] == pytest.approx(1.0, abs=1e-12)
