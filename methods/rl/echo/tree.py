"""ECHO's tree-structured rollout controller over any model that yields next-token logits.

`tree_rollout(next_logits, prompt, n, cfg)`:

1. sample `n_base` plain completions (default n // 2) token by token, tracking the signals;
2. for each base completion, `plan_branch` finds the first branch point t and its width b;
   each top-b candidate other than the base's own token starts a child from
   `prefix[:t] + candidate`, generated with online pruning (`SignalTracker.prune_check`): a
   branch stops at its first trigger, keeping the tokens up to it;
3. the completion budget: base and surviving children, in that order, truncated to n; when
   fewer, plain samples fill it (released behaviour). Pruned branches are dropped unless
   `keep_pruned` (they are truncated and carry no final answer).

Like the released code, the tree is one level deep (one branch point per base completion).
A child re-uses its prefix, so only its own tokens cost generation: `tokens_generated` counts
sampled tokens and `forward_calls` the batched logits calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .branching import SignalTracker, StepStat, TreeConfig, plan_branch

#: Next-token logits (N, V) for N token sequences (prompt + response so far).
LogitsFn = Callable[[list[list[int]]], Tensor]


@dataclass
class Completion:
    """A response (token ids), how it arose ("base", "branch", "fill") and its signals."""

    tokens: list[int]
    origin: str
    stats: list[StepStat]
    pruned: str | None = None
    finished: bool = False


@dataclass
class TreeResult:
    """The n completions and what the tree cost."""

    completions: list[Completion]
    forward_calls: int = 0
    tokens_generated: int = 0
    branch_points: int = 0
    children: int = 0
    pruned: Counter[str] = field(default_factory=Counter)
    dropped: int = 0


@dataclass
class _Running:
    prefix: list[int]
    completion: Completion
    tracker: SignalTracker
    online_prune: bool


def _sample(logits: Tensor, temperature: float, generator: torch.Generator | None) -> Tensor:
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs.cpu(), 1, generator=generator).flatten().to(logits.device)


def _extend(
    next_logits: LogitsFn,
    running: list[_Running],
    result: TreeResult,
    *,
    max_new_tokens: int,
    eos_id: int | None,
    temperature: float,
    generator: torch.Generator | None,
) -> None:
    """Generate every running sequence to EOS, the token limit or a prune trigger."""
    active = [r for r in running if len(r.completion.tokens) < max_new_tokens]
    while active:
        logits = next_logits([r.prefix + r.completion.tokens for r in active])
        result.forward_calls += 1
        tokens = _sample(logits, temperature, generator)
        still: list[_Running] = []
        for row, item in enumerate(active):
            token = int(tokens[row])
            item.tracker.push(logits[row])
            item.completion.tokens.append(token)
            result.tokens_generated += 1
            if item.online_prune:
                decision = item.tracker.prune_check()
                if decision is not None:
                    item.completion.pruned = decision.reason
                    result.pruned[decision.reason] += 1
                    continue
            if eos_id is not None and token == eos_id:
                item.completion.finished = True
                continue
            if len(item.completion.tokens) < max_new_tokens:
                still.append(item)
        active = still


def tree_rollout(
    next_logits: LogitsFn,
    prompt: Sequence[int],
    n: int,
    cfg: TreeConfig,
    *,
    max_new_tokens: int,
    eos_id: int | None,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> TreeResult:
    """n completions of `prompt` from base samples, their branches and plain fill samples."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    prompt = list(prompt)
    result = TreeResult(completions=[])

    def extend(running: list[_Running]) -> None:
        _extend(
            next_logits,
            running,
            result,
            max_new_tokens=max_new_tokens,
            eos_id=eos_id,
            temperature=temperature,
            generator=generator,
        )

    def fresh(count: int, origin: str) -> list[_Running]:
        runs = []
        for _ in range(count):
            tracker = SignalTracker(cfg)
            runs.append(_Running(prompt, Completion([], origin, tracker.stats), tracker, False))
        return runs

    bases = fresh(min(n, cfg.n_base or max(1, n // 2)), "base")
    extend(bases)
    children: list[_Running] = []
    for base in bases:
        plan = plan_branch(base.tracker.stats, cfg)
        if plan is None:
            continue
        result.branch_points += 1
        shared = base.completion.tokens[: plan.position]
        for candidate in plan.candidates:
            if candidate == base.completion.tokens[plan.position]:
                continue  # the base completion already follows this token
            tracker = base.tracker.fork(plan.position + 1)
            completion = Completion([*shared, candidate], "branch", tracker.stats)
            completion.finished = eos_id is not None and candidate == eos_id
            children.append(_Running(prompt, completion, tracker, True))
            result.children += 1
    growing = [c for c in children if not c.completion.finished]
    extend(growing)
    pruned = [c for c in children if c.completion.pruned is not None]
    kept = [b.completion for b in bases] + [
        c.completion for c in children if cfg.keep_pruned or c.completion.pruned is None
    ]
    result.dropped = max(0, len(kept) - n) + (0 if cfg.keep_pruned else len(pruned))
    kept = kept[:n]
    if len(kept) < n:
        fill = fresh(n - len(kept), "fill")
        extend(fill)
        kept += [f.completion for f in fill]
    result.completions = kept
    return result
