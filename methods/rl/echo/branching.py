"""ECHO's branching and pruning rules (the released `deepconf` controller of user683/ECHO).

Per response token t the tracker keeps entropy H_t, confidence C_t (rollout unit, see
`signals`), grouped confidence C^G_t (trailing W_G), tail confidence C^tail_t (trailing W_T) and
the entropy slope ΔH_t (window W_H).

- branch: first t ≥ min_depth with `H_t ≥ H_high ∧ C^G_t ≤ τ_b ∧ ΔH_t ≥ δ_H`; width
  `b = clip(round(b_min + α(H_t - H_low)/(H_high - H_low) - β(C^G_t - τ_b)/|τ_b|), b_min, b_max)`,
  no branch when b ≤ 1; candidates are the top-b tokens at t.
- prune (scan a branch, cut at the first trigger, keep tokens up to and including it):
  1. `low_confidence`: the running minimum of C^G falls below `prune_threshold`;
  2. `tail_decline`: C^tail fell for `tail_decline_steps` consecutive tokens and ≤ `tail_threshold`;
  3. `entropy_spike`: ΔH > 0 for `delta_rise_steps` consecutive tokens and ΔH > `delta_upper`.
  When several fire on the same token the first in this order is reported.

Defaults are the released yaml's. Caveats: with a renormalised top-10 distribution
H ≤ ln 10 < H_high = 3.5, and C ≥ ln(confidence_top_k) > τ_b, so the released tree never
branches; `logprob_top_k=None` uses full-vocabulary entropy and every threshold is a knob.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from .signals import rollout_confidence, rollout_entropy, top_renormalised

PRUNE_REASONS: tuple[str, ...] = ("low_confidence", "tail_decline", "entropy_spike")


@dataclass(frozen=True)
class TreeConfig:
    """Branching, pruning and budget knobs (released defaults; `n_base`, `keep_pruned` and
    `max_children` are docket's own budget choices)."""

    min_depth: int = 4
    entropy_high: float = 3.5
    entropy_low: float = 1.0
    entropy_window: int = 4
    group_window: int = 4
    tail_window: int = 8
    tail_decline_steps: int = 3
    tail_threshold: float = 1.0
    delta_rise_steps: int = 3
    delta_upper: float = 0.5
    branch_threshold: float = 1.2
    entropy_delta_threshold: float = 0.2
    min_branches: int = 1
    max_branches: int = 4
    alpha: float = 2.0
    beta: float = 1.0
    prune_threshold: float = 0.4
    logprob_top_k: int | None = 10
    confidence_top_k: int = 5
    #: Base samples per prompt before branching (None: half the completion budget).
    n_base: int | None = None
    #: Whether pruned (truncated) branches count as completions.
    keep_pruned: bool = False


@dataclass(frozen=True)
class StepStat:
    """One token's signals."""

    entropy: float
    confidence: float
    group_conf: float
    tail_conf: float
    delta_entropy: float
    top_ids: tuple[int, ...]


@dataclass(frozen=True)
class BranchPlan:
    """Branch at response position `position` into the top-`width` tokens `candidates`."""

    position: int
    width: int
    candidates: tuple[int, ...]


@dataclass(frozen=True)
class PruneDecision:
    """Cut the branch after response position `position` for `reason`."""

    position: int
    reason: str


def branch_width(entropy: float, group_conf: float, cfg: TreeConfig) -> int:
    """b_t = clip(round(b_min + α·(H - H_low)/(H_high - H_low) - β·(C^G - τ_b)/|τ_b|))."""
    span = max(cfg.entropy_high - cfg.entropy_low, 1e-9)
    raw = (
        cfg.min_branches
        + cfg.alpha * (entropy - cfg.entropy_low) / span
        - cfg.beta * (group_conf - cfg.branch_threshold) / max(abs(cfg.branch_threshold), 1e-9)
    )
    return int(min(max(round(raw), cfg.min_branches), cfg.max_branches))


@dataclass
class SignalTracker:
    """Ingests one next-token logits row per response token and keeps the windows and the
    pruning counters, so a branch can be checked online as it is generated."""

    cfg: TreeConfig
    stats: list[StepStat] = field(default_factory=list)
    _entropies: list[float] = field(default_factory=list)
    _confidences: list[float] = field(default_factory=list)
    _running_min: float = float("inf")
    _tail_decline: int = 0
    _delta_rise: int = 0
    _scan_from: int = 0

    def push(self, logits: Tensor) -> StepStat:
        """Add the logits (V,) that produced the next response token; return its signals."""
        cfg = self.cfg
        entropy = float(rollout_entropy(logits, cfg.logprob_top_k))
        confidence = float(rollout_confidence(logits, cfg.logprob_top_k, cfg.confidence_top_k))
        _, ids = top_renormalised(logits, max(cfg.max_branches, 1))
        before = self._entropies[-cfg.entropy_window :]
        delta = entropy - (sum(before) / len(before)) if before else 0.0
        self._entropies.append(entropy)
        self._confidences.append(confidence)
        group = self._confidences[-cfg.group_window :]
        tail = self._confidences[-cfg.tail_window :]
        stat = StepStat(
            entropy=entropy,
            confidence=confidence,
            group_conf=sum(group) / len(group),
            tail_conf=sum(tail) / len(tail),
            delta_entropy=delta,
            top_ids=tuple(int(i) for i in ids.tolist()),
        )
        self.stats.append(stat)
        return stat

    def fork(self, length: int) -> SignalTracker:
        """A tracker holding the first `length` tokens' signals, scanning for pruning after
        them (a branch that shares this prefix)."""
        child = SignalTracker(self.cfg, stats=list(self.stats[:length]))
        child._entropies = self._entropies[:length]
        child._confidences = self._confidences[:length]
        child.start_scan()
        return child

    def start_scan(self) -> None:
        """Start the pruning scan at the next token (a branch's first own token)."""
        self._scan_from = len(self.stats)
        self._running_min = float("inf")
        self._tail_decline = 0
        self._delta_rise = 0

    def prune_check(self) -> PruneDecision | None:
        """Update the pruning counters with the latest token; the decision if one fires."""
        cfg = self.cfg
        position = len(self.stats) - 1
        stat = self.stats[position]
        self._running_min = min(self._running_min, stat.group_conf)
        previous = self.stats[position - 1] if position > self._scan_from else None
        declined = previous is not None and stat.tail_conf < previous.tail_conf
        self._tail_decline = self._tail_decline + 1 if declined else 0
        self._delta_rise = self._delta_rise + 1 if stat.delta_entropy > 0 else 0
        if self._running_min < cfg.prune_threshold:
            return PruneDecision(position, "low_confidence")
        if self._tail_decline >= cfg.tail_decline_steps and stat.tail_conf <= cfg.tail_threshold:
            return PruneDecision(position, "tail_decline")
        if self._delta_rise >= cfg.delta_rise_steps and stat.delta_entropy > cfg.delta_upper:
            return PruneDecision(position, "entropy_spike")
        return None


def plan_branch(stats: list[StepStat], cfg: TreeConfig) -> BranchPlan | None:
    """The first position satisfying the branch rule and its plan (None: no branch)."""
    for position in range(cfg.min_depth, len(stats)):
        stat = stats[position]
        if (
            stat.entropy >= cfg.entropy_high
            and stat.group_conf <= cfg.branch_threshold
            and stat.delta_entropy >= cfg.entropy_delta_threshold
        ):
            width = branch_width(stat.entropy, stat.group_conf, cfg)
            if width <= 1:
                return None
            return BranchPlan(position, width, stat.top_ids[:width])
    return None


def find_prune(stats: list[StepStat], cfg: TreeConfig, start: int = 0) -> PruneDecision | None:
    """Scan `stats` from `start` with the three triggers; the first that fires (offline form
    of `SignalTracker.prune_check`, for traces)."""
    tracker = SignalTracker(cfg, stats=list(stats[:start]))
    tracker.start_scan()
    for stat in stats[start:]:
        tracker.stats.append(stat)
        decision = tracker.prune_check()
        if decision is not None:
            return decision
    return None


def stats_from_logits(logits: Tensor, cfg: TreeConfig) -> list[StepStat]:
    """Signals for a whole response from its logits (T, V)."""
    tracker = SignalTracker(cfg)
    for row in logits:
        tracker.push(row)
    return tracker.stats
