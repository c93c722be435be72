"""Kaplan-Meier estimates for survival headlines (e.g. ANCHOR's compliance@T).

Each sample contributes (time, event) pairs (one per epoch): time is the turn of the event, or
the last turn observed when censored; event is 1 when it happened. The headline is the event
probability by the horizon T, 1 - S(T), from `docket.core.survival` (the estimator ANCHOR's
task scores use; weighted, it evaluates many bootstrap resamples at once). The 95 % band of the
curve comes from `scipy.stats.ecdf` (Greenwood, log-log).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from docket.core.survival import event_probability, survival_probability
from docket.reports.stats import BOOTSTRAP_RESAMPLES, Interval, bootstrap_p, wilson_interval

Observations = Mapping[str, Sequence[tuple[float, int]]]


@dataclass(frozen=True)
class SurvivalCurve:
    """S(t) at t = 0..T with a pointwise 95 % band (None where it cannot be estimated)."""

    turns: list[int]
    survival: list[float]
    low: list[float | None]
    high: list[float | None]
    n: int


def flatten(observations: Observations) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, events, sample index) arrays over every sample's pairs, samples in sorted order."""
    times: list[float] = []
    events: list[int] = []
    index: list[int] = []
    for i, key in enumerate(sorted(observations)):
        for time, event in observations[key]:
            times.append(float(time))
            events.append(int(event))
            index.append(i)
    return np.asarray(times), np.asarray(events), np.asarray(index, dtype=int)


def headline_value(observations: Observations, horizon: float) -> float | None:
    """Kaplan-Meier event probability by `horizon`, None without observations."""
    times, events, _ = flatten(observations)
    if len(times) == 0:
        return None
    return float(event_probability(times, events, horizon)[0])


def _informative(times: np.ndarray, events: np.ndarray, horizon: float) -> int:
    """Pairs that saw the event or were observed through the horizon (a proportion's n)."""
    return int(((events == 1) & (times <= horizon)).sum() + (times >= horizon).sum())


def _survivor_band(s: float, times: np.ndarray, events: np.ndarray, t: float) -> Interval | None:
    """Wilson interval of the surviving share among the informative pairs (None below 2)."""
    n = _informative(times, events, t)
    return wilson_interval(round(s * n), n) if n >= 2 else None


def curve(observations: Observations, horizon: int) -> SurvivalCurve | None:
    """S(t) for t = 0..horizon with a 95 % band; None without observations.

    Greenwood's log-log band from scipy where S(t) is strictly between 0 and 1; where it is 0 or 1
    (no event yet, or all events) Greenwood's variance is zero, so the band is the Wilson interval
    of the informative pairs (events by t, or observed through t). No band with fewer than 2.
    """
    times, events, _ = flatten(observations)
    if len(times) == 0:
        return None
    turns = list(range(horizon + 1))
    data = sps.CensoredData(uncensored=times[events == 1], right=times[events == 0])
    result = sps.ecdf(data) if len(times) > 1 or events.any() else None
    survival = [float(survival_probability(times, events, t)[0]) for t in turns]
    low: list[float | None] = []
    high: list[float | None] = []
    with warnings.catch_warnings():  # undefined where S(t) is 0 or 1: handled below
        warnings.simplefilter("ignore", RuntimeWarning)
        band = result.sf.confidence_interval(method="log-log") if result is not None else None
    for t, s in zip(turns, survival, strict=True):
        if 0.0 < s < 1.0 and band is not None:
            lo, hi = float(band.low.evaluate(t)), float(band.high.evaluate(t))
            if np.isfinite(lo) and np.isfinite(hi):
                low.append(lo)
                high.append(hi)
                continue
        ci = _survivor_band(s, times, events, t) if t > 0 else Interval(1.0, 1.0, "exact")
        low.append(None if ci is None else ci.low)
        high.append(None if ci is None else ci.high)
    return SurvivalCurve(turns, survival, low, high, len(observations))


def headline_interval(observations: Observations, horizon: int) -> Interval | None:
    """95 % CI of the event probability by `horizon` (from the S(T) band); None for n < 2."""
    if len(observations) < 2:
        return None
    found = curve(observations, horizon)
    if found is None or found.low[-1] is None or found.high[-1] is None:
        return None
    return Interval(1.0 - float(found.high[-1]), 1.0 - float(found.low[-1]), "kaplan-meier")


def paired_bootstrap_differences(
    a: Observations,
    b: Observations,
    horizon: float,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[np.ndarray, int]:
    """Bootstrap replicates of a's minus b's event probability by `horizon` on shared ids.

    Resamples the shared ids with replacement and recomputes Kaplan-Meier for both runs on the
    same resample. Returns (replicates, n_shared).
    """
    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError("paired bootstrap needs samples observed in both runs")
    rng = np.random.default_rng(seed)
    counts = np.zeros((resamples, len(ids)))
    draws = rng.integers(0, len(ids), size=(resamples, len(ids)))
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1.0)
    estimates = []
    for side in (a, b):
        times, events, index = flatten({k: side[k] for k in ids})
        estimates.append(event_probability(times, events, horizon, counts[:, index]))
    return np.asarray(estimates[0] - estimates[1], dtype=float), len(ids)


def paired_bootstrap_p(
    a: Observations,
    b: Observations,
    horizon: float,
    alternative: str = "greater",
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, int]:
    """Paired bootstrap over shared sample ids of the event probability by `horizon`.

    (p, n_shared) for H1 "a's event probability is larger" ("greater") or "they differ"
    ("two-sided"), from `paired_bootstrap_differences`.
    """
    replicates, n = paired_bootstrap_differences(a, b, horizon, resamples, seed)
    return bootstrap_p(replicates, alternative), n


def event_by(observations: Sequence[tuple[float, int]], horizon: float) -> float:
    """1.0 when any of a sample's (time, event) pairs is an event by `horizon`, else 0.0."""
    return float(any(event and time <= horizon for time, event in observations))
