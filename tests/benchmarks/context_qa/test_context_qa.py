"""docket/context_qa: shipped data, reference policies with exact scores, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from docket.benchmarks.context_qa.dataset import (
    DATA,
    EVAL_CONTEXTS,
    EVAL_SEED,
    generate,
    load,
    write,
)
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import parse_lines


def run(policy: str, tmp_path: Path, **task_args: object) -> EvalLog:
    log = inspect_eval(
        "docket/context_qa",
        model="docket/scripted",
        model_args={"policy": policy},
        task_args=task_args,
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success"
    return log


def metric(log: EvalLog, scorer: str) -> float:
    assert log.results is not None
    score = next(s for s in log.results.scores if s.name == scorer)
    return float(score.metrics["mean"].value)


def test_shipped_data_is_the_generator_output(tmp_path: Path) -> None:
    write(*generate(EVAL_CONTEXTS, EVAL_SEED), tmp_path)
    for name in ("contexts.jsonl", "questions.jsonl"):
        assert (tmp_path / name).read_text() == (DATA / name).read_text()
    contexts, questions = load()
    assert len(contexts) == 40 and len(questions) == 80
    assert len({q.answer for q in questions}) > 20  # answers spread over the value lists


def test_reader_scores_one_with_the_text_and_zero_without(tmp_path: Path) -> None:
    assert metric(run("context_qa_reader", tmp_path, context="prompt"), "f1") == 1.0
    for mode in ("reference", "none"):
        log = run("context_qa_reader", tmp_path / mode, context=mode)
        assert metric(log, "f1") == 0.0 and metric(log, "exact") == 0.0


def test_first_fact_baseline_scores_the_share_it_can_guess(tmp_path: Path) -> None:
    contexts, questions = load()
    first_values = {c: text.split(".")[0].split()[-1] for c, text in contexts.items()}
    expected = sum(q.answer == first_values[q.context_id] for q in questions) / len(questions)
    assert expected == pytest.approx(0.1)  # 8 of 80: near the 1/8 of a fact picked blindly
    log = run("context_qa_first_fact", tmp_path)
    assert metric(log, "f1") == pytest.approx(expected)
    assert metric(log, "exact") == pytest.approx(expected)
    assert (log.eval.metadata or {})["headline"]["metric"] == "mean"


def test_reference_prompt_names_the_context_without_its_content(tmp_path: Path) -> None:
    log = run("refuse", tmp_path, context="reference")
    assert log.samples is not None
    sample = log.samples[0]
    contexts, _ = load()
    context_id = sample.metadata["context_id"]
    assert f"[context: {context_id}]" in sample.input
    assert contexts[context_id].split(".")[0] not in str(sample.input)


def test_bad_arguments_and_data_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="-T context='book' is not accepted"):
        inspect_eval(
            "docket/context_qa",
            model=get_model("docket/scripted", policy="refuse"),
            task_args={"context": "book"},
        )
    (tmp_path / "contexts.jsonl").write_text('{"id": "a", "text": "Mira lives in Oslo."}\n')
    (tmp_path / "questions.jsonl").write_text('{"id": "q", "context_id": "a", "question": "?"}\n')
    with pytest.raises(PrerequisiteError, match=r"questions.jsonl line 1: no field 'answer'"):
        inspect_eval(
            "docket/context_qa",
            model=get_model("docket/scripted", policy="refuse"),
            task_args={"data": str(tmp_path)},
        )
    rows = [row for _, row in parse_lines((DATA / "questions.jsonl").read_text().splitlines())]
    assert all(set(rows[0]) == set(r) for r in rows)
