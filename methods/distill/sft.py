"""DocVAL two-stage SFT: stage 1 on validated teacher traces, stage 2 on the student's verified
errors (validator feedback in the input, the corrected output as the target), iterated until the
validator's acceptance rate stops improving.

CPU check: `python -m docket.methods.distill.sft --traces T.jsonl --heldout H.jsonl --out DIR`
trains a tiny random vision-language model (ViT encoder + GPT-2 decoder with cross-attention,
byte-level vocabulary) end to end. Real compact VLM on GPU: add `--model-id
HuggingFaceTB/SmolVLM-256M-Instruct` (any `AutoModelForImageTextToText` with a chat template);
see `methods/distill/README.md`. Inputs are rows written by `methods/distill/export.py`.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from docket.methods.distill.export import read_jsonl
from docket.methods.distill.output_format import parse_output
from docket.methods.distill.validator import Region, feedback_text, validate

if TYPE_CHECKING:
    import torch


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
    batch_size: int = 8  # DocVAL: 32 with grad-accum 4
    max_iterations: int = 3  # DocVAL config: 20; guide: 5
    window: int = 3  # convergence window
    min_improvement: float = 0.05  # stop when acceptance improves less than this over the window
    max_new_tokens: int = 160
    max_length: int = 384  # tokens of prompt + target kept for training
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
    """Student input text: the question (plus verifier feedback in stage 2)."""
    text = f"Page {row['width']}x{row['height']}. Question: {row['question']}\n"
    return text + (f"Feedback:\n{feedback}\n" if feedback else "")


class Student(Protocol):
    """What the two stages need from a trainable vision-language model."""

    def fit(self, examples: list[Example], epochs: int) -> list[float]: ...

    def generate(self, image: str, prompt: str) -> str: ...

    def save(self, out: Path) -> None: ...


class ByteTokenizer:
    """Bytes shifted by 3; 0 = pad, 1 = bos, 2 = eos."""

    pad, bos, eos, vocab_size = 0, 1, 2, 259

    def encode(self, text: str) -> list[int]:
        return [b + 3 for b in text.encode("utf-8")]

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i - 3 for i in ids if i >= 3).decode("utf-8", errors="replace")


class TinyStudent:
    """A random tiny VisionEncoderDecoder (ViT + GPT-2) trained with a plain AdamW loop."""

    def __init__(self, cfg: SFTConfig, image_size: int = 64, hidden: int = 64) -> None:
        import torch
        from transformers import (
            GPT2Config,
            VisionEncoderDecoderConfig,
            VisionEncoderDecoderModel,
            ViTConfig,
        )

        torch.manual_seed(cfg.seed)
        self.cfg, self.image_size, self.tok = cfg, image_size, ByteTokenizer()
        encoder = ViTConfig(
            image_size=image_size,
            patch_size=16,
            num_channels=1,
            hidden_size=hidden,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=hidden * 2,
        )
        decoder = GPT2Config(
            vocab_size=self.tok.vocab_size,
            n_positions=cfg.max_length + 8,
            n_embd=hidden,
            n_layer=2,
            n_head=2,
            add_cross_attention=True,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        )
        config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
        config.decoder_start_token_id, config.pad_token_id = 1, 0
        self.model = VisionEncoderDecoderModel(config=config)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.01)

    def _pixels(self, paths: Sequence[str]) -> torch.Tensor:
        import numpy as np
        import torch
        from PIL import Image

        arrays = []
        for path in paths:
            with Image.open(path) as image:
                small = image.convert("L").resize((self.image_size, self.image_size))
            arrays.append(np.asarray(small, dtype="float32") / 255.0)
        return torch.tensor(np.stack(arrays))[:, None]

    def _batch(self, examples: Sequence[Example]) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        rows, masks = [], []
        for ex in examples:
            # the prompt keeps at most half the window so every example trains on its target
            prompt = [self.tok.bos, *self.tok.encode(ex.prompt)][: self.cfg.max_length // 2]
            target = [*self.tok.encode(ex.target), self.tok.eos]
            seq = (prompt + target)[: self.cfg.max_length]
            rows.append(seq)
            masks.append([0] * len(prompt) + [1] * (len(seq) - len(prompt)))
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [self.tok.pad] * (width - len(r)) for r in rows])
        mask = torch.tensor([m + [0] * (width - len(m)) for m in masks], dtype=torch.bool)
        return ids, mask

    def fit(self, examples: list[Example], epochs: int) -> list[float]:
        """Train on `examples`; return the mean target-token loss of each epoch."""
        import torch

        rng = random.Random(self.cfg.seed)
        losses: list[float] = []
        self.model.train()
        for _ in range(epochs):
            order = list(examples)
            rng.shuffle(order)
            total, count = 0.0, 0
            for start in range(0, len(order), self.cfg.batch_size):
                chunk = order[start : start + self.cfg.batch_size]
                ids, mask = self._batch(chunk)
                logits = self.model(
                    pixel_values=self._pixels([e.image for e in chunk]), decoder_input_ids=ids
                ).logits
                target_mask = mask[:, 1:]
                loss = torch.nn.functional.cross_entropy(
                    logits[:, :-1][target_mask], ids[:, 1:][target_mask]
                )
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total, count = total + loss.item() * len(chunk), count + len(chunk)
            losses.append(total / max(count, 1))
        return losses

    def generate(self, image: str, prompt: str) -> str:
        """Greedy decoding of the target after the prompt."""
        import torch

        self.model.eval()
        ids = [self.tok.bos, *self.tok.encode(prompt)][: self.cfg.max_length // 2]
        start = len(ids)
        pixels = self._pixels([image])
        with torch.no_grad():
            for _ in range(self.cfg.max_new_tokens):
                if len(ids) >= self.cfg.max_length:
                    break
                logits = self.model(
                    pixel_values=pixels, decoder_input_ids=torch.tensor([ids])
                ).logits
                nxt = int(logits[0, -1].argmax())
                if nxt == self.tok.eos:
                    break
                ids.append(nxt)
        return self.tok.decode(ids[start:])

    def save(self, out: Path) -> None:
        """Save weights and config with `save_pretrained`."""
        self.model.save_pretrained(str(out))


class HFStudent:
    """A real compact VLM (`AutoModelForImageTextToText` + chat template), e.g. on a GPU.

    Not exercised by the offline tests: it needs downloaded weights.
    """

    def __init__(self, model_id: str, cfg: SFTConfig) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.cfg = cfg
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.processor = AutoProcessor.from_pretrained(model_id)
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        self.model = AutoModelForImageTextToText.from_pretrained(model_id, dtype=dtype)
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
                text=[text], images=[[image.convert("RGB")]], return_tensors="pt"
            )
        return {k: v.to(self.device) for k, v in batch.items()}

    def fit(self, examples: list[Example], epochs: int) -> list[float]:
        """One example per step; the loss covers the assistant turn only."""
        losses: list[float] = []
        self.model.train()
        for _ in range(epochs):
            total = 0.0
            for ex in examples:
                full = self._inputs(ex, with_target=True)
                prompt_len = self._inputs(ex, with_target=False)["input_ids"].shape[1]
                labels = full["input_ids"].clone()
                labels[:, :prompt_len] = -100
                loss = self.model(**full, labels=labels).loss
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total += loss.item()
            losses.append(total / max(len(examples), 1))
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
        """Save model and processor."""
        self.model.save_pretrained(str(out))
        self.processor.save_pretrained(str(out))


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


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description="DocVAL two-stage SFT.")
    parser.add_argument("--traces", required=True, help="accepted traces JSONL (export.py)")
    parser.add_argument("--heldout", required=True, help="held-out rows JSONL (export.py --all)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--model-id", default="", help="a real VLM; default: tiny random model")
    for name, value in asdict(SFTConfig()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = parser.parse_args(argv)
    cfg = SFTConfig(**{k: getattr(args, k) for k in asdict(SFTConfig())})
    student: Student = HFStudent(args.model_id, cfg) if args.model_id else TinyStudent(cfg)
    report = run_two_stage(student, read_jsonl(args.traces), read_jsonl(args.heldout), cfg)
    args.out.mkdir(parents=True, exist_ok=True)
    student.save(args.out / "model")
    (args.out / "report.json").write_text(json.dumps(asdict(report), indent=2))
    print(json.dumps(asdict(report)))


if __name__ == "__main__":
    main()
