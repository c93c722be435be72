"""End-to-end runs of `docval_grounding` on scripted models with exact metric values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.benchmarks.docval.docval import docval_grounding
from docket.core.inspect_private import PrerequisiteError
from tests.scores import score_fields

LIMIT = 20


def _run(tmp_path: Path, policy: str, limit: int = LIMIT, **task_args: Any) -> EvalLog:
    args = {k: v for k, v in task_args.items() if k in {"data", "format", "shift"}}
    task = docval_grounding(**{k: v for k, v in task_args.items() if k not in args})
    model = get_model("docket/scripted", policy=policy, **args)
    log = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none", limit=limit)[0]
    assert log.status == "success", log.error
    return log


def _metric(log: EvalLog, score: str, name: str = "mean") -> float:
    assert log.results is not None
    found = next(s for s in log.results.scores if s.name == score)
    return float(found.metrics[name].value)


@pytest.mark.parametrize(("mode", "form"), [("vision", "json"), ("layout_text", "lines")])
def test_oracle_scores_anls_1_and_map_1(tmp_path: Path, mode: str, form: str) -> None:
    log = _run(tmp_path, "docval_oracle", mode=mode, format=form)
    assert _metric(log, "anls") == 1.0 and _metric(log, "map") == 1.0
    assert _metric(log, "iou") == 1.0 and _metric(log, "unparsed") == 0.0
    assert _metric(log, "anls", "grouped_receipt") == 1.0
    # the declared headline, the mode and the benchmark are in the log for the reports
    meta = log.eval.metadata or {}
    assert meta["benchmark"] == "docval" and meta["mode"] == mode
    assert meta["headline"]["metric"] == "mean" and meta["headline"]["score"] == "map"
    assert meta["headline"]["direction"] == "higher" and meta["headline"]["value"] == "continuous"
    from inspect_ai.log import headline_metric

    resolved = headline_metric(log)
    assert resolved is not None and resolved.score.name == "map" and resolved.name == "mean"
    assert resolved.metric.value == 1.0
    assert log.eval.task_version == "3-B"
    assert set(log.eval.tags or []) == {"document-qa", "localization", mode.replace("_", "-")}
    assert log.samples is not None
    assert all(score_fields(s, "docval_grounding_scorer")["map"] == 1.0 for s in log.samples)


def test_stderr_is_clustered_by_document(tmp_path: Path) -> None:
    # label_right on the first 20 questions (4 documents of 5): per-document clusters
    log = _run(tmp_path, "docval_label_right", mode="layout_text")
    assert log.samples is not None
    values: dict[str, list[float]] = {}
    for sample in log.samples:
        score = score_fields(sample, "docval_grounding_scorer")
        values.setdefault(str(sample.metadata["doc_id"]), []).append(score["iou"])
    n = sum(len(v) for v in values.values())
    mean = sum(sum(v) for v in values.values()) / n
    sums = [sum(x - mean for x in v) for v in values.values()]
    g = len(sums)
    # CR1 cluster-robust standard error of the mean with the small-sample factor g / (g - 1)
    expected = (g / (g - 1) * sum(s * s for s in sums)) ** 0.5 / n
    assert _metric(log, "iou", "stderr") == pytest.approx(expected)


def test_shifted_boxes_give_the_closed_form_iou(tmp_path: Path) -> None:
    shift = 6
    log = _run(tmp_path, "docval_oracle", mode="layout_text", shift=shift)
    gold = [q["bbox"] for d in load_documents(SHIPPED) for q in d["questions"]][:LIMIT]
    # a box of width w moved sideways by s < w has IoU (w - s) / (w + s)
    expected = [(b[2] - b[0] - shift) / (b[2] - b[0] + shift) for b in gold]
    assert _metric(log, "iou") == pytest.approx(sum(expected) / len(expected))
    assert _metric(log, "answer_right_box_wrong") == sum(e < 0.5 for e in expected) / len(expected)
    assert _metric(log, "anls") == 1.0


def test_unknown_documents_are_counted_misses(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"doc_id": "x", "questions": []}) + "\n")
    log = _run(tmp_path, "docval_oracle", limit=5, mode="layout_text", data=str(other))
    assert _metric(log, "unparsed") == 1.0 and _metric(log, "anls") == 0.0
    assert log.samples is not None
    explanation = (log.samples[0].scores or {})["docval_grounding_scorer"].explanation or ""
    assert "unparsable BBOX 'none'" in explanation


def test_docvqa_format_loader_scores_anls_only_without_boxes(tmp_path: Path) -> None:
    doc = load_documents(SHIPPED)[0]
    shutil.copy(doc["image_path"], tmp_path / "page.jpg")
    q = doc["questions"][0]
    data = {
        "data": [
            {
                "questionId": 1,
                "question": q["question"],
                "image": "page.jpg",
                "docId": doc["doc_id"],
                "answers": q["answers"],
                "bbox": q["bbox"],
            },
            {"questionId": 2, "question": "Unboxed?", "image": "page.jpg", "answers": ["no"]},
        ]
    }
    path = tmp_path / "val.json"
    path.write_text(json.dumps(data))
    task = docval_grounding(mode="vision", data=str(path))
    assert len(task.dataset) == 2
    bboxes = []
    for sample in task.dataset:
        assert sample.metadata is not None
        bboxes.append(sample.metadata["bbox"])
    assert bboxes == [q["bbox"], None]
    model = get_model("docket/scripted", policy="docval_oracle", data=str(SHIPPED))
    log = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")[0]
    # question 1 is answered exactly; question 2 is not in the oracle's table
    assert _metric(log, "anls") == 0.5
    assert _metric(log, "iou") == 1.0  # only the boxed question enters box metrics


def test_bad_task_arguments_give_one_clear_error() -> None:
    with pytest.raises(PrerequisiteError, match="-T mode='audio' is not accepted"):
        docval_grounding(mode="audio")
    with pytest.raises(PrerequisiteError, match="-T doc_type='memo'"):
        docval_grounding(doc_type="memo")
    with pytest.raises(ValueError, match="no such data file"):
        docval_grounding(data="/nonexistent/split.jsonl")


def test_filters_select_documents() -> None:
    task = docval_grounding(mode="layout_text", difficulty="hard", doc_type="table")
    kinds = {(s.metadata or {})["doc_type"] for s in task.dataset}
    levels = {(s.metadata or {})["difficulty"] for s in task.dataset}
    assert kinds == {"table"} and levels == {"hard"} and len(task.dataset) == 14 * 5
