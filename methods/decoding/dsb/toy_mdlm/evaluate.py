"""Held-out exact-match accuracy and decoding cost of a toy checkpoint under DSB settings.

`score` decodes a held-out set under one setting of `VARIANTS`; the CLI that prints one JSON
line per setting is `methods/decoding/scripts/evaluate_toy_mdlm.py`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from . import data

#: The settings `evaluate_toy_mdlm.py` and the `dsb_nfe` / `dsb_cache` benchmarks compare.
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
    from ..algorithm import DSBSettings, ToyMaskedLM, generate

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
