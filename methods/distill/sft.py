"""DocVAL two-stage SFT: stage 1 on validated teacher traces, stage 2 on the student's verified
errors (validator feedback in the input, the corrected output as the target), iterated until the
validator's acceptance rate stops improving.

The student is any `AutoModelForImageTextToText` checkpoint with a processor and chat template
(`HFStudent`). Without `--model-id` it is a tiny random LLaVA built offline by
`docket.core.tiny_models.build_tiny_vlm` (tokenizer trained on the traces), which trains on a
CPU in seconds.
The saved student (`OUT/model`) is a checkpoint directory that
`inspect eval docket/docval_grounding --model docket/local/OUT/model` scores: the student is
trained on exactly the prompt that task sends in vision mode (`output_format.grounding_prompt`).

CPU check: `python methods/distill/scripts/sft.py --traces T.jsonl --heldout H.jsonl --out DIR`.
Real compact VLM on GPU: add `--model-id HuggingFaceTB/SmolVLM-256M-Instruct`; see
`methods/distill/README.md`. Inputs are rows written by `methods/distill/scripts/export.py`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from docket.core.tiny_models import build_tiny_vlm
from docket.methods.distill.output_format import grounding_prompt, parse_output
from docket.methods.distill.validator import Region, feedback_text, validate


@dataclass(frozen=True)
class Example:
    """One supervised pair: page image, prompt text and target text."""

    image: str
    prompt: str
    target: str


@dataclass
class SFTConfig:
    """Hyper-parameters (DocVAL defaults noted; the tiny CPU model needs a larger lr)."""

    lr: float = 2e-3  # DocVAL: 2e-4 (stage 1), 5e-6 to 2e-4 (stage 2)
    epochs: int = 3  # DocVAL: 3
    epochs_per_iteration: int = 2  # DocVAL: 2 per refinement iteration
    batch_size: int = 8  # examples per optimiser step (DocVAL: 32 with grad-accum 4)
    max_iterations: int = 3  # DocVAL config: 20; guide: 5
    window: int = 3  # convergence window
    min_improvement: float = 0.05  # stop when acceptance improves less than this over the window
    max_new_tokens: int = 160
    max_length: int = 1024  # tokens of prompt + target kept for training
    seed: int = 0


@dataclass
class SFTReport:
    """Losses per stage-1 epoch and the stage-2 refinement history."""

    stage1_losses: list[float] = field(default_factory=list)
    stage2: list[dict[str, float]] = field(default_factory=list)
    final_acceptance: float = 0.0


def format_target(reasoning: str, answer: str | None, bbox: Sequence[float] | None) -> str:
    """The DocVAL output contract."""
    box = "none" if bbox is None else str([round(v) for v in bbox])
    return f"REASONING: {reasoning}\nANSWER: {answer or ''}\nBBOX: {box}"


def prompt_of(row: dict[str, Any], feedback: str = "") -> str:
    """Student input text: `docval_grounding`'s vision prompt (plus verifier feedback in
    stage 2)."""
    text = grounding_prompt(
        str(row.get("doc_id", "?")), int(row["width"]), int(row["height"]), str(row["question"])
    )
    return text + (f"\nFeedback:\n{feedback}" if feedback else "")


class Student(Protocol):
    """What the two stages need from a trainable vision-language model."""

    def fit(self, examples: list[Example], epochs: int) -> list[float]: ...

    def generate(self, image: str, prompt: str) -> str: ...

    def save(self, out: Path) -> None: ...


class HFStudent:
    """A vision-language model (`AutoModelForImageTextToText` + processor with a chat template).

    `model_id` is a local checkpoint directory (loaded offline) or a Hub id (downloaded).
    Training: AdamW, `batch_size` examples per step (gradient accumulation), loss on the
    assistant turn only, bf16 on a GPU. Generation: greedy. The user turn is the page image
    followed by the prompt text, as `docket/docval_grounding` sends it.
    """

    def __init__(self, model_id: str, cfg: SFTConfig) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.cfg = cfg
        local = Path(model_id).is_dir()
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.processor = AutoProcessor.from_pretrained(model_id, local_files_only=local)
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        torch.manual_seed(cfg.seed)
        self.model = AutoModelForImageTextToText.from_pretrained(
            model_id, dtype=dtype, local_files_only=local
        )
        self.model.to(torch.device(self.device))  # type: ignore[arg-type]
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.01)

    def _inputs(self, example: Example, with_target: bool) -> dict[str, Any]:
        from PIL import Image

        messages: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": [{"type": "image"}, {"type": "text", "text": example.prompt}],
            }
        ]
        if with_target:
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": example.target}]}
            )
        text = self.processor.apply_chat_template(messages, add_generation_prompt=not with_target)
        with Image.open(example.image) as image:
            batch = self.processor(
                text=[text],
                images=[image.convert("RGB")],
                return_tensors="pt",
                add_special_tokens=False,
            )
        return {k: v.to(self.device) for k, v in batch.items()}

    def _loss(self, example: Example) -> Any:
        full = self._inputs(example, with_target=True)
        prompt_len = self._inputs(example, with_target=False)["input_ids"].shape[1]
        keep = max(prompt_len + 1, self.cfg.max_length)
        for key in ("input_ids", "attention_mask"):
            full[key] = full[key][:, :keep]
        labels = full["input_ids"].clone()
        labels[:, :prompt_len] = -100
        return self.model(**full, labels=labels).loss

    def fit(self, examples: list[Example], epochs: int) -> list[float]:
        """Train on `examples`; return the mean target-token loss of each epoch."""
        rng = random.Random(self.cfg.seed)
        losses: list[float] = []
        self.model.train()
        for _ in range(epochs):
            order = list(examples)
            rng.shuffle(order)
            total = 0.0
            for start in range(0, len(order), self.cfg.batch_size):
                chunk = order[start : start + self.cfg.batch_size]
                self.optimizer.zero_grad()
                for ex in chunk:
                    loss = self._loss(ex)
                    (loss / len(chunk)).backward()
                    total += loss.item()
                self.optimizer.step()
            losses.append(total / max(len(order), 1))
        return losses

    def generate(self, image: str, prompt: str) -> str:
        """Greedy generation of the answer turn."""
        import torch

        self.model.eval()
        inputs = self._inputs(Example(image, prompt, ""), with_target=False)
        with torch.no_grad():
            out = self.model.generate(
                **inputs, max_new_tokens=self.cfg.max_new_tokens, do_sample=False
            )
        return str(
            self.processor.batch_decode(
                out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True
            )[0]
        )

    def save(self, out: Path) -> None:
        """Save model and processor: a checkpoint `docket/local/<out>` loads."""
        self.model.save_pretrained(str(out))
        self.processor.save_pretrained(str(out))


def tiny_student(folder: Path, rows: list[dict[str, Any]], cfg: SFTConfig) -> HFStudent:
    """A tiny random LLaVA written to `folder`, its tokenizer trained on the rows' prompts and
    targets, loaded as an `HFStudent`."""
    corpus = [prompt_of(r) for r in rows] + [
        format_target(r.get("reasoning", ""), r.get("answer"), r.get("bbox")) for r in rows
    ]
    corpus.append("Feedback:\nVERIFIER: INVALID (Q=0.00) [critical] [high] [medium] [low]")
    return HFStudent(str(build_tiny_vlm(folder, corpus, seed=cfg.seed)), cfg)


def _regions(row: dict[str, Any]) -> list[Region]:
    return [
        Region(int(r[0]), (float(r[1]), float(r[2]), float(r[3]), float(r[4])), str(r[5]))
        for r in row.get("regions", [])
    ]


def verify(student: Student, rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """Generate on `rows` and run the validator (verifier mode) on each output."""
    results = []
    for row in rows:
        parsed = parse_output(student.generate(row["image"], prompt_of(row)))
        results.append(
            (
                row,
                validate(
                    parsed.answer,
                    parsed.bbox,
                    parsed.reasoning,
                    row["gt_answer"],
                    row["gt_bbox"],
                    _regions(row),
                    row["question"],
                ),
            )
        )
    return results


def stage1_examples(traces: list[dict[str, Any]]) -> list[Example]:
    """Validated teacher traces as (image, question) -> CoT/answer/box pairs."""
    return [
        Example(r["image"], prompt_of(r), format_target(r["reasoning"], r["answer"], r["bbox"]))
        for r in traces
    ]


def run_two_stage(
    student: Student, traces: list[dict[str, Any]], heldout: list[dict[str, Any]], cfg: SFTConfig
) -> SFTReport:
    """Stage 1 on `traces`, then validator-driven refinement on `heldout` (DocVAL phase B)."""
    report = SFTReport(stage1_losses=student.fit(stage1_examples(traces), cfg.epochs))
    acceptance: list[float] = []
    for iteration in range(cfg.max_iterations):
        results = verify(student, heldout)
        wrong = [(row, v) for row, v in results if not v.accepted]
        acceptance.append(1 - len(wrong) / max(len(results), 1))
        if not wrong:
            break
        if len(acceptance) > cfg.window and (
            acceptance[-1] - acceptance[-1 - cfg.window] < cfg.min_improvement
        ):
            break
        corrections = [
            Example(
                row["image"],
                prompt_of(row, feedback_text(v)),
                format_target(v.corrected["reasoning"], v.corrected["answer"], v.corrected["bbox"]),
            )
            for row, v in wrong
        ]
        losses = student.fit(corrections, cfg.epochs_per_iteration)
        report.stage2.append(
            {
                "iteration": iteration,
                "acceptance": acceptance[-1],
                "corrections": len(corrections),
                "loss": losses[-1],
            }
        )
    final = verify(student, heldout)
    report.final_acceptance = sum(v.accepted for _, v in final) / max(len(final), 1)
    return report
