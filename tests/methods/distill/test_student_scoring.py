"""The two-stage SFT student, saved as a checkpoint, is scored by
`docket/docval_grounding --model docket/local/PATH`."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.core.jsonl import write_jsonl
from docket.methods.distill import export, sft

#: A chain of thought naming all four keyword groups, so VAL accepts an exact copy of it.
REASONING = "Step 1: locate the text region of the field; the answer value is inside its box."

SCRIPTS = Path(__file__).resolve().parents[3] / "methods" / "distill" / "scripts"
sft_main = runpy.run_path(str(SCRIPTS / "sft.py"))["main"]


def _mean(log: EvalLog, key: str) -> float:
    assert log.results is not None
    return float(next(s for s in log.results.scores if s.name == key).metrics["mean"].value)


def _rows(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exported-trace rows (export.py's format) whose trace is the gold answer and box."""
    rows = []
    for doc in docs:
        q = doc["questions"][0]
        rows.append(
            {
                "id": q["qid"],
                "doc_id": doc["doc_id"],
                "image": doc["image_path"],
                "question": q["question"],
                "width": doc["width"],
                "height": doc["height"],
                "regions": doc["segments"],
                "gt_answer": q["answers"][0],
                "gt_bbox": q["bbox"],
                "reasoning": REASONING,
                "answer": q["answers"][0],
                "bbox": q["bbox"],
            }
        )
    return rows


@pytest.mark.slow  # 200 training steps on a CPU, then an eval
def test_the_sft_student_is_scored_through_docval_grounding(
    tmp_path: Path, one_thread: None
) -> None:
    docs = load_documents(SHIPPED)[:2]
    rows = _rows(docs)
    traces = export.write_jsonl(rows, tmp_path / "traces.jsonl")
    report_dir = tmp_path / "run"
    # stage 1 memorises the two traces; the held-out rows are the same two questions, so VAL
    # accepts every student output and stage 2 has nothing to correct
    sft_main(
        [
            *("--traces", str(traces), "--heldout", str(traces), "--out", str(report_dir)),
            *("--epochs", "100", "--batch-size", "1", "--lr", "0.005"),
            *("--max-iterations", "1", "--max-new-tokens", "64"),
        ]
    )
    report = json.loads((report_dir / "report.json").read_text())
    assert report["final_acceptance"] == 1.0 and report["stage2"] == []
    # the same two questions as a DocVAL split, scored in vision mode through docket/local
    split = tmp_path / "two.jsonl"
    records = []
    for doc in docs:
        record = {k: v for k, v in doc.items() if k != "image_path"}
        record["image"] = doc["image_path"]  # absolute, so the split can live anywhere
        record["questions"] = doc["questions"][:1]
        records.append(record)
    write_jsonl(split, records)
    log = inspect_eval(
        "docket/docval_grounding",
        model=f"docket/local/{report_dir / 'model'}",
        task_args={"mode": "vision", "data": str(split), "max_tokens": 64},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    assert log.status == "success", log.error
    assert log.results is not None and log.results.total_samples == 2
    assert _mean(log, "anls") == 1.0 and _mean(log, "map") == 1.0
    assert _mean(log, "unparsed") == 0.0
    assert log.samples is not None
    for sample, row in zip(log.samples, rows, strict=True):
        assert sample.output.completion == sft.format_target(REASONING, row["answer"], row["bbox"])
