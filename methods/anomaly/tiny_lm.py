"""A tiny character-level causal LM built offline from a config (no download), and the few
operations DiSPaT, AnoLLM and the SAR toy experiment need from it: per-token log-probabilities,
training steps, sampling.

The tokenizer has one token per printable ASCII character plus `<pad>`, `<s>`, `</s>`,
`<unk>`; it is a `PreTrainedTokenizerFast`, so a saved model is an ordinary transformers
checkpoint (`docket/local/PATH` loads it). `CHAT_TEMPLATE` renders a conversation as
`Q: ...` / `A: ...` lines for the SAR student.
"""

from __future__ import annotations

import contextlib
import string
from collections.abc import Iterator, Sequence
from typing import Any

ALPHABET = string.printable[:95] + "\n"  # printable ASCII (space included) and newline
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}A: {{ m['content'] }}</s>\n"
    "{% else %}Q: {{ m['content'] }}\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}A: {% endif %}"
)


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's CPU thread count set to `count` inside the block (0: unchanged).

    Tiny models train fastest on one thread; on a loaded machine two threads were 3-9x slower.
    """
    import torch

    before = torch.get_num_threads()
    if count > 0:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def char_tokenizer(model_max_length: int = 1024) -> Any:
    """A character-level `PreTrainedTokenizerFast` (no download, deterministic ids)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS)}
    for character in ALPHABET:
        vocab.setdefault(character, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"</s>|<s>|[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=model_max_length,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_causal_lm(
    vocab_size: int,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    context: int = 512,
    seed: int = 0,
) -> Any:
    """A randomly initialised Llama of the given size (float32, CPU)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=context,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config)


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
