"""Teacher chain-of-thought generation through Inspect and the VAL scorer that filters it.

`teacher_cot()` sends DocVAL's teacher prompt (page image, up to 20 OCR regions as
`Region #id: [x1, y1, x2, y2] -> "text"`, the question, the 7-step CoT contract) to the model
bound to the `teacher` role; an unbound role is an error unless `allow_self` lets the evaluated
model play it. `val_scorer()` runs the validator on the trace (filter decision + verifier
feedback), counts traces it cannot read (`unparsed`) and refusals (`refused`), reports mean Q
over the parsed traces (`q_parsed`), and keeps the trace in the score metadata for `export.py`.

Sample metadata used: `question`, `answers`, `bbox` (pixels), `width`, `height`, `segments`
(`[id, x1, y1, x2, y2, text]`), `doc_id` (stderr clusters) and optionally `image_path`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from inspect_ai.model import ChatMessageUser, Content, ContentImage, ContentText, Model, ModelOutput
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import materialize_media

from docket.methods.distill.output_format import Parsed, parse_output
from docket.methods.distill.validator import Region, validate

#: Resolves the teacher model inside the solver (the task passes its role check).
TeacherResolver = Callable[[], Model]
#: An extra check of a parsed trace against its sample metadata: the problems ([] = passes).
TraceCheck = Callable[[Parsed, dict[str, Any]], list[str]]

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
In every step, quote the printed text you use (in double quotes) or give its pixel box.
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
def teacher_cot(
    teacher: TeacherResolver, max_regions: int = MAX_REGIONS, with_image: bool = True
) -> Solver:
    """Ask the model `teacher()` resolves (the `teacher` role) for a 7-step grounded trace.

    Args:
        teacher: Resolves the teacher model when a sample is solved.
        max_regions: The most OCR regions the prompt lists (in reading order).
        with_image: Whether the page image goes with the prompt (when the sample has one).

    Returns:
        A solver that replaces the messages with the teacher prompt and sets the output to the
        teacher's reply.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        content: list[Content] = [ContentText(text=teacher_prompt(meta, max_regions))]
        if with_image and meta.get("image_path"):
            content.append(ContentImage(image=await materialize_media(str(meta["image_path"]))))
        state.messages = [ChatMessageUser(content=content)]
        state.output = await teacher().generate(state.messages)
        state.messages.append(state.output.message)
        return state

    return solve


_REFUSAL = re.compile(
    r"\b(?:I\s+(?:can(?:no|')t|am\s+unable|'m\s+unable|won't|will\s+not|must\s+decline)|"
    r"I'm\s+sorry|I\s+apologi[sz]e|unable\s+to\s+(?:help|assist|comply))",
    re.IGNORECASE,
)
TRACE_KEYS = (
    "q",
    "accepted",
    "q_parsed",
    "unparsed",
    "refused",
    "q_ans",
    "q_bbox",
    "q_reason",
    "iou",
    "grounded",
    "accepted_val",
)


def is_refusal(output: ModelOutput, parsed: Parsed) -> bool:
    """A reply that gives no answer and declines (refusal wording or a content filter stop)."""
    if parsed.answer is not None:
        return False
    return output.stop_reason == "content_filter" or bool(_REFUSAL.search(output.completion))


def _trace_metrics() -> dict[str, list[Any]]:
    clustered = [mean(), stderr(cluster="doc_id")]
    return {key: clustered if key in ("q", "accepted") else [mean()] for key in TRACE_KEYS}


@scorer(metrics=_trace_metrics())
def val_scorer(check: TraceCheck | None = None) -> Scorer:
    """VAL in filter mode (accepted = Q >= 0.85) with verifier feedback in the metadata.

    `unparsed` = the trace lacks an ANSWER or a BBOX; `refused` = it gives no answer and
    declines; `q_parsed` = Q of traces with both (NaN otherwise, so its mean is over parsed
    traces only). An empty or refusing trace scores Q = 0: without reasoning the validator's
    reasoning score is 0 (see `validator.reasoning_scores`). Stderr of `q` and `accepted` is
    clustered by document (`doc_id`), as several questions share a page.

    Args:
        check: An extra check a trace must pass to be accepted (e.g. `docval_teacher`'s
            grounding check); `grounded` is 1 when it passes, `accepted_val` is VAL's decision
            alone. Without one both are NaN (skipped by the metrics) and `accepted` is VAL's.

    Returns:
        A scorer whose value holds `q`, `accepted`, `q_parsed`, `unparsed`, `refused` and the
        Q components `q_ans`, `q_bbox`, `q_reason`, `iou`; its metadata holds the parsed trace,
        the parse problems, the verifier's errors and its corrected output.
    """

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
        parsed_fully = parsed.answer is not None and parsed.bbox is not None
        refused = is_refusal(state.output, parsed)
        ungrounded = check(parsed, meta) if check is not None else []
        accepted = result.accepted and not ungrounded
        decision = "ACCEPT" if accepted else "REJECT"
        status = "REFUSED" if refused else ("UNPARSED" if not parsed_fully else decision)
        return Score(
            value={
                "q": result.q,
                "accepted": float(accepted),
                "q_parsed": result.q if parsed_fully else math.nan,
                "unparsed": float(not parsed_fully),
                "refused": float(refused),
                "q_ans": result.q_ans,
                "q_bbox": result.q_bbox,
                "q_reason": result.q_reason,
                "iou": result.iou,
                "grounded": math.nan if check is None else float(not ungrounded),
                "accepted_val": math.nan if check is None else float(result.accepted),
            },
            answer=parsed.answer,
            explanation=f"{status} Q={result.q:.3f}; "
            + "; ".join(parsed.problems + ungrounded + (result.fixes or ["no errors"])),
            metadata={
                "trace": {
                    "reasoning": parsed.reasoning,
                    "answer": parsed.answer,
                    "bbox": list(parsed.bbox) if parsed.bbox else None,
                },
                "parse_problems": parsed.problems,
                "grounding_problems": ungrounded,
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
