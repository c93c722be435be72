"""Confidence intervals, paired tests, Holm correction and pairwise ranks for reports and gates.

Per-sample values are plain mappings `sample id -> value` (epochs averaged), so `leaderboard`
and `regress` share every function. Survival headlines have their own estimator and paired test
in `survival.py`.

Bounds of a paired drop (`paired_binary_bounds`, `bootstrap_bounds`, `no_change_bound`) are
one-sided at `alpha` each, so `[low, high]` is a two-sided 1 - 2 alpha interval and `high` is the
upper confidence bound a non-inferiority test compares with the tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 10_000
#: Rows with fewer samples are flagged and never ranked above a row they do not beat.
SMALL_N = 10
Alternative = str  # "greater" (H1: a better than b) or "two-sided"


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
    """Wilson score interval for a proportion (honest at 0/n and n/n, unlike the normal one),
    from statsmodels' `proportion_confint(method="wilson")` at the two-sided level of `z`."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    low, high = proportion_confint(successes, n, alpha=2 * float(sps.norm.sf(z)), method="wilson")
    return Interval(max(0.0, float(low)), min(1.0, float(high)), "wilson")


def bootstrap_mean_interval(
    values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> Interval:
    """Percentile bootstrap 95 % CI of a mean.

    Hand-written on purpose: `scipy.stats.bootstrap` computes the same interval from another
    resampling stream, so every published interval would move; the paired tests and the gate's
    bounds also need the replicates themselves (`paired_bootstrap_means`), drawn the same way.
    """
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return Interval(float(low), float(high), "bootstrap")


def mean_interval(values: Sequence[float], binary: bool | None = None) -> Interval | None:
    """95 % CI of a per-sample mean, or None when it cannot be estimated.

    None for n < 2 and for non-binary scores that are all equal (a bootstrap would claim zero
    width); Wilson for 0/1 scores, percentile bootstrap otherwise.
    """
    n = len(values)
    if n < 2:
        return None
    if binary if binary is not None else is_binary(values):
        return wilson_interval(sum(values), n)
    if max(values) == min(values):
        return None
    return bootstrap_mean_interval(values)


def stderr_interval(value: float, stderr: float, z: float = Z95) -> Interval:
    """value ± z·stderr, for headlines that are not a per-sample mean (the log's own stderr)."""
    return Interval(value - z * stderr, value + z * stderr, "stderr")


def shared_ids(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """Sample ids present in both mappings, sorted."""
    return sorted(set(a) & set(b))


def mcnemar_p(
    a: Mapping[str, float], b: Mapping[str, float], alternative: Alternative = "greater"
) -> float:
    """Exact McNemar test on shared 0/1 samples (binomial test of the discordant pairs).

    "greater": H1 is that a scores 1 more often than b; "two-sided": they differ. scipy's
    `binomtest` on the discordant pairs (statsmodels' `mcnemar` has no one-sided alternative).
    """
    ids = shared_ids(a, b)
    a_only = sum(1 for k in ids if a[k] == 1.0 and b[k] == 0.0)
    b_only = sum(1 for k in ids if a[k] == 0.0 and b[k] == 1.0)
    if a_only + b_only == 0:
        return 1.0
    return float(sps.binomtest(a_only, a_only + b_only, 0.5, alternative=alternative).pvalue)


def bootstrap_p(diffs: np.ndarray, alternative: Alternative) -> float:
    """p-value from bootstrap replicates of (a - b): share <= 0, or twice the smaller tail."""
    below = float((diffs <= 0).mean())
    if alternative == "greater":
        return below
    above = float((diffs >= 0).mean())
    return min(1.0, 2 * min(below, above))


def paired_bootstrap_p(
    a: Mapping[str, float],
    b: Mapping[str, float],
    alternative: Alternative = "greater",
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, int]:
    """Paired bootstrap over shared sample ids of mean(a) - mean(b). Returns (p, n_shared).

    "greater" (H1: a has the larger mean): p is the share of resamples whose mean difference is
    <= 0. "two-sided": twice the smaller tail.
    """
    ids = shared_ids(a, b)
    if not ids:
        raise ValueError("paired bootstrap needs samples scored in both runs")
    means = paired_bootstrap_means([a[k] - b[k] for k in ids], resamples, seed)
    return bootstrap_p(means, alternative), len(ids)


def paired_bootstrap_means(
    diffs: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of paired differences (seed 0: reproducible)."""
    data = np.asarray(diffs, dtype=float)
    rng = np.random.default_rng(seed)
    return data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)


def paired_mean_test(
    a: Mapping[str, float], b: Mapping[str, float], alternative: Alternative = "greater"
) -> tuple[str, float, int]:
    """(test name, p, n shared): exact McNemar when both sides are 0/1, else paired bootstrap."""
    ids = shared_ids(a, b)
    if not ids:
        raise ValueError("no sample ids in common")
    if is_binary([a[k] for k in ids]) and is_binary([b[k] for k in ids]):
        return "McNemar exact", mcnemar_p(a, b, alternative), len(ids)
    p, n = paired_bootstrap_p(a, b, alternative)
    return "paired bootstrap", p, n


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1), from statsmodels'
    `multipletests(method="holm")`."""
    from statsmodels.stats.multitest import multipletests

    if not pvalues:
        return []
    return [float(p) for p in multipletests(list(pvalues), method="holm")[1]]


def pairwise_ranks(
    count: int,
    beats: set[tuple[int, int]],
    small: Sequence[bool],
    underpowered: set[frozenset[int]] | None = None,
) -> list[str]:
    """Competition ranks from a "row i significantly beats row j" relation.

    A row's rank is 1 + the number of rows that beat it. A row is then never placed above a row
    it does not beat when it is small-n or their comparison is underpowered (it could not have
    shown a difference of the tolerance's size): its rank is raised to at least that row's
    rank (to a fixed point). If every row ends up raised, all ranks shift so the best is 1
    again. Shared ranks are written "=k".

    Args:
        count: Number of rows.
        beats: (i, j) pairs where row i significantly beats row j.
        small: Per row, whether it has too few samples to be placed on its own.
        underpowered: Unordered pairs {i, j} whose comparison is underpowered.

    Returns:
        The rank strings, in row order.
    """
    weak = underpowered or set()
    ranks = [1 + sum((j, i) in beats for j in range(count)) for i in range(count)]
    changed = True
    while changed:
        changed = False
        for i in range(count):
            held = [
                ranks[j]
                for j in range(count)
                if j != i and (i, j) not in beats and (small[i] or frozenset((i, j)) in weak)
            ]
            floor = max(held, default=0)
            if floor > ranks[i]:
                ranks[i], changed = floor, True
    # when every row was raised, the best of them still holds first place ("=1", not "=2")
    shift = min(ranks, default=1) - 1
    final = [r - shift for r in ranks]
    return [f"={r}" if final.count(r) > 1 else str(r) for r in final]


def z_upper(alpha: float) -> float:
    """The standard normal quantile z with P(Z > z) = alpha (1.6449 for alpha 0.05)."""
    return float(sps.norm.ppf(1.0 - alpha))


def clopper_pearson(successes: int, n: int, alpha: float) -> Interval:
    """Exact Clopper-Pearson bounds of a proportion, each one-sided at level `alpha`.

    Args:
        successes: Count of successes (0..n).
        n: Trials (> 0).
        alpha: Error allowed on each side.

    Returns:
        `low` (0 at 0/n) and `high` (1 at n/n) from the beta quantiles.
    """
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0 or not 0 <= successes <= n:
        raise ValueError("clopper_pearson needs 0 <= successes <= n and n > 0")
    # statsmodels' "beta" method is Clopper-Pearson, two-sided: alpha on each side is 2 alpha
    low, high = proportion_confint(successes, n, alpha=2 * alpha, method="beta")
    return Interval(float(low), float(high), "clopper-pearson")


def paired_binary_bounds(worse: int, better: int, n: int, alpha: float) -> Interval:
    """Exact bounds of the drop p_worse - p_better of paired 0/1 values, one-sided at `alpha`.

    The drop is psi (2 pi - 1), with psi the share of discordant pairs and pi the share of them
    that got worse. Clopper-Pearson bounds each at alpha / 2 (Bonferroni): psi from the
    discordant count out of n, pi from the worse count out of the discordant ones (exact given
    them, as McNemar's test is). No discordant pair: the drop lies within +-psi_high =
    1 - (alpha / 2)^(1/n). Exact and never narrower than the data allow, unlike a Wald or
    bootstrap interval (zero width without discordant pairs).

    Args:
        worse: Pairs that went from 1 to 0 (in the headline's direction).
        better: Pairs that went from 0 to 1.
        n: All paired samples.
        alpha: Error allowed on each side.

    Returns:
        `low`, `high` (a 1 - 2 alpha interval), method "exact (discordant pairs)".
    """
    discordant = worse + better
    psi = clopper_pearson(discordant, n, alpha / 2)
    method = "exact (discordant pairs)"
    if discordant == 0:
        return Interval(-psi.high, psi.high, method)
    pi = clopper_pearson(worse, discordant, alpha / 2)
    high = psi.high * (2 * pi.high - 1) if pi.high >= 0.5 else psi.low * (2 * pi.high - 1)
    low = psi.low * (2 * pi.low - 1) if pi.low >= 0.5 else psi.high * (2 * pi.low - 1)
    return Interval(low, high, method)


def bootstrap_bounds(replicates: np.ndarray, alpha: float) -> Interval:
    """Percentile bounds of bootstrap replicates of a drop, each one-sided at `alpha`."""
    low, high = np.quantile(replicates, [alpha, 1.0 - alpha])
    return Interval(float(low), float(high), "paired bootstrap")


def no_change_bound(n: int, alpha: float, scale: float = 1.0) -> Interval:
    """Bounds of a drop when none of n paired samples changed: +-scale x (1 - alpha^(1/n)).

    The share of samples that could change unseen is at most the exact one-sided bound
    1 - alpha^(1/n) (no change in n draws), and each changes the headline by at most `scale`
    (1 for 0/1 values and event probabilities; the values' range otherwise).
    """
    high = scale * (1.0 - alpha ** (1.0 / n))
    return Interval(-high, high, "no sample changed")
