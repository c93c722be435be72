"""The few operations DiSPaT, AnoLLM and the SAR toy experiment need from a tiny
character-level causal LM (`docket.core.tiny_models.ascii_tokenizer` and `tiny_causal_lm`):
per-token log-probabilities and sampling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def encode(tokenizer: Any, texts: Sequence[str], eos: bool = True) -> Any:
    """`<s> text </s>` token ids, right-padded; returns (ids, attention mask) tensors."""
    import torch

    rows = [
        [tokenizer.bos_token_id, *tokenizer.encode(t, add_special_tokens=False)]
        + ([tokenizer.eos_token_id] if eos else [])
        for t in texts
    ]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    return ids, mask


def token_logprobs(model: Any, ids: Any, mask: Any) -> Any:
    """log p(token_t | tokens_<t) for t ≥ 1, shape (batch, length − 1); padding gives 0."""
    import torch

    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
    chosen = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return chosen * mask[:, 1:]


def sample_texts(
    model: Any, tokenizer: Any, n: int, max_new_tokens: int, temperature: float = 1.0, seed: int = 0
) -> list[str]:
    """`n` texts sampled from `<s>` until `</s>` (or the length limit)."""
    import torch

    torch.manual_seed(seed)
    start = torch.full((n, 1), tokenizer.bos_token_id, dtype=torch.long)
    with torch.no_grad():
        out = model.generate(
            start,
            attention_mask=torch.ones_like(start),
            do_sample=True,
            temperature=temperature,
            top_k=0,
            max_new_tokens=max_new_tokens,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    return [tokenizer.decode(row[1:], skip_special_tokens=True) for row in out]
