"""How many paired samples a gate needs: `docket power` and the n that `docket regress` prints.

The gate (`docket.reports.regress`) passes a run when the one-sided upper confidence bound of
its paired drop is at most the tolerance. The number of samples that decides a drop of size D is
the n at which an *unchanged* run passes with probability `power` (0.8) at tolerance D, which is
also the n at which a one-sided test at alpha tells a drop of D from no drop with that power.
The minimum detectable drop at n is the same relation read the other way.

- 0/1 headlines use the gate's own exact bound (`stats.paired_binary_bounds`): at n, the
  discordant pairs are psi x n and the worse ones their 80th percentile under "no drop"
  (m/2 + z_power sqrt(m)/2); the minimum detectable drop is that table's upper bound. With no
  discordant pair it is 1 - (alpha/2)^(1/n) (closed form), so n = ln(alpha/2) / ln(1 - D).
- Other headlines use the normal approximation of the paired bootstrap:
  n = ((z_alpha + z_power) sigma / D)^2, sigma^2 the second moment of the paired difference,
  and never fewer than an unchanged run needs to bound the drop (`stats.no_change_bound`).
- Clustered samples (a task whose stderr declares `cluster=`, e.g. DocVAL per `doc_id`):
  n is multiplied by the design effect 1 + (m - 1) ICC (m the size-weighted mean cluster size,
  ICC the one-way ANOVA intra-cluster correlation of the per-sample values).

From a single baseline the paired spread is unknown; `docket power` assumes the next run is an
independent draw with the same per-sample mean: psi = 2 p (1 - p) for 0/1 values, 2 x the
sample variance otherwise (a run correlated with the baseline needs fewer samples).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from docket.reports import survival
from docket.reports.stats import no_change_bound, paired_binary_bounds, z_upper

#: Probability with which an unchanged run must pass (or a drop of D be detected).
POWER = 0.8
#: Largest n searched (the answer says "more than" beyond it).
MAX_N = 10_000_000


def _binary_table(psi: float, n: int, power: float) -> tuple[int, int]:
    """(worse, better) of an unchanged run at n: psi x n discordant, worse at its power quantile."""
    discordant = min(n, int(round(psi * n)))
    quantile = discordant / 2 + z_upper(1 - power) * math.sqrt(discordant) / 2
    worse = min(discordant, math.ceil(quantile))
    return worse, discordant - worse


def binary_detectable(psi: float, n: int, alpha: float, power: float = POWER) -> float:
    """Minimum detectable drop of a 0/1 headline at n paired samples with discordance psi.

    Args:
        psi: Share of pairs expected to differ (0..1).
        n: Paired samples.
        alpha: One-sided level of the gate.
        power: Probability with which an unchanged run passes at this tolerance.

    Returns:
        The exact upper bound an unchanged run reaches at its `power` quantile.
    """
    worse, better = _binary_table(psi, n, power)
    return paired_binary_bounds(worse, better, n, alpha).high


def normal_detectable(
    second_moment: float, n: int, alpha: float, power: float = POWER, scale: float = 1.0
) -> float:
    """Minimum detectable drop of a bootstrapped headline: (z_alpha + z_power) sigma / sqrt(n),
    at least what an unchanged run can bound (`no_change_bound`).

    The closed form of a one-sided one-sample z-test's detectable effect, which statsmodels'
    `NormalIndPower(ratio=0).solve_power` finds by root search (to about 1e-8); the closed form
    keeps `needed_n`'s bisection exact.
    """
    spread = (z_upper(alpha) + z_upper(1 - power)) * math.sqrt(second_moment / n)
    return max(spread, no_change_bound(n, alpha, scale).high)


def detectable(
    kind: str, second_moment: float, n: int, alpha: float, power: float = POWER, scale: float = 1.0
) -> float:
    """Minimum detectable drop at n for a headline kind ("binary" uses the exact bound)."""
    if n < 1:
        return math.inf
    if kind == "binary":
        return binary_detectable(second_moment, n, alpha, power)
    return normal_detectable(second_moment, n, alpha, power, scale)


def _binary_detectable_many(psi: float, ns: np.ndarray, alpha: float, power: float) -> np.ndarray:
    """`binary_detectable` at many n at once (the same beta quantiles, vectorised)."""
    discordant = np.minimum(ns, np.round(psi * ns))
    quantile = discordant / 2 + z_upper(1 - power) * np.sqrt(discordant) / 2
    worse = np.minimum(discordant, np.ceil(quantile))
    with np.errstate(divide="ignore", invalid="ignore"):
        psi_high = np.where(
            discordant >= ns, 1.0, sps.beta.ppf(1 - alpha / 2, discordant + 1, ns - discordant)
        )
        pi_high = np.where(
            worse >= discordant, 1.0, sps.beta.ppf(1 - alpha / 2, worse + 1, discordant - worse)
        )
        psi_low = np.where(
            discordant <= 0, 0.0, sps.beta.ppf(alpha / 2, discordant, ns - discordant + 1)
        )
    spread = 2 * pi_high - 1
    high = np.where(spread >= 0, psi_high * spread, psi_low * spread)
    return np.where(discordant == 0, psi_high, high)


def needed_n(
    kind: str,
    second_moment: float,
    drop: float,
    alpha: float,
    power: float = POWER,
    scale: float = 1.0,
) -> int | None:
    """Smallest n whose minimum detectable drop is at most `drop` (None beyond `MAX_N`).

    The exact binary bound is not monotone in n (the discordant and worse counts are rounded),
    so after bisecting, the 3 % of n below the answer are checked for an earlier pass.

    Args:
        kind: "binary", or "normal" / "continuous" / "survival" (the bootstrap's normal route).
        second_moment: psi (0/1) or the mean squared paired difference.
        drop: The drop to decide (e.g. the tolerance), > 0.
        alpha: One-sided level of the gate.
        power: Probability with which an unchanged run passes.
        scale: Largest change one sample can make (1 for 0/1 and probabilities).

    Returns:
        The number of paired samples, or None when even `MAX_N` does not suffice.
    """
    if drop <= 0:
        return None
    high = 1
    while detectable(kind, second_moment, high, alpha, power, scale) > drop:
        if high >= MAX_N:
            return None
        high = min(MAX_N, high * 2)
    low = max(1, high // 2)
    while high - low > 1:  # bisect as if monotone ...
        mid = (low + high) // 2
        if detectable(kind, second_moment, mid, alpha, power, scale) <= drop:
            high = mid
        else:
            low = mid
    if detectable(kind, second_moment, low, alpha, power, scale) <= drop:
        high = low
    if kind != "binary":  # the normal route is monotone
        return high
    # ... then find the first passing n of the few percent below (rounding wiggles)
    ns = np.arange(max(1, int(high * 0.97) - 200), high + 1, dtype=float)
    passing = np.nonzero(_binary_detectable_many(second_moment, ns, alpha, power) <= drop)[0]
    return int(ns[passing[0]]) if len(passing) else high


def icc_anova(values: Mapping[str, float], clusters: Mapping[str, str]) -> float | None:
    """One-way ANOVA intra-cluster correlation of per-sample values, clipped to [0, 1].

    Hand-written: neither scipy nor statsmodels computes ICC(1) for unequal cluster sizes.

    Args:
        values: Per-sample values.
        clusters: Cluster id per sample (samples without one are left out).

    Returns:
        (MSB - MSW) / (MSB + (m0 - 1) MSW), m0 the adjusted mean cluster size; None with fewer
        than two clusters, no within-cluster degrees of freedom or no spread at all.
    """
    groups: dict[str, list[float]] = {}
    for key, value in values.items():
        if key in clusters:
            groups.setdefault(str(clusters[key]), []).append(float(value))
    sizes = np.asarray([len(g) for g in groups.values()], dtype=float)
    total, k = float(sizes.sum()), len(groups)
    if k < 2 or total - k < 1:
        return None
    grand = sum(sum(g) for g in groups.values()) / total
    between = sum(len(g) * (sum(g) / len(g) - grand) ** 2 for g in groups.values()) / (k - 1)
    within = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in groups.values()) / (total - k)
    m0 = (total - float((sizes**2).sum()) / total) / (k - 1)
    denominator = between + (m0 - 1) * within
    if denominator <= 0:
        return None
    return min(1.0, max(0.0, (between - within) / denominator))


def design_effect(
    values: Mapping[str, float], clusters: Mapping[str, str]
) -> tuple[float, float | None]:
    """(design effect, ICC): 1 + (m - 1) ICC with m = sum(m_k^2) / sum(m_k); (1, None) when the
    ICC cannot be estimated (`icc_anova`)."""
    icc = icc_anova(values, clusters)
    if icc is None:
        return 1.0, None
    sizes: dict[str, int] = {}
    for key in values:
        if key in clusters:
            sizes[str(clusters[key])] = sizes.get(str(clusters[key]), 0) + 1
    weighted = sum(m * m for m in sizes.values()) / sum(sizes.values())
    return 1.0 + (weighted - 1.0) * icc, icc


@dataclass(frozen=True)
class PowerRow:
    """What one task's baseline can and cannot detect."""

    task: str
    model: str
    kind: str
    n: int
    mean: float
    second_moment: float
    detectable: float
    needed: int | None
    drop: float
    cluster_field: str | None = None
    clusters: int = 0
    icc: float | None = None
    deff: float = 1.0
    note: str = ""


def baseline_spread(kind: str, values: Sequence[float]) -> float:
    """Second moment of the paired difference between the baseline and an independent re-run
    with the same mean: 2 p (1 - p) for 0/1 values, 2 x the sample variance otherwise."""
    if not values:
        return 0.0
    mean = sum(values) / len(values)
    if kind == "binary":
        return 2 * mean * (1 - mean)
    if len(values) < 2:
        return 0.0
    return 2 * float(np.var(np.asarray(values, dtype=float), ddof=1))


def value_scale(values: Sequence[float]) -> float:
    """Largest change one sample can show: the values' range, 1 when they are all equal."""
    spread = (max(values) - min(values)) if values else 0.0
    return spread if spread > 0 else 1.0


def power_row(
    task: str,
    model: str,
    kind: str,
    values: Mapping[str, float],
    alpha: float,
    drop: float,
    clusters: Mapping[str, str] | None = None,
    cluster_field: str | None = None,
    power: float = POWER,
) -> PowerRow:
    """Minimum detectable drop at the baseline's n and the n needed for `drop`, for one task.

    Args:
        task: Task name.
        model: Model label of the baseline row.
        kind: "binary", "continuous" or "survival" (survival rows pass each sample's event by
            the horizon as a 0/1 value; the gate bootstraps them, so the normal route applies).
        values: Per-sample baseline values.
        alpha: One-sided level of the gate.
        drop: The drop (or tolerance) whose n is wanted.
        clusters: Cluster id per sample, when the task declares clusters.
        cluster_field: The sample metadata key the clusters come from.
        power: Probability with which an unchanged run passes.

    Returns:
        The row; clustered rows have n scaled by the design effect.
    """
    data = list(values.values())
    n = len(data)
    route = "binary" if kind == "binary" else "normal"  # the gate bootstraps survival headlines
    psi = baseline_spread("continuous" if kind == "continuous" else "binary", data)
    scale = value_scale(data) if kind == "continuous" else 1.0
    deff: float = 1.0
    icc: float | None = None
    count = 0
    if clusters:
        deff, icc = design_effect(values, clusters)
        count = len({clusters[k] for k in values if k in clusters})
    effective = int(n / deff)
    found = needed_n(route, psi, drop, alpha, power, scale)
    return PowerRow(
        task=task,
        model=model,
        kind=kind,
        n=n,
        mean=sum(data) / n if n else math.nan,
        second_moment=psi,
        detectable=detectable(route, psi, effective, alpha, power, scale),
        needed=None if found is None else math.ceil(found * deff),
        drop=drop,
        cluster_field=cluster_field if clusters else None,
        clusters=count,
        icc=icc,
        deff=deff,
        note="" if n else "no per-sample values",
    )


def power_values(kind: str, samples: Mapping[str, Any], horizon: float | None) -> dict[str, float]:
    """Per-sample numbers of a baseline entry or run: the values, or for survival headlines
    whether the event happened by the horizon (1.0) or not (0.0)."""
    if kind == "survival":
        return {
            k: survival.event_by([(float(t), int(e)) for t, e in v], float(horizon or 0))
            for k, v in samples.items()
        }
    return {k: float(v) for k, v in samples.items()}


def entry_power(entry: Mapping[str, Any], alpha: float, drop: float) -> PowerRow:
    """`power_row` of one baseline entry (`docket-baseline/3` clusters used when present).

    Args:
        entry: A validated baseline entry.
        alpha: One-sided level of the gate.
        drop: The drop whose n is wanted.

    Returns:
        The entry's row.
    """
    headline = entry["headline"]
    kind = str(headline.get("value") or "continuous")
    values = power_values(kind, entry["samples"], headline.get("horizon"))
    clusters = entry.get("clusters") or {}
    return power_row(
        str(entry["task"]),
        str(entry["model"]),
        kind,
        values,
        alpha,
        drop,
        clusters.get("ids"),
        clusters.get("field"),
    )


def power_lines(rows: Sequence[PowerRow], tolerance: float, alpha: float) -> list[str]:
    """One plain line per row (what `docket power` prints under its table).

    Args:
        rows: The rows from `entry_power`.
        tolerance: The gate's tolerance (rows whose detectable drop exceeds it are flagged).
        alpha: One-sided level of the gate.

    Returns:
        Lines such as "docket/smoke / m: n = 3 (binary, mean 1): smallest detectable drop
        0.7076 > tolerance 0.05 (underpowered); 72 paired samples detect a drop of 0.05".
    """
    lines = []
    for row in rows:
        if row.n == 0:
            lines.append(f"{row.task} / {row.model}: {row.note}")
            continue
        ok = row.detectable <= tolerance + 1e-12
        state = "≤" if ok else ">"
        flag = "" if ok else " (underpowered)"
        icc = "unknown (no spread)" if row.icc is None else f"{row.icc:.3f}"
        clustered = (
            f"; {row.clusters} clusters by {row.cluster_field}, ICC {icc}, "
            f"design effect {row.deff:.2f}"
            if row.cluster_field
            else ""
        )
        needed = f"{row.needed}" if row.needed is not None else f"more than {MAX_N}"
        lines.append(
            f"{row.task} / {row.model}: n = {row.n} ({row.kind}, mean {row.mean:.4g}"
            f"{clustered}): smallest detectable drop {row.detectable:.4f} {state} tolerance "
            f"{tolerance:g}{flag}; {needed} paired samples detect a drop of {row.drop:g} "
            f"(alpha {alpha:g}, power {POWER:g})"
        )
    return lines
