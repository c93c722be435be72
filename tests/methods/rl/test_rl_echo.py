"""ECHO: branch width and rule, the three pruning triggers, the tree controller's budget, the
hybrid advantage, adaptive clipping, and majority-vote pseudo-labels."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import pytest
import torch

from docket.methods.rl.echo.branching import (
    StepStat,
    TreeConfig,
    branch_width,
    find_prune,
    plan_branch,
    stats_from_logits,
)
from docket.methods.rl.echo.shaping import (
    adaptive_clip_eps,
    echo_policy_loss,
    group_token_mean,
    hybrid_advantages,
    hybrid_scores,
    masked_whiten,
)
from docket.methods.rl.echo.signals import (
    actor_confidence,
    entropy_delta,
    rollout_confidence,
    tail_mean,
    trailing_mean,
)
from docket.methods.rl.echo.tree import tree_rollout
from docket.methods.rl.echo.ttrl import majority_rewards, majority_vote, pseudo_label_rewards
from docket.methods.rl.losses import clipped_surrogate

CFG = TreeConfig()


def stat(h: float = 0.0, cg: float = 2.0, tail: float = 2.0, delta: float = 0.0) -> StepStat:
    return StepStat(h, cg, cg, tail, delta, (10, 11, 12, 13))


def test_branch_width_table_and_monotonicity() -> None:
    assert branch_width(3.5, 1.2, CFG) == 3  # 1 + 2·1 - 0
    assert branch_width(3.5, 0.6, CFG) == 4  # 1 + 2 + 0.5 = 3.5 -> 4
    assert branch_width(1.0, 1.2, CFG) == 1
    assert branch_width(10.0, 0.0, CFG) == CFG.max_branches
    assert branch_width(0.0, 9.0, CFG) == CFG.min_branches
    widths_h = [branch_width(h / 4, 1.2, CFG) for h in range(0, 30)]
    widths_c = [branch_width(3.0, c / 4, CFG) for c in range(0, 30)]
    assert widths_h == sorted(widths_h) and widths_c == sorted(widths_c, reverse=True)


def test_branch_rule_respects_min_depth_and_all_three_conditions() -> None:
    hot = stat(h=3.6, cg=1.0, delta=0.5)
    early = [stat(), stat(), hot, stat(), stat(), stat()]
    assert plan_branch(early, CFG) is None  # position 2 < min_depth 4
    late = [stat()] * 5 + [hot]
    plan = plan_branch(late, CFG)
    assert plan is not None and plan.position == 5 and plan.width == 3
    assert plan.candidates == (10, 11, 12)
    for broken in (
        replace(hot, entropy=3.0),
        replace(hot, group_conf=1.3),
        replace(hot, delta_entropy=0.1),
    ):
        assert plan_branch([stat()] * 5 + [broken], CFG) is None


def _only(trace: list[StepStat], reason: str) -> None:
    decision = find_prune(trace, CFG)
    assert decision is not None and decision.reason == reason
    # no other rule fires anywhere on the trace when this one is switched off
    off = {
        "low_confidence": replace(CFG, prune_threshold=-1.0),
        "tail_decline": replace(CFG, tail_decline_steps=10**6),
        "entropy_spike": replace(CFG, delta_rise_steps=10**6),
    }[reason]
    assert find_prune(trace, off) is None


def test_each_prune_trigger_fires_alone_on_its_own_trace() -> None:
    low = [stat(cg=1.0), stat(cg=0.8), stat(cg=0.3), stat(cg=1.0)]
    _only(low, "low_confidence")
    low_prune = find_prune(low, CFG)
    assert low_prune is not None and low_prune.position == 2
    tail = [stat(tail=2.0), stat(tail=1.5), stat(tail=1.2), stat(tail=0.9), stat(tail=0.8)]
    _only(tail, "tail_decline")
    tail_prune = find_prune(tail, CFG)
    assert tail_prune is not None and tail_prune.position == 3
    # declining but above the threshold: no prune
    assert find_prune([stat(tail=5 - i / 10) for i in range(6)], CFG) is None
    spike = [stat(delta=0.1), stat(delta=0.2), stat(delta=0.3), stat(delta=0.6)]
    _only(spike, "entropy_spike")
    spike_prune = find_prune(spike, CFG)
    assert spike_prune is not None and spike_prune.position == 3


def test_signal_windows() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    assert trailing_mean(x, 2).tolist() == [1.0, 1.5, 2.5, 3.5, 4.5]
    assert entropy_delta(x, 2).tolist() == [0.0, 1.0, 1.5, 1.5, 1.5]
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    values = torch.tensor([[1.0, 2.0, 3.0, 9.0], [1.0, 2.0, 3.0, 4.0]])
    assert tail_mean(values, mask, 2).tolist() == [2.5, 3.5]


def test_confidences() -> None:
    logits = torch.log(torch.tensor([0.5, 0.3, 0.1, 0.05, 0.05]))
    assert float(actor_confidence(logits, k=2)) == pytest.approx(0.4)
    assert float(actor_confidence(logits, k=2, normalization="mass_topk")) == pytest.approx(0.8)
    # renormalised top-2: 0.625, 0.375 -> -mean log
    expected = -(math.log(0.625) + math.log(0.375)) / 2
    assert float(rollout_confidence(logits, 2, 2)) == pytest.approx(expected, rel=1e-5)
    # never below ln(k), whatever the distribution (released thresholds 1.2 / 0.4 unreachable)
    gen = torch.Generator().manual_seed(0)
    for _ in range(50):
        rand = torch.randn(20, generator=gen) * 3
        assert float(rollout_confidence(rand, 10, 5)) >= math.log(5) - 1e-6


def _synthetic_model(
    vocab: int = 8, eos: int = 7, branch_at: int = 4, prompt_len: int = 2
) -> Callable[[list[list[int]]], torch.Tensor]:
    """Peaked on token 1 except a flat step (top-4: 2, 3, 1, 0) at response position
    `branch_at`; after token 3 there the mass splits over two tokens (confidence ln 2, below
    the prune threshold); EOS at position 6."""

    def next_logits(seqs: list[list[int]]) -> torch.Tensor:
        rows = []
        for seq in seqs:
            pos = len(seq) - prompt_len
            row = torch.full((vocab,), -4.0)
            if pos >= 6:
                row[eos] = 4.0
            elif pos == branch_at:
                row[:6] = torch.tensor([1.0, 1.1, 1.3, 1.2, 0.9, 0.8])
            elif len(seq) > prompt_len + branch_at and seq[prompt_len + branch_at] == 3:
                row[0] = row[1] = 4.0
            else:
                row[1] = 4.0
            rows.append(row)
        return torch.stack(rows)

    return next_logits


TREE = replace(
    CFG, entropy_high=1.5, entropy_low=0.5, branch_threshold=3.0, logprob_top_k=None,
    confidence_top_k=2, prune_threshold=1.5, group_window=2, n_base=2,
)  # fmt: skip


def test_tree_rollout_branches_prunes_and_keeps_the_budget() -> None:
    gen = torch.Generator().manual_seed(0)
    result = tree_rollout(
        _synthetic_model(), [0, 0], 6, TREE, max_new_tokens=10, eos_id=7, generator=gen
    )
    assert len(result.completions) == 6
    assert result.branch_points == 2
    assert result.children >= 2
    branches = [c for c in result.completions if c.origin == "branch"]
    assert branches and all(c.tokens[:4] == [1, 1, 1, 1] for c in branches)
    assert all(c.tokens[4] != 3 for c in branches)  # the token-3 branch was pruned
    assert result.pruned["low_confidence"] >= 1
    # budget: the n slots are filled with plain samples when the tree gives fewer
    few = tree_rollout(
        _synthetic_model(), [0, 0], 9, replace(TREE, max_branches=2), max_new_tokens=10,
        eos_id=7, generator=gen,
    )  # fmt: skip
    assert len(few.completions) == 9 and any(c.origin == "fill" for c in few.completions)
    many = tree_rollout(
        _synthetic_model(), [0, 0], 3, TREE, max_new_tokens=10, eos_id=7, generator=gen
    )
    assert len(many.completions) == 3
    # a pruned branch stops at its trigger: tokens up to and including it
    kept = tree_rollout(
        _synthetic_model(), [0, 0], 20, replace(TREE, keep_pruned=True), max_new_tokens=10,
        eos_id=7, generator=gen,
    )  # fmt: skip
    for completion in kept.completions:
        if completion.pruned:
            decision = find_prune(completion.stats, TREE, start=5)
            assert decision is not None and len(completion.tokens) == decision.position + 1


def test_released_defaults_never_branch() -> None:
    """With a renormalised top-10 distribution H ≤ ln 10 < 3.5: the released tree cannot fire."""
    logits = torch.randn(30, 50, generator=torch.Generator().manual_seed(1)) * 0.01  # ~uniform
    stats = stats_from_logits(logits, CFG)
    assert max(s.entropy for s in stats) <= math.log(10) + 1e-6
    assert plan_branch(stats, CFG) is None


def test_hybrid_score_is_whitened_and_shaping_identities() -> None:
    gen = torch.Generator().manual_seed(0)
    entropy, conf = torch.rand(3, 5, generator=gen) * 3, torch.rand(3, 5, generator=gen)
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.float64)
    z = masked_whiten(entropy.double(), mask)
    on = mask.bool()
    assert float(z[on].mean()) == pytest.approx(0.0, abs=1e-9)
    assert float(z[on].var(unbiased=False)) == pytest.approx(1.0, abs=1e-6)
    scores = hybrid_scores(entropy, conf, mask, s_max=100.0)
    assert float(scores[on].mean()) == pytest.approx(0.0, abs=1e-6)
    adv, groups = torch.tensor([1.0, -0.5, 2.0]), torch.tensor([0, 0, 1])
    same = hybrid_advantages(adv, entropy, conf, mask, groups, mult_coeff=0.0, add_coeff=0.0)
    assert torch.allclose(same, adv.unsqueeze(-1) * mask.float())
    additive = hybrid_advantages(adv, entropy, conf, mask, groups, mult_coeff=0.0, add_coeff=0.7)
    term = (additive - adv.unsqueeze(-1)) * mask
    for g in (0, 1):  # the additive term sums to zero over each group's tokens
        assert float(term[groups == g].sum()) == pytest.approx(0.0, abs=1e-5)
    means = group_token_mean(torch.ones(3, 5), mask, groups)
    assert means.flatten().tolist() == pytest.approx([1.0, 1.0, 1.0])


def test_adaptive_clip_range_is_bounded_and_decreasing_in_tail_confidence() -> None:
    conf = torch.linspace(0, 1, 11).unsqueeze(-1).expand(11, 4)
    eps = adaptive_clip_eps(conf, torch.ones(11, 4), tail_window=2)
    assert torch.all(eps[1:] < eps[:-1])
    assert float(eps.min()) >= 0.05 and float(eps.max()) <= 0.2
    # constant ε: the ECHO loss is the GRPO clipped surrogate
    logp = torch.log(torch.tensor([[1.3, 0.7, 1.0]])).requires_grad_(True)
    adv = torch.tensor([[1.0, -1.0, 1.0]])
    echo = echo_policy_loss(
        logp, torch.zeros(1, 3), adv, torch.ones(1, 3), torch.ones(1, 3), adaptive=False
    )
    plain = clipped_surrogate(logp, torch.zeros(1, 3), adv, torch.ones(1, 3), eps_low=0.2)
    assert torch.equal(echo.loss, plain.loss)


def test_majority_vote_pseudo_labels() -> None:
    assert majority_vote(["3", "5", "5", None, "3"]) == "3"  # tie: first seen wins
    assert majority_rewards(["7", None, "7", "8"]) == ("7", [1.0, 0.0, 1.0, 0.0])
    assert majority_rewards([None, None]) == (None, [0.0, 0.0])
    label, rewards = pseudo_label_rewards(["x=4", "x=4", "x=2"], lambda s: s.split("=")[-1])
    assert label == "4" and rewards == [1.0, 1.0, 0.0]


def test_the_two_normalizations_differ_only_in_the_clip_range() -> None:
    """The paper's `mean_topk` and docket's default `mass_topk` (= k·mean): whitening is
    scale-invariant, so the hybrid scores are equal; the adaptive ε differs. With the mean,
    C ≤ 1/k, so ε stays in [ε_min + (ε_max − ε_min)·σ(κ(1 − 1/k)), ε_min + (ε_max − ε_min)·σ(κ)]
    = [0.19413, 0.19730] at the released knobs, whatever the logits; the sum reaches down to
    ε_min + (ε_max − ε_min)/2 = 0.125 on a one-hot tail."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 24, 52, generator=gen) * 4
    logits[0, :, 0] = 60.0  # a fully confident row
    mask = torch.ones(4, 24)
    mean = actor_confidence(logits, k=5, normalization="mean_topk")
    mass = actor_confidence(logits, k=5, normalization="mass_topk")
    assert torch.allclose(mass, 5 * mean)
    entropy = torch.rand(4, 24, generator=gen)
    same = hybrid_scores(entropy, mean, mask) - hybrid_scores(entropy, mass, mask)
    assert float(same.abs().max()) < 1e-4  # equal up to float32 rounding
    eps_mean = adaptive_clip_eps(mean, mask)
    eps_mass = adaptive_clip_eps(mass, mask)
    low = 0.05 + 0.15 / (1 + math.exp(-4 * 0.8))
    high = 0.05 + 0.15 / (1 + math.exp(-4.0))
    assert low == pytest.approx(0.194125, abs=1e-6) and high == pytest.approx(0.197302, abs=1e-6)
    assert float(eps_mean.min()) >= low - 1e-6 and float(eps_mean.max()) <= high + 1e-6
    assert float(eps_mean[0]) == pytest.approx(low, abs=1e-6)  # top-5 mean of a one-hot = 1/5
    assert float(eps_mass[0]) == pytest.approx(0.125, abs=1e-6)
