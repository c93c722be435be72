"""Held-out exact-match accuracy and decoding cost of a toy checkpoint under DSB settings.

    python -m docket.methods.decoding.toy_mdlm.evaluate DIR [--size 100] [--block-length 4]
        [--preamble SHOTS]

prints one JSON line per schedule/cache setting (accuracy, mean NFE, mean seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import data

#: The settings compared in the README and the `dsb_nfe` / `dsb_cache` benchmarks.
#: `vanilla` is LLaDA's original decoder: naive blocks with a fixed quota and no threshold
#: (one token per step unless `--steps` says otherwise), the paper's "vanilla" row.
VARIANTS: dict[str, dict[str, Any]] = {
    "vanilla": {"schedule": "naive", "threshold": None},
    "naive": {"schedule": "naive"},
    "naive+dual_cache": {"schedule": "naive", "cache": "dsb"},
    "dsb_const": {"schedule": "dsb_const"},
    "dsb": {"schedule": "dsb"},
    "dsb+cache": {"schedule": "dsb", "cache": "dsb"},
}


@dataclass(frozen=True)
class Score:
    """Accuracy and cost of one setting on an example set."""

    name: str
    accuracy: float
    mean_nfe: float
    mean_processed: float
    seconds: float
    outputs: tuple[str, ...]

    def row(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "accuracy": round(self.accuracy, 4),
            "mean_nfe": round(self.mean_nfe, 3),
            "mean_processed_tokens": round(self.mean_processed, 1),
            "seconds": round(self.seconds, 3),
        }


def answer_text(tokens: list[int], tokenizer: Any, eos_id: int) -> str:
    """The decoded answer up to the first EOS."""
    cut = tokens.index(eos_id) if eos_id in tokens else len(tokens)
    return str(tokenizer.decode(tokens[:cut], skip_special_tokens=True))


def score(
    model: Any,
    tokenizer: Any,
    examples: list[data.Example],
    name: str,
    gen_length: int = 24,
    preamble: str = "",
    **settings: Any,
) -> Score:
    """Decode every example with DSB settings `settings` and score exact match (`preamble`:
    text before each question, e.g. `data.preamble(6)`)."""
    from ..dsb import DSBSettings, ToyMaskedLM, generate

    masked = ToyMaskedLM(model, model.config.mask_token_id)
    eos_id = model.config.eos_token_id
    config = DSBSettings(gen_length=gen_length, **settings)
    correct, nfes, processed, outputs = 0, [], [], []
    started = time.perf_counter()
    for example in examples:
        prompt = list(
            tokenizer(data.render_prompt(preamble + example.question), add_special_tokens=False)[
                "input_ids"
            ]
        )
        result = generate(masked, prompt, config)
        text = answer_text(result.tokens, tokenizer, eos_id)
        outputs.append(text)
        correct += text == example.answer
        nfes.append(result.trace.nfe)
        processed.append(result.trace.processed_tokens)
    seconds = time.perf_counter() - started
    return Score(
        name,
        correct / len(examples),
        statistics.mean(nfes),
        statistics.mean(processed),
        seconds,
        tuple(outputs),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docket.methods.decoding.toy_mdlm.evaluate")
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--block-length", type=int, default=4)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument(
        "--steps", type=int, default=0, help="vanilla's steps (0: one token per step)"
    )
    parser.add_argument("--gen-length", type=int, default=24)
    parser.add_argument("--prefix-window", type=int, default=4)
    parser.add_argument("--only", nargs="*", choices=list(VARIANTS))
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument(
        "--preamble", type=int, default=0, help="solved examples before each question"
    )
    args = parser.parse_args(argv)
    import torch

    from .checkpoint import load

    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = load(args.checkpoint)
    examples = data.eval_set(args.size, seed=args.seed)
    common: dict[str, Any] = {
        "block_length": args.block_length,
        "threshold": args.threshold,
        "steps": args.steps or args.gen_length,
        "prefix_window": args.prefix_window,
    }
    for name in args.only or list(VARIANTS):
        result = score(
            model,
            tokenizer,
            examples,
            name,
            gen_length=args.gen_length,
            preamble=data.preamble(args.preamble) if args.preamble else "",
            **{**common, **VARIANTS[name]},
        )
        print(json.dumps(result.row()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
