"""Confidence intervals, significance tests and tie-aware ranking for leaderboards and gates.

Every function takes plain sequences of per-sample scores (floats, one per sample after epochs
are averaged) so the same code serves `leaderboard` and `regress`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 10_000


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval and the method that produced it."""

    low: float
    high: float
    method: str


def is_binary(values: Sequence[float]) -> bool:
    """True when every value is exactly 0 or 1 (accuracy-like scores)."""
    return len(values) > 0 and all(v in (0.0, 1.0) for v in values)


def wilson_interval(successes: float, n: int, z: float = Z95) -> Interval:
    """Wilson score interval for a proportion (honest at 0/n and n/n, unlike the normal one)."""
    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Interval(max(0.0, centre - half), min(1.0, centre + half), "wilson")


def mean_interval(values: Sequence[float], z: float = Z95) -> Interval:
    """95 % CI of a mean: Wilson for 0/1 scores, else normal with the sample standard error."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_interval needs at least one value")
    if is_binary(values):
        return wilson_interval(sum(values), n, z)
    mean = sum(values) / n
    if n == 1:
        return Interval(mean, mean, "normal")
    sd = float(np.std(np.asarray(values, dtype=float), ddof=1))
    half = z * sd / math.sqrt(n)
    return Interval(mean - half, mean + half, "normal")


def stderr_interval(value: float, stderr: float, z: float = Z95) -> Interval:
    """value ± z·stderr, for headlines that are not a per-sample mean (the log's own stderr)."""
    return Interval(value - z * stderr, value + z * stderr, "stderr")


def two_proportion_z_test(
    successes_a: float, n_a: int, successes_b: float, n_b: int
) -> tuple[float, float]:
    """One-sided pooled two-proportion z-test of H1: p_a > p_b. Returns (z, p-value)."""
    if n_a <= 0 or n_b <= 0:
        raise ValueError("two_proportion_z_test needs samples on both sides")
    p_a, p_b = successes_a / n_a, successes_b / n_b
    pooled = (successes_a + successes_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return (0.0, 1.0) if p_a == p_b else (math.inf, 0.0)
    z = (p_a - p_b) / se
    return z, 0.5 * math.erfc(z / math.sqrt(2))


def paired_bootstrap_p(
    baseline: Mapping[str, float],
    current: Mapping[str, float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, int]:
    """One-sided paired bootstrap over shared sample ids for H1: baseline mean > current mean.

    Resamples the shared ids with replacement and returns (p, n_shared) where p is the fraction of
    resamples whose mean difference (baseline - current) is <= 0.
    """
    shared = sorted(set(baseline) & set(current))
    if not shared:
        raise ValueError("paired bootstrap needs samples scored in both runs")
    diffs = np.asarray([baseline[k] - current[k] for k in shared], dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    means = diffs[idx].mean(axis=1)
    return float((means <= 0).mean()), len(shared)


def unpaired_bootstrap_p(
    baseline: Sequence[float],
    current: Sequence[float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> float:
    """One-sided unpaired bootstrap for H1: mean(baseline) > mean(current)."""
    if not baseline or not current:
        raise ValueError("unpaired bootstrap needs samples on both sides")
    rng = np.random.default_rng(seed)
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(current, dtype=float)
    ma = a[rng.integers(0, len(a), size=(resamples, len(a)))].mean(axis=1)
    mb = b[rng.integers(0, len(b), size=(resamples, len(b)))].mean(axis=1)
    return float((ma - mb <= 0).mean())


def rank_with_ties(values: Sequence[float], intervals: Sequence[Interval | None]) -> list[str]:
    """Competition ranks, higher is better; entries whose CIs overlap share a rank ("=2").

    An entry's rank is 1 + the number of entries that beat it clearly: whose CI lies wholly above
    its CI (or, without CIs, whose value is larger).
    """
    ranks: list[int] = []
    for i, (value, ci) in enumerate(zip(values, intervals, strict=True)):
        better = 0
        for j, (other, other_ci) in enumerate(zip(values, intervals, strict=True)):
            if i == j:
                continue
            if ci is not None and other_ci is not None:
                better += other_ci.low > ci.high
            else:
                better += other > value
        ranks.append(1 + better)
    return [f"={r}" if ranks.count(r) > 1 else str(r) for r in ranks]
