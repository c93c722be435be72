"""`python -m docket.benchmarks.perf [--only NAME ...] [--quick] [--out DIR]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from docket.benchmarks.perf.cases import CASES, PREPARE
from docket.benchmarks.perf.harness import Clock, Failed, Result, table, timed_case, write


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks and write their results.

    Args:
        argv: The command line (default: `sys.argv[1:]`).

    Returns:
        0 when every case is `ok` or `skipped`; 1 when one is `failed` (it raised, or a
        correctness check inside it did not hold) or `missed` (ratio above its target); 2 on a
        usage error.
    """
    parser = argparse.ArgumentParser(prog="python -m docket.benchmarks.perf")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"of: {', '.join(CASES)}")
    parser.add_argument("--quick", action="store_true", help="few repeats, small inputs")
    parser.add_argument("--out", type=Path, default=Path("build/bench"), help="results folder")
    args = parser.parse_args(argv)
    console = Console()
    if not console.is_terminal:  # CI logs: no wrapping of the table
        console = Console(width=160)
    unknown = sorted(set(args.only or ()) - set(CASES))
    if unknown:
        console.print(f"unknown benchmark(s) {', '.join(unknown)}; accepted: {', '.join(CASES)}")
        return 2
    results: list[Result] = []
    clocks: list[Clock] = []
    for name in args.only or list(CASES):
        console.print(f"[bold]{name}[/bold] ...")
        result, clock = timed_case(name, CASES[name], args.quick, PREPARE.get(name))
        clocks.append(clock)
        if isinstance(result, Failed) and result.trace:
            console.print(escape(result.trace.rstrip()), highlight=False)
        results.append(result)
    json_path, md_path = write(results, args.out, clocks)
    console.print(table(results, clocks))
    console.print(f"results: {json_path} {md_path}")
    for status in ("failed", "missed"):
        names = [r.name for r in results if r.status == status]
        if names:
            console.print(f"[red]{status}: {', '.join(names)}")
    return 1 if any(r.status in ("failed", "missed") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
