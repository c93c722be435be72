"""Token handling and target log-probabilities for causal LMs (shared by SHINE and FedPissa).

Prompts are built as `docket/local` builds them (the chat template with the generation prompt),
so what a method trains on is what the harness later sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from docket.methods.adaptation.lora import Adapters, functional_lora


def prompt_ids(tokenizer: Any, text: str) -> list[int]:
    """Token ids of a one-turn user prompt as `docket/local` builds it: the chat template with
    the generation prompt when the tokenizer has one, else `user: ...` / `assistant:` lines."""
    if getattr(tokenizer, "chat_template", None):
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        return list(tokenizer(str(rendered), add_special_tokens=False)["input_ids"])
    return list(tokenizer(f"user: {text}\nassistant:", add_special_tokens=True)["input_ids"])


def text_ids(tokenizer: Any, text: str, limit: int | None = None) -> list[int]:
    """Plain token ids of `text` (no special tokens), cut to `limit`."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return ids[:limit] if limit is not None else ids


def target_ids(tokenizer: Any, text: str) -> list[int]:
    """Token ids of a target followed by the end-of-sequence token (so generation stops)."""
    eos = tokenizer.eos_token_id
    return text_ids(tokenizer, text) + ([int(eos)] if eos is not None else [])


def target_logprobs(
    backbone: nn.Module,
    adapters: Adapters | None,
    prompts: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
) -> list[torch.Tensor]:
    """Per-token log-probabilities of each target after its prompt, under `adapters` (one per
    sample; None: the bare backbone). Right padding keeps every row exact under causal
    attention."""
    rows = [list(p) + list(t) for p, t in zip(prompts, targets, strict=True)]
    width = max(len(r) for r in rows)
    device = next(backbone.parameters()).device
    ids = torch.zeros(len(rows), width, dtype=torch.long, device=device)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, device=device)
    if adapters is None:
        logits = backbone(input_ids=ids, use_cache=False).logits
    else:
        with functional_lora(backbone, adapters):
            logits = backbone(input_ids=ids, use_cache=False).logits
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    out = []
    for i, (prompt, target) in enumerate(zip(prompts, targets, strict=True)):
        start = len(prompt)
        positions = torch.arange(start - 1, start - 1 + len(target), device=device)
        out.append(logprobs[i, positions, torch.tensor(list(target), device=device)])
    return out


def freeze(backbone: nn.Module) -> None:
    """Freeze the backbone (SHINE trains only the hypernet)."""
    for parameter in backbone.parameters():
        parameter.requires_grad_(False)
