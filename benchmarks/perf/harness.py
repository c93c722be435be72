"""Paired timing of docket against a peer library, ratio targets, and the result files."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.table import Table


@dataclass(frozen=True)
class Measurement:
    """One benchmark: docket's and the peer's median seconds per operation, and the target.

    `target` is the largest acceptable ratio docket / peer (below 1: docket must be faster).
    """

    name: str
    operation: str
    peer: str
    docket_s: float
    peer_s: float
    target: float
    repeats: int
    note: str = ""

    @property
    def ratio(self) -> float:
        """docket's time over the peer's (inf when the peer took no measurable time)."""
        return self.docket_s / self.peer_s if self.peer_s > 0 else float("inf")

    @property
    def met(self) -> bool:
        """Whether the ratio is within the target."""
        return self.ratio <= self.target


@dataclass(frozen=True)
class Skipped:
    """A benchmark that could not run here, and why."""

    name: str
    reason: str


def paired_medians(
    docket: Callable[[], object], peer: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """Median seconds of each callable over `repeats` alternating runs (docket first).

    Alternating the two keeps slow drifts of a shared machine (load, thermal) out of the ratio.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for run, sink in ((docket, times[0]), (peer, times[1])):
            started = time.perf_counter()
            run()
            sink.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def _seconds(value: float) -> str:
    return f"{value * 1000:.2f} ms" if value < 1 else f"{value:.2f} s"


def table(results: list[Measurement | Skipped]) -> Table:
    """The rich table printed by `make bench`."""
    view = Table(title="docket performance vs peer libraries (median per operation)")
    for column in ("benchmark", "operation", "docket", "peer", "peer time", "ratio", "target"):
        view.add_column(column)
    for result in results:
        if isinstance(result, Skipped):
            view.add_row(result.name, f"[yellow]skipped: {result.reason}", "", "", "", "", "")
            continue
        verdict = "[green]met" if result.met else "[red]MISSED"
        view.add_row(
            result.name,
            result.operation,
            _seconds(result.docket_s),
            result.peer,
            _seconds(result.peer_s),
            f"{result.ratio:.2f}",
            f"≤ {result.target:g} {verdict}",
        )
    return view


def markdown(results: list[Measurement | Skipped]) -> str:
    """The same table in Markdown (for READMEs and CI artifacts)."""
    lines = [
        "| benchmark | operation | docket | peer | peer time | ratio | target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if isinstance(r, Skipped):
            lines.append(f"| {r.name} | skipped: {r.reason} | | | | | | |")
            continue
        lines.append(
            f"| {r.name} | {r.operation} | {_seconds(r.docket_s)} | {r.peer} | "
            f"{_seconds(r.peer_s)} | {r.ratio:.2f} | ≤ {r.target:g} | {'yes' if r.met else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def write(results: list[Measurement | Skipped], out: Path) -> tuple[Path, Path]:
    """`results.json` (with ratio and met) and `results.md` under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [
        {**asdict(r), "ratio": r.ratio, "met": r.met} if isinstance(r, Measurement) else asdict(r)
        for r in results
    ]
    json_path, md_path = out / "results.json", out / "results.md"
    json_path.write_text(json.dumps(rows, indent=2) + "\n")
    md_path.write_text(markdown(results))
    return json_path, md_path
