"""`docket/docval_grounding`: answer a document question and return the answer's box.

Run: `inspect eval docket/docval_grounding -T mode=layout_text --model docket/smollm2`, or
`--model docket/scripted -M policy=docval_oracle` (ANLS 1, mAP 1).
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig, Model, model_roles
from inspect_ai.solver import generate

import docket.benchmarks.docval.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.docval.chance import chance_metadata
from docket.benchmarks.docval.dataset import load_source, source_split, to_samples
from docket.benchmarks.docval.grounding import check_trace
from docket.benchmarks.docval.layouts import DOC_TYPES
from docket.benchmarks.docval.scorer import docval_grounding_scorer
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError, active_model
from docket.core.options import checked, one_of, positive
from docket.core.roles import require_roles, role_model
from docket.methods.distill.teacher import teacher_cot, val_scorer
from docket.methods.local.provider import cannot_read_images

VERSION = "3-B"
MODES = ("vision", "layout_text")
DIFFICULTIES = ("all", "easy", "medium", "hard")


def _documents(name: str, data: str, difficulty: str, doc_type: str) -> list[dict[str, Any]]:
    difficulty = one_of(name, "difficulty", difficulty, DIFFICULTIES)
    doc_type = one_of(name, "doc_type", doc_type, ("all", *DOC_TYPES))
    return [
        d
        for d in load_source(checked(name, "data", data, str))
        if difficulty in ("all", d["difficulty"]) and doc_type in ("all", d["doc_type"])
    ]


def _check_reads_images(model: Model | None, advice: str) -> None:
    """Inside an eval, stop with one line when `model` is a text-only local model."""
    line = cannot_read_images(model.api, advice) if model is not None else None
    if line:
        raise PrerequisiteError(line)


@task
def docval_grounding(
    mode: str = "vision",
    data: str = "",
    difficulty: str = "all",
    doc_type: str = "all",
    max_tokens: int = 256,
) -> Task:
    """Grounded document VQA scored with ANLS (tau 0.5), IoU and mAP@IoU[.50:.05:.95].

    Args:
        mode: `vision` (page image + question) or `layout_text` (word-level OCR tokens with
            pixel boxes serialised as text, for text-only models).
        data: '' for the shipped 1,050-question split, a `docket generate docval` directory
            (its manifest is checked), a `.jsonl[.gz]` DocVAL split, a
            DocVQA-format `.json` (per-question `bbox` for box metrics), or `hf:NAME[:SPLIT]`
            (online only).
        difficulty: Keep only `easy`, `medium` or `hard` documents (`all` keeps every one).
        doc_type: Keep only one of receipt, invoice, form, table, letter (`all` keeps every one).
        max_tokens: Generation limit per answer.

    Returns:
        The task: document questions answered by `generate()`, scored by
        `docval_grounding_scorer`.
    """
    name = "docval_grounding"
    mode = one_of(name, "mode", mode, MODES)
    if mode == "vision":
        _check_reads_images(active_model(), "use -T mode=layout_text")
    docs = _documents(name, data, difficulty, doc_type)
    h = headline(
        "docval_grounding_scorer",
        "mean",
        score="map",
        direction="higher",
        value="continuous",
        sample_key="map",
    )
    return Task(
        dataset=to_samples(docs, mode),
        solver=generate(),
        scorer=docval_grounding_scorer(),
        config=GenerateConfig(max_tokens=positive(name, "max_tokens", max_tokens), temperature=0.0),
        version=VERSION,
        tags=["document-qa", "localization", "vision" if mode == "vision" else "layout-text"],
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            **source_split(data),
            **chance_metadata(),
            "benchmark": "docval",
            "mode": mode,
        },
    )


@task
def docval_teacher(
    data: str = "",
    difficulty: str = "all",
    doc_type: str = "all",
    max_regions: int = 20,
    with_image: bool = True,
    max_tokens: int = 8192,
    self_teacher: bool = False,
) -> Task:
    """DocVAL phase A: teacher 7-step CoT traces scored by the VAL validator (filter mode).

    The teacher is the model bound to the `teacher` role (`--model-role teacher=...`); an
    unbound role stops the eval unless `self_teacher` lets the evaluated model be the teacher.
    Export accepted traces with `python methods/distill/scripts/export.py LOG OUT.jsonl`.

    Args:
        data: As for docval_grounding (questions need a ground-truth box).
        difficulty: Keep only `easy`, `medium` or `hard` documents (`all` keeps every one).
        doc_type: Keep only one of receipt, invoice, form, table, letter (`all` keeps every one).
        max_regions: OCR regions shown to the teacher (DocVAL: up to 20, reading order).
        with_image: Attach the page image (set false for text-only teachers).
        max_tokens: Generation limit per trace (DocVAL: 8192).
        self_teacher: Let the model under test play the unbound `teacher` role.

    Returns:
        The task: document questions answered by `teacher_cot`, scored by `val_scorer` with
        the grounding check (`grounding.check_trace`: every step cites the page).
    """
    name = "docval_teacher"
    allow_self = checked(name, "self_teacher", self_teacher, bool)
    require_roles(name, ["teacher"], allow_self=allow_self, self_flag="self_teacher")
    if checked(name, "with_image", with_image, bool):
        bound = model_roles().get("teacher")
        teacher_model = bound[0] if isinstance(bound, list) and bound else bound
        if not isinstance(teacher_model, Model):
            teacher_model = active_model()
        _check_reads_images(teacher_model, "use -T with_image=false")
    docs = _documents(name, data, difficulty, doc_type)

    def teacher() -> Model:
        return role_model(name, "teacher", allow_self=allow_self, self_flag="self_teacher")

    h = headline(
        "val_scorer",
        "mean",
        score="accepted",
        direction="higher",
        value="binary",
        sample_key="accepted",
    )
    return Task(
        dataset=to_samples(docs, "layout_text"),
        solver=teacher_cot(
            teacher,
            positive(name, "max_regions", max_regions),
            with_image,
        ),
        scorer=val_scorer(check_trace),
        config=GenerateConfig(max_tokens=positive(name, "max_tokens", max_tokens)),
        version=VERSION,
        tags=["document-qa", "localization", "distillation"],
        headline_metric=h["headline_metric"],
        metadata={**h["metadata"], **source_split(data), "benchmark": "docval", "mode": "teacher"},
    )
