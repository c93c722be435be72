"""Tiny random causal LMs built offline from a config, for tests and CPU runners.

The tokenizer is the byte-level BPE with a ChatML template of `methods/distill/tiny_vlm.py`,
trained on the given corpus; the model is a Llama of the requested size.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from docket.methods.distill.tiny_vlm import build_tiny_text_lm


def build_tiny_lm(
    out: Path,
    corpus: Iterable[str],
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int | None = None,
    init_std: float = 0.02,
    seed: int = 0,
) -> Path:
    """Write a random Llama (`hidden`, `layers`, ...) with a BPE tokenizer trained on `corpus`
    to `out` (a checkpoint `docket/local` loads); return `out`.

    `init_std` is the weights' initial standard deviation: Llama's 0.02 gives a random model
    near-uniform outputs it cannot sharpen through a frozen head, so tests of frozen random
    backbones use a larger one.
    """
    import torch
    from transformers import AutoConfig, LlamaForCausalLM

    build_tiny_text_lm(out, corpus, seed=seed)
    config = AutoConfig.from_pretrained(out)
    config.hidden_size = hidden
    config.num_hidden_layers = layers
    config.num_attention_heads = heads
    config.num_key_value_heads = kv_heads
    config.head_dim = hidden // heads
    config.intermediate_size = intermediate or 2 * hidden
    config.initializer_range = init_std
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    model.save_pretrained(out)
    return out


def train_lm(
    model: object,
    tokenizer: object,
    pairs: list[tuple[str, str]],
    *,
    steps: int,
    batch_size: int = 16,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = True,
    description: str = "LM",
) -> list[float]:
    """Fully fine-tune `model` on (prompt, target) pairs (chat-templated prompts, target + EOS),
    the stand-in for a pretrained LLM in CPU runs; returns the loss per step."""
    import random

    import torch

    from docket.methods.adaptation.lm import prompt_ids, target_ids, target_logprobs
    from docket.methods.adaptation.progress import step_bar

    assert isinstance(model, torch.nn.Module)
    encoded = [(prompt_ids(tokenizer, p), target_ids(tokenizer, t)) for p, t in pairs]
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    with step_bar(steps, description, enabled=progress) as advance:
        for _ in range(steps):
            batch = rng.sample(encoded, min(batch_size, len(encoded)))
            logprobs = target_logprobs(model, None, [p for p, _ in batch], [t for _, t in batch])
            loss = -torch.cat(logprobs).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            advance(loss=losses[-1])
    model.eval()
    return losses
