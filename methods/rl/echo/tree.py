"""ECHO's tree-structured rollout controller over any model that yields next-token logits.

`tree_rollouts(next_logits, prompts, n, cfg)` (all prompts advance together, one batched
logits call per token; `tree_rollout` for one prompt):

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
sampled tokens and `forward_calls` the logits calls a prompt took part in.
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
    result: TreeResult


def _sample(logits: Tensor, temperature: float, generator: torch.Generator | None) -> Tensor:
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs.cpu(), 1, generator=generator).flatten().to(logits.device)


def _extend(
    next_logits: LogitsFn,
    running: list[_Running],
    *,
    max_new_tokens: int,
    eos_id: int | None,
    temperature: float,
    generator: torch.Generator | None,
) -> int:
    """Generate every running sequence (of any prompt) to EOS, the token limit or a prune
    trigger, one batched logits call per token; return the number of calls."""
    calls = 0
    active = [r for r in running if len(r.completion.tokens) < max_new_tokens]
    while active:
        logits = next_logits([r.prefix + r.completion.tokens for r in active])
        calls += 1
        for result in {id(r.result): r.result for r in active}.values():
            result.forward_calls += 1
        tokens = _sample(logits, temperature, generator)
        still: list[_Running] = []
        for row, item in enumerate(active):
            token = int(tokens[row])
            item.tracker.push(logits[row])
            item.completion.tokens.append(token)
            item.result.tokens_generated += 1
            if item.online_prune:
                decision = item.tracker.prune_check()
                if decision is not None:
                    item.completion.pruned = decision.reason
                    item.result.pruned[decision.reason] += 1
                    continue
            if eos_id is not None and token == eos_id:
                item.completion.finished = True
                continue
            if len(item.completion.tokens) < max_new_tokens:
                still.append(item)
        active = still
    return calls


def tree_rollouts(
    next_logits: LogitsFn,
    prompts: Sequence[Sequence[int]],
    n: int,
    cfg: TreeConfig,
    *,
    max_new_tokens: int,
    eos_id: int | None,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[list[TreeResult], int]:
    """n completions for each prompt (all prompts advance together in batched logits calls);
    the per-prompt results and the number of batched calls."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    results = [TreeResult(completions=[]) for _ in prompts]

    def extend(running: list[_Running]) -> int:
        return _extend(
            next_logits,
            running,
            max_new_tokens=max_new_tokens,
            eos_id=eos_id,
            temperature=temperature,
            generator=generator,
        )

    def fresh(prompt: list[int], result: TreeResult, count: int, origin: str) -> list[_Running]:
        runs = []
        for _ in range(count):
            tracker = SignalTracker(cfg)
            completion = Completion([], origin, tracker.stats)
            runs.append(_Running(prompt, completion, tracker, False, result))
        return runs

    base_count = min(n, cfg.n_base or max(1, n // 2))
    bases = [fresh(list(p), r, base_count, "base") for p, r in zip(prompts, results, strict=True)]
    calls = extend([b for group in bases for b in group])
    children: list[list[_Running]] = [[] for _ in prompts]
    for k, group in enumerate(bases):
        for base in group:
            plan = plan_branch(base.tracker.stats, cfg)
            if plan is None:
                continue
            results[k].branch_points += 1
            shared = base.completion.tokens[: plan.position]
            for candidate in plan.candidates:
                if candidate == base.completion.tokens[plan.position]:
                    continue  # the base completion already follows this token
                tracker = base.tracker.fork(plan.position + 1)
                completion = Completion([*shared, candidate], "branch", tracker.stats)
                completion.finished = eos_id is not None and candidate == eos_id
                children[k].append(_Running(base.prefix, completion, tracker, True, results[k]))
                results[k].children += 1
    calls += extend([c for group in children for c in group if not c.completion.finished])
    fills: list[_Running] = []
    for k, result in enumerate(results):
        pruned = [c for c in children[k] if c.completion.pruned is not None]
        kept = [b.completion for b in bases[k]] + [
            c.completion for c in children[k] if cfg.keep_pruned or c.completion.pruned is None
        ]
        result.dropped = max(0, len(kept) - n) + (0 if cfg.keep_pruned else len(pruned))
        result.completions = kept[:n]
        if len(result.completions) < n:
            fills += fresh(list(prompts[k]), result, n - len(result.completions), "fill")
    calls += extend(fills)
    for fill in fills:
        fill.result.completions.append(fill.completion)
    return results, calls


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
    """n completions of one prompt from base samples, their branches and plain fill samples."""
    results, _ = tree_rollouts(
        next_logits,
        [prompt],
        n,
        cfg,
        max_new_tokens=max_new_tokens,
        eos_id=eos_id,
        temperature=temperature,
        generator=generator,
    )
    return results[0]
