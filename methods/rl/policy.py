"""A transformers causal LM as an RL policy: batched sampling with a KV cache, per-token
log-probabilities of given responses, next-token logits for ECHO's tree, and cost counters.

Prompts go through the tokenizer's chat template exactly as `docket/local` renders an Inspect
sample's user message (`add_generation_prompt=True`, then encoded without special tokens), so
a checkpoint trained here is scored on the prompts it was trained on.

Layout of a scored batch (as TRL's): the prompt left-padded, the response right-padded,
position ids counted over real tokens only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from ..local.sampling import forward_style  # the KV-cache argument name


@dataclass
class GenerationCost:
    """What generation has cost so far: batched calls, forward passes, rollouts, tokens."""

    calls: int = 0
    forwards: int = 0
    rollouts: int = 0
    tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "gen_calls": self.calls,
            "gen_forwards": self.forwards,
            "gen_rollouts": self.rollouts,
            "gen_tokens": self.tokens,
        }


@dataclass
class Sampled:
    """Responses to prompts: token ids (EOS included when produced), their behaviour
    log-probabilities and which prompt each answers."""

    prompt_index: list[int]
    tokens: list[list[int]]
    logps: list[list[float]]
    texts: list[str] = field(default_factory=list)


@dataclass
class Scored:
    """Per-token log-probabilities (B, T) of the responses, their mask, and optionally the
    logits (B, T, V) that produced them."""

    logp: Tensor
    mask: Tensor
    logits: Tensor | None = None


def pad_left(rows: list[list[int]], pad: int) -> tuple[Tensor, Tensor]:
    """Left-padded ids (B, L) and their attention mask."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row) :] = torch.tensor(row)
            mask[i, width - len(row) :] = 1
    return ids, mask


def pad_right(rows: list[list[int]], pad: int) -> tuple[Tensor, Tensor]:
    """Right-padded ids (B, T) and their mask."""
    width = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids, mask


class HFPolicy:
    """Wraps a causal LM and its tokenizer (with a chat template, or plain text if none)."""

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.cost = GenerationCost()
        self.eos_id = int(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else tokenizer.eos_token_id)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def encode_prompt(self, text: str) -> list[int]:
        """Token ids of a user message as `docket/local` sends it."""
        if getattr(self.tokenizer, "chat_template", None):
            rendered = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
            )
            return list(self.tokenizer(rendered, add_special_tokens=False)["input_ids"])
        return list(self.tokenizer(f"user: {text}\nassistant:")["input_ids"])

    def decode(self, tokens: list[int]) -> str:
        """Response text without EOS/pad."""
        kept = [t for t in tokens if t not in (self.eos_id, self.pad_id)]
        return str(self.tokenizer.decode(kept, skip_special_tokens=True))

    def _positions(self, mask: Tensor) -> Tensor:
        return (mask.cumsum(-1) - 1).clamp(min=0)

    @torch.no_grad()
    def sample(
        self,
        prompts: list[list[int]],
        n: int,
        *,
        max_new_tokens: int,
        generator: torch.Generator | None = None,
        greedy: bool = False,
    ) -> Sampled:
        """n responses per prompt (one batched call, KV cache), each ending at EOS or the
        token limit."""
        rows = [p for p in prompts for _ in range(n)]
        index = [i for i in range(len(prompts)) for _ in range(n)]
        ids, mask = pad_left(rows, self.pad_id)
        ids, mask = ids.to(self.device), mask.to(self.device)
        self.model.eval()
        cache_name, extra = forward_style(self.model)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=self._positions(mask),
            use_cache=True,
            **extra,
        )
        self.cost.calls += 1
        self.cost.forwards += 1
        cache = getattr(out, cache_name)
        logits = out.logits[:, -1, :]
        position = self._positions(mask)[:, -1]
        done = torch.zeros(len(rows), dtype=torch.bool, device=self.device)
        tokens: list[list[int]] = [[] for _ in rows]
        logps: list[list[float]] = [[] for _ in rows]
        for step in range(max_new_tokens):
            scaled = torch.log_softmax(logits.float() / max(self.temperature, 1e-6), dim=-1)
            if greedy:
                chosen = scaled.argmax(-1)
            else:
                chosen = torch.multinomial(scaled.exp().cpu(), 1, generator=generator)
                chosen = chosen.flatten().to(self.device)
            picked = scaled.gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
            for i in torch.nonzero(~done).flatten().tolist():
                tokens[i].append(int(chosen[i]))
                logps[i].append(float(picked[i]))
                self.cost.tokens += 1
            done = done | (chosen == self.eos_id)
            if bool(done.all()) or step == max_new_tokens - 1:
                break
            feed = torch.where(done, torch.full_like(chosen, self.pad_id), chosen)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            position = position + 1
            out = self.model(
                input_ids=feed.unsqueeze(-1),
                attention_mask=mask,
                position_ids=position.unsqueeze(-1),
                use_cache=True,
                **{cache_name: cache},
                **extra,
            )
            self.cost.forwards += 1
            cache = getattr(out, cache_name)
            logits = out.logits[:, -1, :]
        self.cost.rollouts += len(rows)
        return Sampled(index, tokens, logps, [self.decode(t) for t in tokens])

    def score(
        self,
        prompts: list[list[int]],
        responses: Tensor,
        response_mask: Tensor,
        *,
        keep_logits: bool = False,
    ) -> Scored:
        """log π(response token | prompt, earlier tokens) (B, T), with gradient."""
        prompt_ids, prompt_mask = pad_left(prompts, self.pad_id)
        device = self.device
        ids = torch.cat([prompt_ids.to(device), responses.to(device)], dim=1)
        mask = torch.cat([prompt_mask.to(device), response_mask.to(device).long()], dim=1)
        logits = self.model(
            input_ids=ids, attention_mask=mask, position_ids=self._positions(mask)
        ).logits
        width = responses.size(1)
        logits = logits[:, prompt_ids.size(1) - 1 : -1, :].float() / max(self.temperature, 1e-6)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, -width:].unsqueeze(-1))
        return Scored(
            logp.squeeze(-1), response_mask.to(device).float(), logits if keep_logits else None
        )

    @torch.no_grad()
    def next_logits(self, sequences: list[list[int]]) -> Tensor:
        """Next-token logits (N, V) after each full token sequence (ECHO's tree)."""
        ids, mask = pad_left(sequences, self.pad_id)
        ids, mask = ids.to(self.device), mask.to(self.device)
        self.model.eval()
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=self._positions(mask))
        self.cost.forwards += 1
        return out.logits[:, -1, :].float() / max(self.temperature, 1e-6)
