"""DocVAL through `docket/local`: a text-only checkpoint in vision mode stops with one line, and
the two-stage SFT student is scored by `docket/docval_grounding --model docket/local/PATH`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docket.benchmarks.docval.dataset import SHIPPED, load_documents
from docket.methods.distill import export, sft
from docket.methods.distill.tiny_vlm import build_tiny_vlm
from inspect_ai import eval as inspect_eval
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log
from inspect_ai.model import get_model

#: A chain of thought naming all four keyword groups, so VAL accepts an exact copy of it.
REASONING = "Step 1: locate the text region of the field; the answer value is inside its box."


@pytest.fixture
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def text_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A text-only Llama checkpoint (the tiny LLaVA's language model and tokenizer)."""
    from transformers import AutoConfig, AutoProcessor, LlamaForCausalLM

    source = build_tiny_vlm(tmp_path_factory.mktemp("vlm"), ["ANSWER: x BBOX: [1, 2, 3, 4]"])
    out = tmp_path_factory.mktemp("text-only")
    LlamaForCausalLM(AutoConfig.from_pretrained(source).text_config).save_pretrained(out)
    AutoProcessor.from_pretrained(source).tokenizer.save_pretrained(out)
    return out


def _mean(log: EvalLog, key: str) -> float:
    assert log.results is not None
    return float(next(s for s in log.results.scores if s.name == key).metrics["mean"].value)


def test_a_text_model_in_vision_mode_stops_with_one_line(
    text_checkpoint: Path, tmp_path: Path
) -> None:
    model = f"docket/local/{text_checkpoint}"
    line = f"model {model} cannot read images; use -T mode=layout_text"
    with pytest.raises(PrerequisiteError) as info:
        inspect_eval("docket/docval_grounding", model=model, display="none", limit=1)
    assert info.value.message == line
    log = inspect_eval(
        "docket/docval_grounding",
        model=model,
        task_args={"mode": "layout_text", "max_tokens": 4},
        log_dir=str(tmp_path),
        display="none",
        limit=1,
    )[0]
    assert log.status == "success" and (log.eval.metadata or {})["mode"] == "layout_text"


def test_a_text_teacher_given_the_page_image_stops_with_one_line(text_checkpoint: Path) -> None:
    teacher = get_model(f"docket/local/{text_checkpoint}")
    refuse = get_model("docket/scripted", policy="refuse")
    with pytest.raises(PrerequisiteError) as info:
        inspect_eval(
            "docket/docval_teacher",
            model=refuse,
            model_roles={"teacher": teacher},
            display="none",
            limit=1,
        )
    line = f"model docket/local/{text_checkpoint} cannot read images; use -T with_image=false"
    assert info.value.message == line


@pytest.mark.parametrize("task", ["docket/docval_grounding", "docket/docval_teacher"])
def test_the_demo_runs_docval_on_text_models(
    task: str, text_checkpoint: Path, tmp_path: Path
) -> None:
    from docket.demo import DEMO_TASK_ARGS, _eval_set

    model = get_model(f"docket/local/{text_checkpoint}")
    assert _eval_set(task, [model], tmp_path, "none", limit=1, max_tokens=4)
    [info] = list_eval_logs(str(tmp_path))
    log = read_eval_log(info)
    assert log.status == "success"
    assert log.eval.task_args | DEMO_TASK_ARGS[task] == log.eval.task_args
    mode = (log.eval.metadata or {})["mode"]
    assert mode == ("layout_text" if task.endswith("grounding") else "teacher")


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
    sft.main(
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
    lines = []
    for doc in docs:
        record = {k: v for k, v in doc.items() if k != "image_path"}
        record["image"] = doc["image_path"]  # absolute, so the split can live anywhere
        record["questions"] = doc["questions"][:1]
        lines.append(json.dumps(record))
    split.write_text("\n".join(lines) + "\n")
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
