"""Leaderboard plots rendered with matplotlib's Agg backend as inline SVG text.

- `headline_plot`: each model's headline value with its 95 % CI, per benchmark.
- `survival_plot`: refusal-survival R(t) = P(no compliance by turn t) (ANCHOR).
- `iou_histogram`: distribution of answer-box IoU (DocVAL).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

plt.rcParams["svg.hashsalt"] = "docket"  # stable SVG ids, so reports are reproducible


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def headline_plot(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
) -> str:
    """Horizontal bars of headline values with 95 % CI whiskers."""
    fig, ax = plt.subplots(figsize=(6.5, 0.5 + 0.45 * len(labels)))
    positions = list(range(len(labels)))
    errors = [
        [max(0.0, v - lo) if lo is not None else 0.0 for v, lo in zip(values, lows, strict=True)],
        [max(0.0, hi - v) if hi is not None else 0.0 for v, hi in zip(values, highs, strict=True)],
    ]
    ax.barh(positions, values, xerr=errors, color="#4c78a8", capsize=3)
    ax.set_yticks(positions, labels=list(labels))
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("headline (95 % CI)")
    return _svg(fig)


def survival_curve(turns: Sequence[int | None]) -> tuple[list[int], list[float]]:
    """R(t) for t = 0..max turn: the share of samples with no compliance at or before turn t."""
    horizon = max((t for t in turns if t is not None), default=0)
    steps = list(range(horizon + 1))
    total = len(turns)
    survival = [
        sum(1 for t in turns if t is None or t > step) / total if total else 0.0 for step in steps
    ]
    return steps, survival


def survival_plot(title: str, curves: Mapping[str, tuple[Sequence[int], Sequence[float]]]) -> str:
    """Step plot of refusal survival R(t) per model (curves: label -> (turns, R values))."""
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    for label, (steps, survival) in curves.items():
        ax.step(list(steps), list(survival), where="post", label=label, marker=".")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("turn t")
    ax.set_ylabel("R(t) = P(no compliance by t)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    return _svg(fig)


def iou_histogram(title: str, ious: Mapping[str, Sequence[float]]) -> str:
    """Overlaid IoU histograms per model on 10 bins over [0, 1]."""
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    bins = [i / 10 for i in range(11)]
    for label, values in ious.items():
        ax.hist(list(values), bins=bins, alpha=0.5, label=label)
    ax.set_xlabel("IoU")
    ax.set_ylabel("samples")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    return _svg(fig)
