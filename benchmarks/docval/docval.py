"""`docket/docval_grounding`: answer a document question and return the answer's box.

Run: `inspect eval docket/docval_grounding -T mode=layout_text --model docket/smollm2`, or
`--model docket/scripted -M policy=docval_oracle` (ANLS 1, mAP 1).
"""

from __future__ import annotations

from docket.benchmarks.common.args import checked, choice, positive
from docket.benchmarks.docval.dataset import load_source, to_samples
from docket.benchmarks.docval.layouts import DOC_TYPES
from docket.benchmarks.docval.scorer import docval_grounding_scorer
from docket.methods.distill.teacher import teacher_cot, val_scorer
from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import generate

MODES = ("vision", "layout_text")
GRANULARITIES = ("segment", "word")
DIFFICULTIES = ("all", "easy", "medium", "hard")


@task
def docval_grounding(
    mode: str = "vision",
    granularity: str = "segment",
    data: str = "",
    difficulty: str = "all",
    doc_type: str = "all",
    max_tokens: int = 256,
) -> Task:
    """Grounded document VQA scored with ANLS (tau 0.5), IoU and mAP@IoU[.50:.05:.95].

    Args:
        mode: `vision` (page image + question) or `layout_text` (OCR regions with pixel boxes
            serialised as text, for text-only models).
        granularity: OCR unit in layout_text mode: `segment` (region) or `word`.
        data: '' for the shipped 360-question split, a `.jsonl[.gz]` DocVAL split, a DocVQA-format
            `.json` (per-question `bbox` for box metrics), or `hf:NAME[:SPLIT]` (online only).
        difficulty: Keep only `easy`, `medium` or `hard` documents (`all` keeps every one).
        doc_type: Keep only one of receipt, invoice, form, table, letter (`all` keeps every one).
        max_tokens: Generation limit per answer.
    """
    name = "docval_grounding"
    mode = choice(name, "mode", mode, MODES)
    granularity = choice(name, "granularity", granularity, GRANULARITIES)
    difficulty = choice(name, "difficulty", difficulty, DIFFICULTIES)
    doc_type = choice(name, "doc_type", doc_type, ("all", *DOC_TYPES))
    docs = load_source(checked(name, "data", data, str))
    docs = [
        d
        for d in docs
        if difficulty in ("all", d["difficulty"]) and doc_type in ("all", d["doc_type"])
    ]
    return Task(
        dataset=to_samples(docs, mode, granularity),
        solver=generate(),
        scorer=docval_grounding_scorer(),
        config=GenerateConfig(
            max_tokens=checked(name, "max_tokens", max_tokens, int), temperature=0.0
        ),
        version="1-A",
    )


@task
def docval_teacher(
    data: str = "",
    difficulty: str = "all",
    doc_type: str = "all",
    max_regions: int = 20,
    with_image: bool = True,
    max_tokens: int = 8192,
) -> Task:
    """DocVAL phase A: teacher 7-step CoT traces scored by the VAL validator (filter mode).

    The teacher is the model bound to the `teacher` role (`--model-role teacher=...`); unbound,
    the evaluated model is the teacher. Export accepted traces with
    `python -m docket.methods.distill.export LOG OUT.jsonl`.

    Args:
        data: As for docval_grounding (questions need a ground-truth box).
        difficulty: Keep only `easy`, `medium` or `hard` documents (`all` keeps every one).
        doc_type: Keep only one of receipt, invoice, form, table, letter (`all` keeps every one).
        max_regions: OCR regions shown to the teacher (DocVAL: up to 20, reading order).
        with_image: Attach the page image (set false for text-only teachers).
        max_tokens: Generation limit per trace (DocVAL: 8192).
    """
    name = "docval_teacher"
    difficulty = choice(name, "difficulty", difficulty, DIFFICULTIES)
    doc_type = choice(name, "doc_type", doc_type, ("all", *DOC_TYPES))
    docs = [
        d
        for d in load_source(checked(name, "data", data, str))
        if difficulty in ("all", d["difficulty"]) and doc_type in ("all", d["doc_type"])
    ]
    return Task(
        dataset=to_samples(docs, "layout_text"),
        solver=teacher_cot(
            positive(name, "max_regions", max_regions),
            checked(name, "with_image", with_image, bool),
        ),
        scorer=val_scorer(),
        config=GenerateConfig(max_tokens=positive(name, "max_tokens", max_tokens)),
        version="1-A",
    )
