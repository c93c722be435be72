"""Full fine-tuning of a tiny random causal LM (`docket.core.tiny_models.build_tiny_lm`), the
stand-in for a pretrained LLM in CPU runs and tests.
"""

from __future__ import annotations


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
