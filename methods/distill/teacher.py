"""Teacher chain-of-thought generation through Inspect and the VAL scorer that filters it.

`teacher_cot()` sends DocVAL's teacher prompt (page image, up to 20 OCR regions as
`Region #id: [x1, y1, x2, y2] -> "text"`, the question, the 7-step CoT contract) to the model bound
to the `teacher` role; when the role is unbound the evaluated model (`--model`) is the teacher.
`val_scorer()` runs the validator on the trace (filter decision + verifier feedback) and keeps
the trace in the score metadata for `export.py`.

Sample metadata used: `question`, `answers`, `bbox` (pixels), `width`, `height`, `segments`
(`[id, x1, y1, x2, y2, text]`) and optionally `image_path`.
"""

from __future__ import annotations

from typing import Any

from docket.methods.distill.output_format import parse_output
from docket.methods.distill.validator import Region, validate
from inspect_ai.model import ChatMessageUser, Content, ContentImage, ContentText, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import materialize_media

MAX_REGIONS = 20
STEPS = (
    "document understanding",
    "question interpretation",
    "visual region localisation",
    "field/label identification",
    "answer extraction",
    "spatial verification",
    "bbox determination",
)
TEACHER_PROMPT = """\
Document {doc_id}.
You are an expert document analyst. The page image is {width} x {height} pixels.
Detected text regions (pixel boxes, origin top-left):
{regions}

Question: {question}

Think in exactly 7 steps: {steps}.
Then reply in exactly this format:
REASONING: Step 1: ... Step 7: ...
ANSWER: <answer copied as printed>
BBOX: [x1, y1, x2, y2]"""


def regions_of(meta: dict[str, Any]) -> list[Region]:
    """The OCR regions in sample metadata (`segments` rows `[id, x1, y1, x2, y2, text]`)."""
    return [
        Region(int(s[0]), (float(s[1]), float(s[2]), float(s[3]), float(s[4])), str(s[5]))
        for s in meta.get("segments", [])
    ]


def teacher_prompt(meta: dict[str, Any], max_regions: int = MAX_REGIONS) -> str:
    """DocVAL's teacher prompt for one question (at most `max_regions`, in reading order)."""
    regions = sorted(regions_of(meta), key=lambda r: (r.box[1], r.box[0]))[:max_regions]
    lines = "\n".join(
        f'Region #{r.id}: [{", ".join(str(round(v)) for v in r.box)}] -> "{r.text}"'
        for r in regions
    )
    steps = "; ".join(f"{i} {name}" for i, name in enumerate(STEPS, start=1))
    return TEACHER_PROMPT.format(
        doc_id=meta.get("doc_id", "?"),
        width=meta["width"],
        height=meta["height"],
        regions=lines,
        question=meta["question"],
        steps=steps,
    )


@solver
def teacher_cot(max_regions: int = MAX_REGIONS, with_image: bool = True) -> Solver:
    """Ask the `teacher` model (default: the evaluated model) for a 7-step grounded trace."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        content: list[Content] = [ContentText(text=teacher_prompt(meta, max_regions))]
        if with_image and meta.get("image_path"):
            content.append(ContentImage(image=await materialize_media(str(meta["image_path"]))))
        state.messages = [ChatMessageUser(content=content)]
        teacher = get_model(role="teacher", default=get_model())
        state.output = await teacher.generate(state.messages)
        state.messages.append(state.output.message)
        return state

    return solve


@scorer(
    metrics={
        "q": [mean(), stderr()],
        "accepted": [mean(), stderr()],
        "q_ans": [mean()],
        "q_bbox": [mean()],
        "q_reason": [mean()],
        "iou": [mean()],
    }
)
def val_scorer() -> Scorer:
    """VAL in filter mode (accepted = Q >= 0.85) with verifier feedback in the metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata
        parsed = parse_output(state.output.completion)
        if meta.get("bbox") is None:
            raise ValueError(f"sample {state.sample_id}: val_scorer needs a ground-truth 'bbox'")
        result = validate(
            parsed.answer,
            parsed.bbox,
            parsed.reasoning,
            str(meta["answers"][0]),
            meta["bbox"],
            regions_of(meta),
            str(meta["question"]),
        )
        return Score(
            value={
                "q": result.q,
                "accepted": float(result.accepted),
                "q_ans": result.q_ans,
                "q_bbox": result.q_bbox,
                "q_reason": result.q_reason,
                "iou": result.iou,
            },
            answer=parsed.answer,
            explanation=f"{result.decision} Q={result.q:.3f}; "
            + "; ".join(result.fixes or ["no errors"]),
            metadata={
                "trace": {
                    "reasoning": parsed.reasoning,
                    "answer": parsed.answer,
                    "bbox": list(parsed.bbox) if parsed.bbox else None,
                },
                "parse_problems": parsed.problems,
                "errors": [
                    {
                        "kind": e.kind,
                        "severity": e.severity,
                        "message": e.message,
                        "delta": list(e.delta) if e.delta else None,
                    }
                    for e in result.errors
                ],
                "corrected": result.corrected,
            },
        )

    return score
