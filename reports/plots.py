"""Leaderboard plots rendered with matplotlib's Agg backend as inline SVG text.

Every data artist carries an SVG id starting with `data-` so a browser test can check that each
plot drew something; a plot is only made when it has data.

- `headline_plot`: each row's headline with its 95 % CI (a dot on every bar, so 0 stays visible).
- `survival_plot`: S(t) as a step function over turns 0..T with its 95 % band, legend below.
- `survival_bars`: the same for a single turn (T = 1), as bars.
- `iou_histograms`: one small histogram per model on shared axes (DocVAL's answer-box IoU).
- `history_plot`: headline per baseline, one line per row.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from docket.core.text import printable  # noqa: E402
from docket.reports.survival import SurvivalCurve  # noqa: E402

plt.rcParams["svg.hashsalt"] = "docket"  # stable SVG ids, so reports are reproducible
COLOURS = [matplotlib.colors.to_hex(c) for c in matplotlib.colormaps["tab10"](range(10))]
STYLES = ("-", "--", "-.", ":")


def _svg(fig: Figure) -> str:
    for artist in fig.findobj(Text):  # titles, labels, ticks, legends: names from logs
        artist.set_text(printable(artist.get_text(), lines=True))
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _legend_below(ax: Axes, count: int) -> None:
    """A legend under the axes, so it never covers a line."""
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.22),
        ncols=min(2, count),
        fontsize=7,
        frameon=False,
    )


def _bars_with_ci(
    labels: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    colours: tuple[str, str],
    gid: str,
) -> tuple[Figure, Axes]:
    """Horizontal bars, a dot at each value (so a 0 bar stays visible) and CI whiskers."""
    fig, ax = plt.subplots(figsize=(6.5, 0.7 + 0.45 * len(labels)))
    positions = list(range(len(labels)))
    for bar in ax.barh(positions, values, color=colours[0], height=0.6):
        bar.set_gid(f"data-{gid}-bar")
    errors = [
        [max(0.0, v - lo) if lo is not None else 0.0 for v, lo in zip(values, lows, strict=True)],
        [max(0.0, hi - v) if hi is not None else 0.0 for v, hi in zip(values, highs, strict=True)],
    ]
    dots = ax.errorbar(
        values, positions, xerr=errors, fmt="o", color=colours[1], capsize=3, markersize=5
    )
    dots.lines[0].set_gid(f"data-{gid}-points")
    ax.set_yticks(positions, labels=list(labels), fontsize=8)
    ax.invert_yaxis()
    return fig, ax


def headline_plot(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    direction: str | None,
    chance: float | None = None,
) -> str:
    """Horizontal bars of headline values with 95 % CI whiskers and a dot at each value; with
    `chance`, a dashed line at the task's chance row."""
    fig, ax = _bars_with_ci(labels, values, lows, highs, ("#9ecae1", "#08519c"), "headline")
    extra = [chance] if chance is not None else []
    span = [v for v in (*values, *extra, *(x for x in (*lows, *highs) if x is not None))]
    low, high = min(0.0, *span), max(0.0, *span)
    if low >= 0.0 and high <= 1.0:
        high = 1.0  # scores on [0, 1] keep the whole scale, so a 0 bar is plainly at 0
    pad = 0.04 * ((high - low) or 1.0)
    ax.set_xlim(low - pad, high + pad)
    ax.axvline(0, color="#555", linewidth=0.6)
    if chance is not None:
        line = ax.axvline(
            chance, color="#d62728", linestyle="--", linewidth=1.0, label="chance row"
        )
        line.set_gid("data-chance")
    ax.set_title(title, fontsize=10)
    better = {"higher": "higher is better", "lower": "lower is better"}.get(
        direction or "", "direction unknown"
    )
    ax.set_xlabel(f"headline with 95 % CI ({better})")
    return _svg(fig)


def survival_plot(title: str, curves: Mapping[str, SurvivalCurve], event: str) -> str:
    """S(t) = P(no `event` by turn t) as steps over 0..T with a shaded 95 % band per model.

    Each turn t is drawn as the interval (t-1, t] at the value S(t), so S(T) stays visible.
    """
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for i, (label, c) in enumerate(curves.items()):
        colour, style = COLOURS[i % len(COLOURS)], STYLES[i % len(STYLES)]
        (line,) = ax.step(
            c.turns,
            c.survival,
            where="pre",
            color=colour,
            linestyle=style,
            label=f"{label} (n={c.n})",
        )
        line.set_gid(f"data-survival-{i}")
        lows = [lo if lo is not None else s for lo, s in zip(c.low, c.survival, strict=True)]
        highs = [hi if hi is not None else s for hi, s in zip(c.high, c.survival, strict=True)]
        band = ax.fill_between(c.turns, lows, highs, step="pre", color=colour, alpha=0.15)
        band.set_gid(f"data-band-{i}")
    horizon = max(max(c.turns) for c in curves.values())
    ax.set_xlim(0, horizon)
    ax.set_xticks(range(0, horizon + 1, max(1, horizon // 10)))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("turn t")
    ax.set_ylabel(f"P(no {event} by t)")
    ax.set_title(title, fontsize=10)
    _legend_below(ax, len(curves))
    return _svg(fig)


def survival_bars(title: str, curves: Mapping[str, SurvivalCurve], event: str) -> str:
    """A single-turn survival (T = 1) as one bar per model with its 95 % CI."""
    labels = list(curves)
    values = [curves[k].survival[-1] for k in labels]
    lows = [curves[k].low[-1] for k in labels]
    highs = [curves[k].high[-1] for k in labels]
    fig, ax = _bars_with_ci(labels, values, lows, highs, ("#a1d99b", "#006d2c"), "survival")
    ax.set_xlim(-0.04, 1.04)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(f"P(no {event} by turn 1), 95 % CI")
    return _svg(fig)


def iou_histograms(title: str, ious: Mapping[str, Sequence[float]]) -> str:
    """One IoU histogram per model (small multiples sharing both axes), 10 bins over [0, 1]."""
    count = len(ious)
    cols = min(2, count)
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.1 * rows + 0.4), sharex=True, sharey=True, squeeze=False
    )
    bins = [i / 10 for i in range(11)]
    for i, (label, values) in enumerate(ious.items()):
        ax = axes[i // cols][i % cols]
        _, _, patches = ax.hist(list(values), bins=bins, color=COLOURS[i % len(COLOURS)])
        for patch in patches:
            patch.set_gid(f"data-iou-{i}")
        ax.set_title(textwrap.fill(f"{label} (n={len(values)})", 30), fontsize=6.5)
        ax.tick_params(labelsize=7)
    for j in range(count, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.supxlabel("IoU", fontsize=8)
    fig.supylabel("samples", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _svg(fig)


def history_plot(
    title: str, labels: Sequence[str], series: Mapping[str, Sequence[float | None]]
) -> str:
    """Headline per baseline (x: baselines in order), one line per row."""
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    x = list(range(len(labels)))
    for i, (name, values) in enumerate(series.items()):
        points = [(xi, v) for xi, v in zip(x, values, strict=True) if v is not None]
        (line,) = ax.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            marker="o",
            color=COLOURS[i % len(COLOURS)],
            linestyle=STYLES[i % len(STYLES)],
            label=name,
        )
        line.set_gid(f"data-history-{i}")
    ax.set_xticks(x, labels=list(labels), fontsize=7, rotation=20)
    ax.set_ylabel("headline")
    ax.set_title(title, fontsize=10)
    _legend_below(ax, len(series))
    return _svg(fig)
