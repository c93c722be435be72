"""The warm start: a short SFT on noisy demonstrations, so RL starts from a policy that is
sometimes right (reward between 0.2 and 0.6 at the default settings) rather than from noise."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from .policy import HFPolicy, pad_right
from .tasks import Problem, TaskFamily


@dataclass(frozen=True)
class WarmStart:
    """SFT knobs: steps, batch size, peak learning rate (one-cycle schedule), and the share of
    wrong demonstrations."""

    steps: int = 300
    batch_size: int = 64
    lr: float = 3e-3
    noise: float = 0.3
    seed: int = 0


def demonstration_batch(
    policy: HFPolicy, family: TaskFamily, problems: list[Problem], rng: random.Random, noise: float
) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
    """Prompts, right-padded demonstration tokens (EOS appended) and their mask."""
    prompts = [policy.encode_prompt(p["prompt"]) for p in problems]
    targets = [
        list(
            policy.tokenizer(family.demonstration(p, rng, noise), add_special_tokens=False)[
                "input_ids"
            ]
        )
        + [policy.eos_id]
        for p in problems
    ]
    ids, mask = pad_right(targets, policy.pad_id)
    return prompts, ids, mask


def warm_start(policy: HFPolicy, family: TaskFamily, cfg: WarmStart) -> list[float]:
    """Train on noisy demonstrations of random training problems; return each step's loss."""
    rng = random.Random(cfg.seed)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=cfg.lr, total_steps=max(cfg.steps, 1), pct_start=0.05
    )
    losses = []
    policy.model.train()
    for _ in range(cfg.steps):
        chosen = [family.train_problem(rng) for _ in range(cfg.batch_size)]
        prompts, ids, mask = demonstration_batch(policy, family, chosen, rng, cfg.noise)
        scored = policy.score(prompts, ids, mask)
        loss = -(scored.logp * scored.mask).sum() / scored.mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    policy.model.eval()
    return losses
