"""A batch of rollouts as the losses see it: prompts, right-padded responses, behaviour
log-probabilities, rewards and group ids (plain tensors; no model, no trainer)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor


@dataclass
class Rollouts:
    """B rollouts.

    Attributes:
        prompt_ids: each prompt's token ids (variable length).
        completion_ids: (B, T) response tokens, right-padded.
        mask: (B, T) 1 on response tokens.
        old_logp: (B, T) log π_old of each response token (the behaviour policy that sampled
            it, or for HiR replays the policy under the *original* instruction).
        rewards: (B,) scalar rewards.
        groups: (B,) group ids (rollouts of the same prompt share one).
        is_replay: (B,) True for rows that were not freshly generated for this update.
        strata: (B,) stratum ids for Stratified GRPO (zeros when unused).
        info: per-row free-form records (task item, answer, constraint judgements, ...).
    """

    prompt_ids: list[list[int]]
    completion_ids: Tensor
    mask: Tensor
    old_logp: Tensor
    rewards: Tensor
    groups: Tensor
    is_replay: Tensor
    strata: Tensor
    info: list[dict[str, object]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.prompt_ids)

    def rows(self, index: Sequence[int] | Tensor) -> Rollouts:
        """The rows at `index`, in that order."""
        picks = torch.as_tensor(list(map(int, index)) if not isinstance(index, Tensor) else index)
        listed = picks.tolist()
        return Rollouts(
            prompt_ids=[self.prompt_ids[i] for i in listed],
            completion_ids=self.completion_ids[picks],
            mask=self.mask[picks],
            old_logp=self.old_logp[picks],
            rewards=self.rewards[picks],
            groups=self.groups[picks],
            is_replay=self.is_replay[picks],
            strata=self.strata[picks],
            info=[self.info[i] for i in listed] if self.info else [],
        )

    @property
    def tokens(self) -> int:
        """Response tokens in the batch."""
        return int(self.mask.sum())


def _pad_right(tensors: Sequence[Tensor], width: int, value: float) -> Tensor:
    return torch.stack(
        [torch.nn.functional.pad(t, (0, width - t.size(-1)), value=value) for t in tensors]
    )


def concat(parts: Sequence[Rollouts]) -> Rollouts:
    """Rows of several batches in one (responses re-padded to the longest)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        raise ValueError("nothing to concatenate")
    width = max(p.completion_ids.size(1) for p in parts)
    return Rollouts(
        prompt_ids=[ids for p in parts for ids in p.prompt_ids],
        completion_ids=torch.cat([_pad_right(list(p.completion_ids), width, 0) for p in parts]),
        mask=torch.cat([_pad_right(list(p.mask), width, 0) for p in parts]),
        old_logp=torch.cat([_pad_right(list(p.old_logp), width, 0.0) for p in parts]),
        rewards=torch.cat([p.rewards for p in parts]),
        groups=torch.cat([p.groups for p in parts]),
        is_replay=torch.cat([p.is_replay for p in parts]),
        strata=torch.cat([p.strata for p in parts]),
        info=[row for p in parts for row in (p.info or [{}] * len(p))],
    )


def with_prompts(batch: Rollouts, prompt_ids: list[list[int]], **changes: object) -> Rollouts:
    """A copy of `batch` with new prompts (and any other field changed), same responses."""
    if len(prompt_ids) != len(batch):
        raise ValueError(f"{len(prompt_ids)} prompts for {len(batch)} rows")
    return replace(batch, prompt_ids=prompt_ids, **changes)  # type: ignore[arg-type]
